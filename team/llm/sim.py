"""`SimModel`: an offline, deterministic agent that really acts (docs/design.md, "Models").

It answers agent turns with the scripted-but-stateless policy of `sim_policy` and summary
requests with the extractive summary of `sim_summary`, and reports usage the way the API
would, with input split by a simulated prompt cache (`sim_cache`) per agent. Everything it
says is a function of the request, so runs repeat exactly; only the cache remembers.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable

from team.core.conversation import Block, InvalidConversation, TextBlock, ToolUseBlock, validate
from team.llm.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    PromptTooLong,
    Usage,
    cache_block,
    chars_to_tokens,
)
from team.llm.prices import SIM_MODEL, TTL_SECONDS, context_window
from team.llm.sim_cache import MIN_TOKENS, Piece, PromptCache
from team.llm.sim_policy import decide
from team.llm.sim_summary import summarise


def tokens(text: str) -> int:
    """The simulator's token estimate: about four characters a token."""
    return chars_to_tokens(len(text))


class SimModel:
    """The offline simulator behind `model = "sim"`. One instance serves every agent.

    Args:
        latency: seconds each call takes, to make runs look like real ones.
        seed: varies the agent's deterministic choices (which file to read, when to
            compact) between otherwise identical runs.
        clock: the prompt cache's clock (monotonic seconds); injectable for tests.
        min_cache_tokens: the shortest prefix the simulated cache stores.
        window: the context window, in tokens: a request whose input does not fit is
            refused as the API refuses it (`PromptTooLong`); default the window of the
            model the simulator plays.
    """

    name = "sim"

    def __init__(
        self,
        *,
        latency: float = 0.0,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        min_cache_tokens: int = MIN_TOKENS,
        window: int | None = None,
    ) -> None:
        self.latency = latency
        self.window = window or context_window(SIM_MODEL)
        self.seed = seed
        self._clock = clock
        self._min_cache_tokens = min_cache_tokens
        self._caches: dict[str, PromptCache] = {}
        self._lock = threading.Lock()

    def cache(self, agent: str) -> PromptCache:
        """The simulated prompt cache of one agent (created on first use)."""
        with self._lock:
            if agent not in self._caches:
                self._caches[agent] = PromptCache(
                    min_tokens=self._min_cache_tokens, clock=self._clock
                )
            return self._caches[agent]

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request: a summary, or the agent's next step.

        Raises:
            PromptTooLong: the request does not fit the context window.
            ModelError: the request is one the Messages API would reject (invalid
                conversation, more than 4 cache breakpoints).
        """
        try:
            validate(request.messages)
        except InvalidConversation as e:
            raise ModelError(f"invalid request (the API would answer 400): {e}") from e
        pieces = self._pieces(request)
        if request.purpose == "summary":
            text = summarise(
                request.messages,
                focus=request.focus or "",
                max_tokens=request.max_tokens,
                facts=request.facts,
                segment=request.segment,
            )
            content: tuple[Block, ...] = (TextBlock(text),)
        else:
            content = self._turn(request)
        stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"
        usage = self._usage(request, content, pieces)
        if self.latency > 0:
            time.sleep(self.latency)  # bounded by construction: the latency asked for
        return ModelResponse(content, stop, usage)

    def _turn(self, request: ModelRequest) -> tuple[Block, ...]:
        reply = decide(request, seed=self.seed)
        base = _call_id_base(request, self.seed)
        uses = [
            ToolUseBlock(_call_id(base, i), name, args)
            for i, (name, args) in enumerate(reply.calls)
        ]
        return (TextBlock(reply.text), *uses)

    def _pieces(self, request: ModelRequest) -> tuple[list[Piece], list[int]]:
        """The request as the cache sees it, refused as the API would refuse it."""
        try:
            pieces, marks = cache_pieces(request)
        except ValueError as e:
            raise ModelError(f"invalid request (the API would answer 400): {e}") from e
        size = sum(p.tokens for p in pieces)
        if size > self.window:
            raise PromptTooLong(  # the API's words; nothing is charged or cached
                f"prompt is too long: {size} tokens > {self.window} maximum",
                reason="prompt too long",
            )
        return pieces, marks

    def _usage(
        self,
        request: ModelRequest,
        content: tuple[Block, ...],
        cached: tuple[list[Piece], list[int]],
    ) -> Usage:
        pieces, marks = cached
        try:
            charge = self.cache(request.agent).charge(
                pieces, marks, ttl=TTL_SECONDS[request.cache_ttl]
            )
        except ValueError as e:
            raise ModelError(f"invalid request (the API would answer 400): {e}") from e
        out = sum(
            len(b.text) if isinstance(b, TextBlock) else len(b.name) + len(json.dumps(b.input))
            for b in content
            if isinstance(b, TextBlock | ToolUseBlock)
        )
        return Usage(
            input_tokens=charge.input_tokens,
            output_tokens=chars_to_tokens(out),
            cache_read_tokens=charge.cache_read_tokens,
            cache_write_tokens=charge.cache_write_tokens,
        )


def _piece(text: str) -> Piece:
    return Piece(text, tokens(text))


def cache_pieces(request: ModelRequest) -> tuple[list[Piece], list[int]]:
    """The request as the API's cache sees it: blocks in order, and the marked ones.

    One piece per tool, the system prompt, then one per content block (the first block
    of a message carries its role), so the 20-block lookback counts blocks as the API
    does.

    Raises:
        ValueError: a breakpoint outside the messages.
    """
    pieces = [_piece(json.dumps(t.to_api(), sort_keys=True)) for t in request.tools]
    pieces.append(_piece(request.system))
    marks = [len(pieces) - 1] if request.cache_system else []
    starts = []
    for m in request.messages:
        starts.append(len(pieces))
        for k, b in enumerate(m.content):
            text = json.dumps(b.to_dict(), sort_keys=True)
            pieces.append(_piece(f"{m.role}\n{text}" if k == 0 else text))
    for point in request.cache_breakpoints:
        i, j = cache_block(point, request.messages)
        marks.append(starts[i] + j)
    return pieces, marks


def _call_id_base(request: ModelRequest, seed: int) -> str:
    """Unique within a conversation: the message count grows with every reply."""
    last = json.dumps(request.messages[-1].to_dict(), sort_keys=True) if request.messages else ""
    key = f"{seed}\0{request.agent}\0{len(request.messages)}\0{last}"
    return hashlib.sha256(key.encode()).hexdigest()


def _call_id(base: str, index: int) -> str:
    return "toolu_" + hashlib.sha256(f"{base}:{index}".encode()).hexdigest()[:24]
