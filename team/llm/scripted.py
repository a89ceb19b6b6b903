"""A model that answers from a script: for tests and for reproducing a run exactly."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from team.core.conversation import Block, TextBlock, ToolUseBlock
from team.llm.base import ModelError, ModelRequest, ModelResponse, Usage

Reply = ModelResponse | Exception | Callable[[ModelRequest], ModelResponse]


def reply(*blocks: Block | str, usage: Usage | None = None) -> ModelResponse:
    """A response from blocks (strings become text); stop_reason follows the content."""
    content = tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks)
    stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"
    return ModelResponse(content, stop, usage or Usage(input_tokens=100, output_tokens=20))


class ScriptedModel:
    """Answers each call with the next scripted reply and records every request.

    A reply may be a `ModelResponse`, an exception to raise (a failing call), or a
    function of the request. Summary requests (purpose "summary") are answered by
    `summary` when given, so a test can script agent turns and summaries separately.
    """

    name = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        summary: Reply | None = None,
        default: Reply | None = None,
    ) -> None:
        self.replies = list(replies)
        self.summary = summary
        self.default = default
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self.requests.append(request)
            if request.purpose == "summary" and self.summary is not None:
                r = self.summary
            elif self.replies:
                r = self.replies.pop(0)
            elif self.default is not None:
                r = self.default
            else:
                raise ModelError("scripted model: no reply left")
        if isinstance(r, Exception):
            raise r
        if callable(r):
            return r(request)
        return r
