"""Calibration: a replay of a recorded session billed the way that session was billed.

An uncalibrated replay counts JSON-escaped characters / 4, bills the private `name` of
tool results, charges our own 1k-token system prompt instead of the recorded agent's
(19-26k tokens per Claude Code call), and keeps the cache warm across hours of pause. On
recorded sessions that came out 34-45% below the recorded input. Here instead:

- the text the API receives is counted (`to_api`: no private fields, no JSON escaping);
- tokens per character and the fixed prefix (system prompt + tools) are measured from
  the log's own usage: each recorded call read `prefix + chars / chars_per_token`, so a
  least-squares line through (context chars, recorded input) gives both;
- the prompt cache's clock is the recorded time of the reply being replayed, so a pause
  in the recording expires the cache as it did then.

`team.sessions.replay_model.CalibratedReplay` is the model a calibrated replay runs on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from team.core.conversation import (
    Block,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from team.llm.base import (
    CHARS_PER_TOKEN,
    Usage,
)
from team.llm.prices import billed_input, context_window
from team.sessions.model import AgentLog, Session

DEFAULT_CHARS_PER_TOKEN = float(CHARS_PER_TOKEN)


def api_chars(block: Block) -> int:
    """Characters of a block as the API receives it (no private fields, no escaping)."""
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ToolUseBlock):
        return len(block.name) + len(json.dumps(block.input, ensure_ascii=False))
    if isinstance(block, ToolResultBlock):
        return len(block.content)
    return 0


def message_chars(m: Message) -> int:
    return sum(api_chars(b) for b in m.content)


@dataclass(frozen=True)
class AgentCalibration:
    """How one recorded agent's calls were billed.

    Attributes:
        chars_per_token: characters of conversation per input token.
        prefix_tokens: the fixed prefix every call read (system prompt and tools).
        measured: True when both came from the log's usage, False for defaults.
        times: the recorded time of each reply, in order (None where unknown).
        window: the recorded model's context window, or the most a recorded call read
            if that is more (a 1M-token beta, a model the table does not know).
    """

    chars_per_token: float
    prefix_tokens: int
    measured: bool
    times: tuple[float | None, ...] = ()
    cache_ttl: str = "5m"
    window: int = 0  # the most input a call may read (0: no limit)


def context_points(agent: AgentLog) -> list[tuple[int, int]]:
    """(characters of context the call read, its recorded input tokens), per call with
    usage, the context following the recorded compactions (each starts it anew from its
    summary) and micro-compactions (the results they cleared are no longer counted)."""
    points = []
    chars = 0
    marks = {c.before: c for c in agent.compactions}
    clears: dict[int, set[str]] = {}
    for c in agent.micro_clears:
        clears.setdefault(c.before, set()).update(c.tool_ids)
    results: dict[str, int] = {}  # tool_use id -> characters, in the current context
    for i, t in enumerate(agent.turns):
        if i in marks:
            chars = marks[i].summary_chars  # the recorded agent's new context
            results = {}
        for tid in clears.get(i, ()):  # results it sent as a placeholder from here on
            chars -= results.pop(tid, 0)
        if t.role == "assistant" and t.usage is not None and t.usage.input_total > 0:
            points.append((chars, t.usage.input_total))
        chars += message_chars(t.message())
        for b in t.blocks:
            if isinstance(b, ToolResultBlock):
                results[b.tool_use_id] = results.get(b.tool_use_id, 0) + api_chars(b)
    return points


HELD_OUT_MIN = 6
"""Calls with usage an agent needs for a held-out figure: half of them fit the line's
two parameters with a point to spare. Fewer, and the fit uses them all and predicts
nothing (a 4-call trajectory fitted on 2 points was judged on the other 2: a line
through two points has nothing left to be wrong about, and said nothing of the rest)."""


def calibrate(agent: AgentLog) -> AgentCalibration:
    """Measure tokens per character and the fixed prefix from the agent's usage, on the
    first half of its calls (all of them when it has fewer than `HELD_OUT_MIN`), so the
    second half can judge the fit (`held_out`)."""
    points = context_points(agent)
    if len(points) >= HELD_OUT_MIN:
        points = points[: len(points) // 2]
    times = tuple(t.time for t in agent.replies())
    window = _window(agent)
    fitted = _fit(points)
    if fitted is None:
        prefix = len(agent.system) + agent.tools_chars
        if len(points) == 1:  # one call: its input is the prefix plus its context
            prefix = max(0, round(points[0][1] - points[0][0] / DEFAULT_CHARS_PER_TOKEN))
            return AgentCalibration(
                DEFAULT_CHARS_PER_TOKEN, prefix, True, times, agent.cache_ttl, window
            )
        return AgentCalibration(
            DEFAULT_CHARS_PER_TOKEN,
            int(prefix / DEFAULT_CHARS_PER_TOKEN),
            False,
            times,
            agent.cache_ttl,
            window,
        )
    per_char, prefix = fitted
    return AgentCalibration(1.0 / per_char, prefix, True, times, agent.cache_ttl, window)


def _window(agent: AgentLog) -> int:
    """What the recorded agent's calls could read: its model's window, or more if a
    recorded call read more (the log shows the window was larger than the table says)."""
    peak = max((t.usage.input_total for t in agent.replies() if t.usage), default=0)
    return max(context_window(agent.model), peak)


@dataclass(frozen=True)
class HeldOut:
    """How well the calibration predicts the calls it was not fitted on.

    Attributes:
        calls: the held-out calls (the second half of each agent's calls with usage).
        recorded: their recorded input tokens (input + cache read + cache write).
        predicted: what the calibration says they read.
        total_error: |predicted - recorded| / recorded, over them all.
        p90: the 90th percentile of each call's |predicted - recorded| / recorded.
    """

    calls: int
    recorded: int
    predicted: int
    total_error: float
    p90: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "recorded": self.recorded,
            "predicted": self.predicted,
            "total_error": round(self.total_error, 4),
            "p90": round(self.p90, 4),
        }


def held_out(agents: list[AgentLog], cal: dict[str, AgentCalibration]) -> HeldOut | None:
    """The calibration of each agent (fitted on its first half) on its second half."""
    errors: list[float] = []
    recorded = predicted = 0
    for a in agents:
        points = context_points(a)
        c = cal.get(a.name)
        if c is None or not c.measured or len(points) < HELD_OUT_MIN:
            continue
        for chars, tokens in points[len(points) // 2 :]:
            guess = round(c.prefix_tokens + chars / c.chars_per_token)
            recorded += tokens
            predicted += guess
            errors.append(abs(guess - tokens) / tokens)
    if not errors:
        return None
    errors.sort()
    p90 = errors[min(len(errors) - 1, int(0.9 * len(errors)))]
    return HeldOut(len(errors), recorded, predicted, abs(predicted - recorded) / recorded, p90)


PRIOR_SPREAD = 2_000_000
"""How much a fit leans on the usual ratio (`DEFAULT_CHARS_PER_TOKEN`), as the spread
(sum of squared distances from the mean, in characters squared) of points that would say
as much: two calls 1,000 characters either side of their mean. A long session's spread
is ten thousand times that and decides alone; two calls 241 characters apart (an
OpenHands trajectory's first half) no longer fit a slope that put the next call at twice
its recorded input."""


def _fit(points: list[tuple[int, int]]) -> tuple[float, int] | None:
    """Least squares `tokens = prefix + k * chars`, `k` drawn towards the usual ratio as
    much as the points are close together, and kept to plausible values."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx <= 0:
        return None
    sxy = sum((x - mx) * (y - my) for x, y in points)
    k = (sxy + PRIOR_SPREAD / DEFAULT_CHARS_PER_TOKEN) / (sxx + PRIOR_SPREAD)
    k = min(1 / 1.5, max(1 / 8, k))  # 1.5 to 8 characters a token: beyond is noise
    prefix = max(0, round(my - k * mx))
    return k, prefix


@dataclass
class Recorded:
    """The `recorded` row: what the log says its calls cost."""

    calls: int
    input_tokens_total: int  # input + cache read + cache write, summed over calls
    billed_input: float
    output_tokens: int
    peak_context: int
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "input_tokens_total": self.input_tokens_total,
            "billed_input": self.billed_input,
            "output_tokens": self.output_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "peak_context": self.peak_context,
        }


def recorded(session: Session) -> Recorded | None:
    """The row from the log's own usage; None when the log has none."""
    calls = [
        (t.usage, a.cache_ttl)
        for a in session.agents
        for t in a.turns
        if t.usage and t.usage.input_total
    ]
    if not calls:
        total = session.totals
        if total is None:
            return None
        return Recorded(
            0,
            total.input_total,
            billed_input(total),
            total.output_tokens,
            0,
            total.cache_write_tokens,
            total.cache_read_tokens,
        )
    out = Usage()
    for u, _ in calls:
        out = out + u
    return Recorded(
        len(calls),
        out.input_total,
        sum(billed_input(u, ttl=ttl) for u, ttl in calls),  # type: ignore[arg-type]
        out.output_tokens,
        max(u.input_total + u.output_tokens for u, _ in calls),
        out.cache_write_tokens,
        out.cache_read_tokens,
    )
