"""A fake-API responder that thinks like `SimModel`, for end-to-end runs through the SDK.

The server hands it raw request JSON; it reads it back into a `ModelRequest` the way the
simulator expects and answers with the simulator's next step. So an end-to-end run through
the real `anthropic` SDK exercises the same tool use, messaging and compaction as a sim run.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from team.conversation import Message
from team.llm.base import ModelRequest, ToolSpec
from team.llm.sim import SimModel

_SIM = SimModel()
_LOCK = threading.Lock()
DELAY = {"s": 0.0}  # seconds per answer, so a test can kill a run in the middle


def _system_text(system: Any) -> str:
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system)
    return system or ""


def respond(body: dict[str, Any]) -> dict[str, Any]:
    system = _system_text(body.get("system"))
    m = re.search(r"You are '([a-z][a-z0-9_-]*)'", system)
    tools = [
        ToolSpec(t["name"], t.get("description", ""), t["input_schema"])
        for t in body.get("tools", [])
    ]
    request = ModelRequest(
        system=system,
        messages=[Message.from_dict(msg) for msg in body["messages"]],
        tools=tools,
        max_tokens=body["max_tokens"],
        tool_choice="none"
        if not tools or body.get("tool_choice", {}).get("type") == "none"
        else "auto",
        # a summary: no tools (chunked), or the agent's tools with tool_choice none (cached)
        purpose="summary"
        if not tools or body.get("tool_choice", {}).get("type") == "none"
        else "agent",
        agent=m.group(1) if m else "",
    )
    if DELAY["s"]:
        time.sleep(DELAY["s"])
    response = _SIM.complete(request)
    return {
        "content": [b.to_dict() for b in response.content],
        "stop_reason": response.stop_reason,
    }
