"""One agent's compactor: micro view before every call, auto past the threshold, manual on request.

Every compaction archives the full segment, asks the model for a summary, and starts a
new segment whose first message is the identity block, then the summary and the path of
the transcript. Nothing is changed until all of that has succeeded: a failed summary
leaves the history exactly as it was.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from team.compaction.auto import MIN_FREED, Bar, expected_base, min_growth, threshold_for
from team.compaction.cache_plan import BreakpointPlanner
from team.compaction.fresh import new_context
from team.compaction.history import History
from team.compaction.micro import CallCost, MicroCompactor
from team.compaction.records import Compaction
from team.compaction.retention import retention
from team.compaction.summary import Summariser, SummaryFailed
from team.compaction.tokens import TokenMeter, estimate
from team.compaction.transcripts import TranscriptStore
from team.core.conversation import Message, ToolResultBlock, render_block
from team.core.events import AgentEvent, CompactionEvent, EventSink, ModelCallEvent
from team.core.prefix import RunningTotals
from team.llm.base import AgentFacts, CachePoint, Model, ModelRequest, Prefix, Usage
from team.llm.prices import READ, billed_input, write_multiplier
from team.workspace.config import CompactionConfig

log = logging.getLogger(__name__)

MAX_FAILURES = 3
SUMMARY_ASK = 1_500
"""Tokens of a summary request past the cached view (the instruction, the facts), as
the calibrated replays bill it."""


@dataclass
class AutoGate:
    """Failed auto compactions in a row, and whether auto is paused, and why: after
    `MAX_FAILURES` failed summaries, or after a compaction that freed too little.

    Outlives the agent's thread: a restarted thread keeps a failing summariser paused
    (a restarted process tries again).
    """

    failures: int = 0
    paused: bool = False
    reason: str = ""


@dataclass(frozen=True)
class SummaryLimits:
    """How large a summary may be, and how much one summary call may read."""

    max_tokens: int = 4096
    input_budget_tokens: int = 120_000


@dataclass(frozen=True)
class Prepared:
    """A request's messages as micro leaves them, where its cache breakpoints go, and
    the tool results (their tool_use ids) this view newly replaced."""

    view: list[Message]
    breakpoints: tuple[CachePoint, ...]
    cleared: tuple[str, ...] = ()


class Compactor:
    """The three layers for one agent (docs/design.md, "Compaction").

    Args:
        facts: who is compacted (its name, teammates); summary requests carry them.
        prefix: the agent's system prompt and tools: counted into the estimate, and
            the cached prefix a summary request reuses. None: summaries are asked from
            the stored text alone (tests, tools that compact a bare history).
        prefix_tokens: the fixed prefix's size in tokens when it is known better than
            its characters say (a replay, where the recorded agent's prefix is billed).
        gate: the auto layer's failure count and pause, when it must outlive this object.
        clock: when the prompt cache expires (replay passes the recorded times).
    """

    def __init__(
        self,
        config: CompactionConfig,
        model: Model,
        transcripts: TranscriptStore,
        sink: EventSink,
        *,
        facts: AgentFacts,
        prefix: Prefix | None = None,
        prefix_tokens: int | None = None,
        gate: AutoGate | None = None,
        clock: Callable[[], float] = time.monotonic,
        summary: SummaryLimits = SummaryLimits(),
    ) -> None:
        self.agent = facts.name
        self.config = config
        self.transcripts = transcripts
        self.sink = sink
        self.teammates = [n for n, _ in facts.teammates]
        self.prefix = prefix
        self.facts = facts
        self.threshold = threshold_for(config.threshold, model.name)
        self.micro = MicroCompactor(config)
        self.meter = TokenMeter(
            prefix_chars=prefix.chars() if prefix else 0, prefix_tokens=prefix_tokens
        )
        self.planner = BreakpointPlanner(config.cache_ttl, clock)
        self._sent_chars = RunningTotals(Message.chars)  # what each request sent, counted once
        self._segment_calls = 0
        self._growth = 0.0  # smoothed context growth per call in this segment
        self._last_context: int | None = None
        # tokens auto compactions took out of the context since the last manual one:
        # what not compacting would read on every call (see `MicroCompactor.banked`)
        self._auto_removed = 0
        self._summary_cost = 0.0  # billed input of the summary calls of this compaction
        # reads of what a compaction would remove, paid past the bar in this segment, and
        # the call they were last counted for (`should_auto` may be asked more than once)
        self._rent = 0.0
        self._rent_call = -1
        self.summary_tokens = summary.max_tokens
        self.summariser = Summariser(
            model,
            agent=self.agent,
            max_tokens=summary.max_tokens,
            input_budget_tokens=summary.input_budget_tokens,
            cache_ttl=config.cache_ttl,
            on_call=self._record_summary_call,
            facts=facts,
        )
        self.gate = gate or AutoGate()

    @property
    def paused(self) -> bool:
        return self.gate.paused

    # -- layer 1 -------------------------------------------------------------------------

    def view(self, history: History) -> list[Message]:
        """What is sent: the history with old tool results as placeholders."""
        return self.prepare(history).view

    def prepare(self, history: History) -> Prepared:
        """The view to send, its cache breakpoints (see `cache_plan`), and what it newly
        replaced."""
        before = self.micro.cleared
        context = self.estimate(history)
        if self._last_context is not None and context > self._last_context:
            step = context - self._last_context
            self._growth = step if not self._growth else 0.7 * self._growth + 0.3 * step
        self._last_context = context
        call = CallCost(
            context_tokens=context,
            sent_messages=self.planner.sent_messages,
            calls=self._segment_calls,
            growth=self._growth,
            auto_at=self.auto_bar(history) if self.config.auto and not self.paused else None,
            cold=self.planner.cold(),
            tokens=self.meter.tokens,
        )
        self.micro.banked += READ * self._auto_removed
        out = self.micro.view(history.messages, call)
        breakpoints = self.planner.plan(
            out.view, self.micro.next_clear(history.messages), out.oldest_cleared
        )
        if out.newly_cleared:  # only then count tokens: this runs before every call
            after = self.meter.tokens(sum(map(Message.chars, out.view)))
            self._last_context = max(0, context - out.tokens_cleared)
            self.sink.emit(
                CompactionEvent(
                    agent=self.agent,
                    layer="micro",
                    trigger="view",
                    tokens_before=after + out.tokens_cleared,
                    tokens_after=after,
                    messages_before=len(history.messages),
                    messages_after=len(out.view),
                    results_cleared=out.newly_cleared,
                    rewrite_tokens=out.rewrite_tokens,
                    cache_ttl=self.config.cache_ttl,
                )
            )
        return Prepared(out.view, breakpoints, tuple(sorted(self.micro.cleared - before)))

    def observe(self, request: ModelRequest, usage: Usage) -> None:
        """An agent call was answered: calibrate the token ratio, remember what is cached."""
        self.meter.observe(self._sent_chars.total(request.messages), usage.input_total)
        self.planner.sent_request(request.messages)
        self._segment_calls += 1

    def new_segment(self) -> None:
        """Forget the segment's micro decisions and cached-prefix bookkeeping."""
        self.micro.reset()
        self.planner.reset()
        self._segment_calls = 0
        self._growth = 0.0
        self._last_context = None
        self._rent = 0.0
        self._rent_call = -1

    # -- layers 2 and 3 ------------------------------------------------------------------

    def estimate(self, history: History) -> int:
        return estimate(history, self.meter)

    def bar(self, history: History) -> Bar:
        """The auto bar now: the threshold, raised while what a compaction leaves (the
        fixed prefix; after one, the fresh context it left) is within reach of it."""
        if history.segment:
            return Bar(self.threshold, history.floor)
        fixed = self.meter.fixed
        compactable = self.estimate(history) - fixed
        return Bar(self.threshold, expected_base(fixed, compactable, self.summary_tokens))

    def auto_bar(self, history: History) -> int:
        return self.bar(history).at

    def should_auto(self, history: History) -> bool:
        if not (
            self.config.auto
            and not self.gate.paused
            # a segment of one or two messages is already as small as compaction makes it
            and len(history.messages) > 2
        ):
            return False
        context = self.estimate(history)
        due = self.due_at(history)
        if context <= due:
            return False
        return self._pays(history, context, due)

    def _pays(self, history: History, context: int, due: int) -> bool:
        """Past the bar: compact now, or rent the context a few calls more.

        A compaction bills a summary and a fresh context; should the run end right
        after it, that is lost. So, as micro buys its clears, auto compacts at once
        when the savings this agent has made already (`MicroCompactor.banked`) cover
        that loss or the cache has expired, and otherwise once the reads paid past the
        bar for what it would remove have come to the loss (rent or buy), or the
        context is a quarter of the threshold past the bar, whichever is first. Under
        `micro_policy = "eager"` (the reference design) it compacts at the bar.
        """
        if self.config.micro_policy == "eager":
            return True  # the reference design: at the bar
        bar = self.bar(history)
        fixed = self.meter.fixed
        fresh = max(0, bar.base - fixed)
        loss = write_multiplier(self.config.cache_ttl) * fresh + READ * fixed + SUMMARY_ASK
        if self.planner.cold() or self.micro.banked >= loss:
            return True  # cold: the next call writes it all again anyway (`Bar.cold_at`)
        if context >= due + min_growth(self.threshold):
            return True
        if self._rent_call != self._segment_calls:
            self._rent_call = self._segment_calls
            self._rent += READ * max(0, context - bar.base)
        return self._rent >= loss

    def due_at(self, history: History) -> int:
        """The context above which auto compacts before the next call: the bar, or
        `Bar.cold_at` when the cache has expired (the next call writes it all again)."""
        bar = self.bar(history)
        return bar.cold_at if self.planner.cold() else bar.at

    def compact(
        self,
        history: History,
        *,
        identity: str,
        layer: str,
        trigger: str,
        focus: str | None = None,
        facts: AgentFacts | None = None,
    ) -> Compaction | None:
        """Archive and summarise the segment; the record that starts the next one.

        Args:
            identity: the identity block the new context begins with (the summariser
                reads it too).
            facts: the agent's facts now (its open tasks), which the summary request
                carries; without them, the ones the compactor was built with.

        Returns:
            The `Compaction` record for the caller to append and fold, or None when the
            summary or the archive failed (the history is untouched, an event says why).
        """
        start = time.monotonic()
        tokens_before = self.estimate(history)
        self._summary_cost = 0.0
        try:
            summary = self._summary(history, identity, focus, facts)
        except SummaryFailed as e:
            self._failed(history, layer, trigger, tokens_before, time.monotonic() - start, str(e))
            return None
        try:
            path = self.transcripts.write(history.messages, layer)
        except OSError as e:  # e.g. disk full: keep the history, count it as a failure
            err = f"could not write the transcript: {e}"
            self._failed(history, layer, trigger, tokens_before, time.monotonic() - start, err)
            return None
        shown = self.transcripts.shown(path)
        first = new_context(identity, summary, shown, layer, history, facts or self.facts)
        tokens_after = self.estimate(History(messages=[first]))
        rec = Compaction(
            layer=layer,
            first=first,
            transcript=str(shown),
            trigger=trigger,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            messages_before=len(history.messages),
            summary_chars=len(summary),
        )
        self._bank(layer, tokens_before, tokens_after)
        self.new_segment()
        self.gate.failures = 0
        self._succeeded(rec, history, time.monotonic() - start)
        self._judge(layer, trigger, tokens_before, tokens_after)
        return rec

    def _judge(self, layer: str, trigger: str, before: int, after: int) -> None:
        """Pause auto after a threshold compaction that freed too little: it would only
        be bought again a few calls later. A manual one resumes it, as does any that
        frees enough (a prompt too long for the window compacts whatever the gate)."""
        freed = max(0, before - after)
        enough = freed >= MIN_FREED * before
        if layer == "auto" and trigger == "threshold" and not enough and not self.gate.paused:
            self.gate.paused = True
            self.gate.reason = (
                f"a compaction freed only {freed:,} of {before:,} tokens "
                f"({100 * freed / max(1, before):.0f}%); the manual compact tool and a "
                "prompt too long for the window still compact"
            )
            self.sink.emit(AgentEvent(self.agent, "auto_paused", self.gate.reason))
        elif self.gate.paused and (layer == "manual" or enough):
            self.gate.paused = False
            self.gate.reason = ""
            why = "after a manual compaction" if layer == "manual" else "a compaction freed enough"
            self.sink.emit(AgentEvent(self.agent, "auto_resumed", why))

    def _bank(self, layer: str, tokens_before: int, tokens_after: int) -> None:
        """Account a compaction in what this agent has saved over never compacting.

        Not compacting would go on reading what an auto compaction removed (the
        results micro replaced too), and would not have paid for the summary or for
        writing the new context. A manual compaction happens with or without the other
        layers, so from there both start afresh.
        """
        if layer != "auto":
            self._auto_removed = 0
            return
        removed = max(0, tokens_before - tokens_after) + self.micro.cleared_tokens
        self._auto_removed += removed
        self.micro.banked -= (
            self._summary_cost + write_multiplier(self.config.cache_ttl) * tokens_after
        )

    def _summary(
        self,
        history: History,
        identity: str,
        focus: str | None,
        facts: AgentFacts | None = None,
    ) -> str:
        if (prefix := self.prefix) is not None:
            view = self.micro.current(history.messages)
            cleared = self.micro.cleared
            replaced = [
                b
                for m in history.messages
                for b in m.content
                if isinstance(b, ToolResultBlock) and b.tool_use_id in cleared
            ]
            summary = self.summariser.summarise_cached(
                system=prefix.system,
                tools=list(prefix.tools),
                view=view,
                breakpoint=self.planner.previous_end(view),
                replaced=replaced,
                identity=identity,
                focus=focus,
                facts=facts,
                segment=tuple(history.messages),
            )
            if summary is not None:
                return summary
        return self.summariser.summarise(history.messages, identity, focus, facts)

    def _succeeded(self, rec: Compaction, history: History, duration: float) -> None:
        kept = retention(
            "\n".join(render_block(b) for m in history.messages for b in m.content),
            rec.first.text(),
            self.teammates,
        )
        self.sink.emit(
            CompactionEvent(
                agent=self.agent,
                layer=rec.layer,
                trigger=rec.trigger,
                tokens_before=rec.tokens_before,
                tokens_after=rec.tokens_after,
                messages_before=rec.messages_before,
                messages_after=1,
                transcript=rec.transcript,
                summary_chars=rec.summary_chars,
                duration_s=duration,
                retention=kept.overall,
                retention_tasks=kept.task_ids,
                retention_names=kept.names,
                retention_paths=kept.paths,
            )
        )

    def _failed(
        self, history: History, layer: str, trigger: str, tokens: int, duration: float, err: str
    ) -> None:
        if layer == "auto":
            self.gate.failures += 1
        self.sink.emit(
            CompactionEvent(
                agent=self.agent,
                layer=layer,
                trigger=trigger,
                tokens_before=tokens,
                tokens_after=tokens,
                messages_before=len(history.messages),
                messages_after=len(history.messages),
                duration_s=duration,
                success=False,
                error=err,
            )
        )
        if layer == "auto" and self.gate.failures >= MAX_FAILURES and not self.gate.paused:
            self.gate.paused = True
            self.gate.reason = f"{self.gate.failures} failed summaries in a row ({err})"
            log.warning(
                "%s: auto-compaction paused after %d failed summaries in a row (%s); "
                "it resumes after a manual compact or a restart",
                self.agent,
                self.gate.failures,
                err,
            )
            self.sink.emit(AgentEvent(self.agent, "auto_paused", err))

    def _record_summary_call(self, response, duration: float, error: str | None) -> None:
        u = response.usage if response is not None else None
        if u is not None:
            self._summary_cost += billed_input(u, ttl=self.config.cache_ttl)
        self.sink.emit(
            ModelCallEvent(
                agent=self.agent,
                purpose="summary",
                input_tokens=u.input_tokens if u else 0,
                output_tokens=u.output_tokens if u else 0,
                cache_read_tokens=u.cache_read_tokens if u else 0,
                cache_write_tokens=u.cache_write_tokens if u else 0,
                duration_s=duration,
                error=error,
                cache_ttl=self.config.cache_ttl,
            )
        )
