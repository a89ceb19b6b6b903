"""The model a calibrated replay runs on (`CalibratedReplay`): the recorded replies, in
order; summaries from the log (`recorded`), a real model or the simulator; and usage from
the calibration (`team.sessions.calibration`) through a prompt cache whose clock is the
recorded time of the reply being replayed.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from team.core.conversation import (
    Block,
    InvalidConversation,
    Message,
    TextBlock,
    ToolUseBlock,
    validate,
)
from team.core.prefix import common_prefix
from team.llm.base import (
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    PromptTooLong,
    Usage,
    cache_block,
)
from team.llm.prices import TTL_SECONDS
from team.llm.sim_cache import Piece, PromptCache
from team.llm.sim_summary import summarise
from team.sessions.calibration import DEFAULT_CHARS_PER_TOKEN, AgentCalibration, api_chars


class CalibratedReplay:
    """The model of a calibrated replay. Thread-safe.

    Agent turns are answered with the recorded replies, in order; summary requests by
    `summary_model` (a real model, e.g. `AnthropicModel`) or else the simulator's
    extractive summary. Usage comes from each agent's calibration and a prompt cache
    whose clock is the recorded time of the reply being replayed.
    """

    name = "replay"

    def __init__(
        self,
        turns: dict[str, list[Message]],
        calibration: dict[str, AgentCalibration],
        *,
        outputs: dict[str, list[int]] | None = None,
        summary_model: Model | None = None,
        summaries: dict[str, list[str]] | None = None,
    ) -> None:
        self._turns = {a: deque(ms) for a, ms in turns.items()}
        self._summaries = {a: deque(s) for a, s in (summaries or {}).items()}
        self._outputs = {a: deque(o) for a, o in (outputs or {}).items()}
        self._times = {a: deque(c.times) for a, c in calibration.items()}
        self._cal = calibration
        self._summary = summary_model
        self._now: dict[str, float] = {}
        self._caches: dict[str, PromptCache] = {}
        self._lock = threading.Lock()
        # id(message) -> (message, identity text, chars): every call re-sends the whole
        # history, and serialising it each time made a long replay quadratic. The
        # message is kept in the entry so its id cannot be reused by another object.
        self._seen: dict[int, tuple[Message, float, list[Piece]]] = {}
        # (agent, purpose) -> the last request's messages, ratio, pieces and where each
        # message's pieces start: the next request of the stream re-sends most of them
        self._last: dict[tuple[str, str], _Sent] = {}

    def left(self, agent: str) -> int:
        """Recorded replies not yet given."""
        return len(self._turns.get(agent, ()))

    def clock(self, agent: str) -> Callable[[], float]:
        """The agent's compactor clock: the recorded time of its next reply (the call
        being prepared), so the compactor sees the cache go cold where this model's
        cache does."""

        def now() -> float:
            with self._lock:
                times = self._times.get(agent)
                upcoming = times[0] if times else None
                return upcoming if upcoming is not None else self._now.get(agent, 0.0)

        return now

    def fixed_prefix(self, agent: str) -> int | None:
        """The recorded agent's fixed prefix, which this model bills instead of ours: the
        compactor counts it as what no compaction removes (team.study.replay)."""
        cal = self._cal.get(agent)
        return cal.prefix_tokens if cal is not None else None

    def _cache(self, agent: str) -> PromptCache:
        if agent not in self._caches:
            ttl = self._cal[agent].cache_ttl if agent in self._cal else "5m"
            self._caches[agent] = PromptCache(
                ttl=TTL_SECONDS[ttl], clock=lambda: self._now.get(agent, 0.0)
            )
        return self._caches[agent]

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.purpose == "summary":  # agent requests are validated by the agent loop
            try:
                validate(request.messages)
            except InvalidConversation as e:
                raise ModelError(f"invalid request (the API would answer 400): {e}") from e
        agent = request.agent
        cal = self._cal.get(agent) or AgentCalibration(DEFAULT_CHARS_PER_TOKEN, 0, False)
        output: int | None = None
        prompt = self._prompt(request, cal)  # the request as the cache sees it, once
        recorded_summary = self._recorded_summary(agent) if request.purpose == "summary" else None
        if recorded_summary is not None:
            content = (TextBlock(recorded_summary),)
        elif request.purpose == "summary":
            if self._summary is not None:
                reply = self._summary.complete(request)
                content: tuple[Block, ...] = reply.content
                output = reply.usage.output_tokens
            else:
                text = summarise(
                    request.messages, focus=request.focus or "", max_tokens=request.max_tokens
                )
                content = (TextBlock(text),)
        else:
            self._fits(request, cal, prompt)  # before the reply is taken: answered after
            with self._lock:
                queue = self._turns.get(agent)
                if not queue:
                    raise ModelError(f"replay: no recorded reply left for {agent!r}")
                content = queue.popleft().content
                times = self._times.get(agent)
                when = times.popleft() if times else None
                if when is not None:
                    self._now[agent] = when
                outs = self._outputs.get(agent)
                output = outs.popleft() if outs else None
        usage = self._usage(request, content, cal, output, prompt)
        stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"
        return ModelResponse(content, stop, usage)

    def _recorded_summary(self, agent: str) -> str | None:
        """The log's own summary of the compaction being replayed (`recorded`)."""
        with self._lock:
            queue = self._summaries.get(agent)
            return queue.popleft() if queue else None

    def _pieces(self, m: Message, cpt: float) -> list[Piece]:
        """Each block as one cache piece: its text for the prefix digest (never billed)
        and its tokens at `cpt` characters a token.

        One piece per block, as the API's cache counts blocks (its lookback, and a
        breakpoint inside a message)."""
        # no lock: one dict read or write is atomic, and a race only computes twice
        hit = self._seen.get(id(m))
        if hit is not None and hit[0] is m and hit[1] == cpt:
            return hit[2]
        pieces = [
            Piece(
                json.dumps(
                    {"role": m.role, **b.to_dict()} if k == 0 else b.to_dict(), sort_keys=True
                ),
                round(api_chars(b) / cpt),
            )
            for k, b in enumerate(m.content)
        ]
        self._seen[id(m)] = (m, cpt, pieces)
        return pieces

    def _body(self, request: ModelRequest, cpt: float) -> tuple[list[Piece], list[int]]:
        """The messages' pieces, and the index in the prompt (after the one prefix piece)
        where each message's begin. What the stream's last request began with is taken
        from it: an agent's next request re-sends its history, plus a turn."""
        messages = request.messages
        key = (request.agent, request.purpose)
        last = self._last.get(key)
        same = 0
        if last is not None and last.cpt == cpt:
            same = common_prefix(messages, last.messages)
        if same:
            cut = last.starts[same] - 1 if same < len(last.messages) else len(last.pieces)
            pieces, starts = last.pieces[:cut], last.starts[:same]
        else:
            pieces, starts = [], []
        for m in messages[same:]:
            starts.append(len(pieces) + 1)
            pieces += self._pieces(m, cpt)
        self._last[key] = _Sent(list(messages), cpt, pieces, starts)
        return pieces, starts

    def _prompt(
        self, request: ModelRequest, cal: AgentCalibration
    ) -> tuple[list[Piece], list[int]]:
        """The request as cache pieces, and where each message's begin (see `_body`)."""
        cpt = cal.chars_per_token
        # The recorded agent's fixed prefix stands in for our system prompt and tools; a
        # summary request has its own (short) system prompt and no tools, unless it is
        # one on the agent's cached prefix (its tools, its system prompt, its view).
        prefix = (
            Piece("prefix", cal.prefix_tokens)
            if request.purpose == "agent" or request.tools
            else Piece(request.system, round(len(request.system) / cpt))
        )
        body, starts = self._body(request, cpt)
        return [prefix, *body], starts

    def _fits(
        self, request: ModelRequest, cal: AgentCalibration, prompt: tuple[list[Piece], list[int]]
    ) -> None:
        """Refuse a request larger than the recorded model's window, as the API does, so
        a strategy that never compacts meets the limit the recorded agent worked under
        (the agent loop then compacts and sends it again)."""
        if not cal.window:
            return
        tokens = self._cache(request.agent).tokens(prompt[0])
        if tokens > cal.window:
            raise PromptTooLong(f"prompt is too long: {tokens} tokens > {cal.window} maximum")

    def _usage(
        self,
        request: ModelRequest,
        content: tuple[Block, ...],
        cal: AgentCalibration,
        output: int | None,
        prompt: tuple[list[Piece], list[int]],
    ) -> Usage:
        cpt = cal.chars_per_token
        pieces, starts = prompt
        with self._lock:
            try:
                marks = [0] if request.cache_system else []
                for point in request.cache_breakpoints:
                    i, j = cache_block(point, request.messages)
                    marks.append(starts[i] + j)
                charge = self._cache(request.agent).charge(pieces, marks)
            except ValueError as e:
                raise ModelError(f"invalid request (the API would answer 400): {e}") from e
        if output is None:
            output = round(sum(api_chars(b) for b in content) / cpt)
        return Usage(
            input_tokens=charge.input_tokens,
            output_tokens=output,
            cache_read_tokens=charge.cache_read_tokens,
            cache_write_tokens=charge.cache_write_tokens,
        )


@dataclass(slots=True)
class _Sent:
    messages: list[Message]
    cpt: float
    pieces: list[Piece]
    starts: list[int]
