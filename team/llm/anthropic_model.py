"""`AnthropicModel`: the `Model` protocol on the official `anthropic` SDK.

The SDK reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL. This class adds request building
(prompt-cache breakpoints, tool choice: `anthropic_request`), response mapping, and
one-line errors classified for the agent loop (see `team.llm.base`): permanent (401,
403, 404, other 4xx), transient (408, 409, 429, 5xx, 529, timeouts, connections) and
prompt-too-long (400 "prompt is too
long", 413). By default the SDK makes no retries of its own: its backoff sleeps inside
the call, where a stop request cannot interrupt it (a retry-after of minutes is honoured
whole), so the agent loop retries instead and shows `waiting: <reason>, retry in Ns`.
"""

from __future__ import annotations

import re
from typing import Any

import anthropic

from team.core.conversation import Block, TextBlock, ToolUseBlock
from team.core.errors import UserError
from team.llm.anthropic_request import request_params
from team.llm.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    PermanentModelError,
    PromptTooLong,
    TransientModelError,
    Usage,
)
from team.llm.credentials import NO_KEY

TRANSIENT_STATUSES = {408, 409, 429}  # plus every 5xx (529 overloaded among them)
TOO_LARGE_STATUS = 413  # the request body is over the API's byte limit
# How the API words a request that does not fit the context window (a 400).
TOO_LONG = re.compile(r"prompt is too long|exceeds? (?:the )?context (?:limit|window)", re.I)
REASONS = {
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
    408: "request timeout",
    409: "conflict",
    429: "rate limited",
    529: "overloaded",
}


class AnthropicModel:
    """Answers `ModelRequest`s through the Messages API. Thread-safe (one shared client).

    Args:
        model_id: the Anthropic model id, e.g. "claude-sonnet-4-5".
        max_retries: retries the SDK makes (with backoff) before a call fails; 0 by
            default, because the agent loop retries transient errors interruptibly.
        timeout: seconds allowed for one attempt.
        client: a ready client; by default one is built from the environment.

    Raises:
        UserError: no credentials are configured, so that `team up` fails at once.
    """

    def __init__(
        self,
        model_id: str,
        *,
        max_retries: int = 0,
        timeout: float = 120.0,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.name = model_id
        self.max_retries = max_retries
        self.timeout = timeout
        if client is None:
            try:
                client = anthropic.Anthropic(max_retries=max_retries, timeout=timeout)
            except Exception as e:  # with no key the SDK tries profiles, which can fail
                raise UserError(f"{NO_KEY} (and no usable profile: {_one_line(e)})") from e
        if not (client.api_key or client.auth_token or client.credentials):
            raise UserError(NO_KEY)
        self._client = client
        self._secret = client.api_key or client.auth_token or ""

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Make one call.

        Raises:
            PermanentModelError: retrying cannot help (credentials, permission, unknown
                model, a request the API refuses).
            PromptTooLong: the request does not fit the model's context window.
            TransientModelError: worth retrying later (rate limit, overload, 5xx, network).
        """
        try:
            reply = self._client.messages.create(**self.params(request))
        except anthropic.APIStatusError as e:
            raise self._status_error(e) from e
        except anthropic.APITimeoutError as e:
            line = f"Anthropic API timed out (timeout {self.timeout:g} s{self._retries})"
            raise TransientModelError(self._clean(line), reason="timed out") from e
        except anthropic.APIConnectionError as e:
            cause = e.__cause__ or e
            url = self._client.base_url
            line = f"cannot reach the Anthropic API at {url}{self._retries}: {cause}"
            raise TransientModelError(self._clean(line), reason="cannot connect") from e
        except anthropic.APIError as e:  # e.g. a response the SDK could not parse
            raise TransientModelError(
                self._clean(f"Anthropic API error: {e}"), reason="bad response"
            ) from e
        return response_from(reply)

    @property
    def _retries(self) -> str:
        return f", after {self.max_retries} retries" if self.max_retries else ""

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for this request."""
        return request_params(self.name, request)

    def _status_error(self, e: anthropic.APIStatusError) -> ModelError:
        """The classified, one-line error for an HTTP error answer."""
        kind, message = "", ""
        body = e.body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            kind = str(body["error"].get("type") or "")
            message = str(body["error"].get("message") or "")
        status = e.status_code
        line = f"Anthropic API error {status}"
        if kind:
            line += f" {kind}"
        line += f": {message or e.message}"
        transient = status in TRANSIENT_STATUSES or status >= 500
        if transient and self.max_retries:
            line += f" (after {self.max_retries} retries)"
        if e.request_id:
            line += f" [request {e.request_id}]"
        line = self._clean(line)
        if status == TOO_LARGE_STATUS or (status == 400 and TOO_LONG.search(message)):
            return PromptTooLong(line, reason="prompt too long")
        reason = f"{REASONS.get(status) or kind.replace('_', ' ') or 'error'} ({status})"
        if transient:
            return TransientModelError(line, reason=reason, retry_after=_retry_after(e))
        return PermanentModelError(line, reason=reason)

    def _clean(self, text: str) -> str:
        """One line, bounded, and never the credential (an echoing proxy could hold it)."""
        line = _one_line(text)
        if self._secret:
            line = line.replace(self._secret, "***")
        return line[:500]


def response_from(reply: Any) -> ModelResponse:
    """Map an SDK `Message` to a `ModelResponse`.

    Thinking and server-tool blocks are dropped, and so are whitespace-only text blocks:
    stored in history they would make every later request a 400 ("text content blocks
    must contain non-whitespace text"). So `content` can be empty (e.g. max_tokens hit
    at once); callers must not append an empty assistant message.
    """
    blocks: list[Block] = []
    for b in reply.content:
        if b.type == "text" and b.text.strip():
            blocks.append(TextBlock(b.text))
        elif b.type == "tool_use":
            blocks.append(ToolUseBlock(b.id, b.name, dict(b.input or {})))
    u = reply.usage
    usage = Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_read_tokens=u.cache_read_input_tokens or 0,
        cache_write_tokens=u.cache_creation_input_tokens or 0,
    )
    return ModelResponse(tuple(blocks), reply.stop_reason or "", usage)


def _retry_after(e: anthropic.APIStatusError) -> float | None:
    """The server's retry hint in seconds (`retry-after-ms` or `retry-after`), if any."""
    headers = e.response.headers if e.response is not None else {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers.get(name)) * scale)
        except (TypeError, ValueError):
            continue
    return None


def _one_line(value: object) -> str:
    return " ".join(str(value).split())
