"""The Messages API request body for a `ModelRequest`: content, tools, cache breakpoints.

Kept apart from `anthropic_model`, which owns the client and its error mapping, so that
where the cache breakpoints go can change without touching how failures are reported.
"""

from __future__ import annotations

from typing import Any

from team.core.conversation import to_api
from team.llm.base import ModelRequest, cache_block

MAX_BREAKPOINTS = 4  # the API rejects a request with more cache_control blocks than this


def cache_control(request: ModelRequest) -> dict[str, str]:
    """The marker for one breakpoint; the 5-minute lifetime is the API's default."""
    marker = {"type": "ephemeral"}
    if request.cache_ttl == "1h":
        marker["ttl"] = "1h"
    return marker


def request_params(model: str, request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for this request."""
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": to_api(request.messages),
    }
    system_breakpoint = False
    if request.system.strip():  # the API rejects an empty system text block
        block: dict[str, Any] = {"type": "text", "text": request.system}
        if request.cache_system:
            # tools come before the system prompt, so this one caches both
            block["cache_control"] = cache_control(request)
            system_breakpoint = True
        params["system"] = [block]
    if request.tools:
        params["tools"] = [t.to_api() for t in request.tools]
        if request.tool_choice == "none":
            params["tool_choice"] = {"type": "none"}
    for i, j in message_breakpoints(request, MAX_BREAKPOINTS - system_breakpoint):
        params["messages"][i]["content"][j]["cache_control"] = cache_control(request)
    return params


def message_breakpoints(request: ModelRequest, budget: int) -> list[tuple[int, int]]:
    """(message, block) pairs to mark, newest kept: the oldest are dropped to fit `budget`.

    Raises:
        ValueError: a breakpoint outside `request.messages` (a caller's bookkeeping bug).
    """
    points = sorted(
        {
            cache_block(p, request.messages)
            for p in request.cache_breakpoints
            # an empty message is the API's 400 to report, not an error here
            if not (isinstance(p, int) and 0 <= p < len(request.messages))
            or request.messages[p].content
        }
    )
    return points[-budget:] if budget > 0 else []
