"""The agent loop: wait for work, take in the inbox, compact, call the model, run tools, persist.

One `Agent` per thread. The loop reads top to bottom in `run` -> `turn` -> `step`; the
collaborators (model, mailbox, board, toolbox, compactor, session log) do the rest.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from team.agents.identity import identity_block
from team.agents.intake import Intake
from team.agents.session import SessionLog, interrupted_results
from team.board import Board
from team.compaction.compactor import Compactor
from team.compaction.history import History
from team.compaction.records import AssistantTurn, Record, UserTurn
from team.compaction.summary import render_block
from team.config import AgentConfig, TeamConfig
from team.conversation import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock, validate
from team.events import AgentEvent, EventSink, ModelCallEvent
from team.llm.base import Model, ModelError, ModelRequest, ToolSpec
from team.mailbox.base import Inboxes, Waker

log = logging.getLogger(__name__)

TASK_REF = re.compile(r'#(\d+)|task="(\d+)"|"task_id": "?(\d+)')  # how task ids appear
BOARD_POLL_S = 1.0
MAX_STEPS_PER_TURN = 200  # a runaway tool loop still yields to the inbox and to shutdown
MAX_KEPT_WORKING = 3  # a teammate_idle hook that always says "keep working" must not loop
EMPTY_REPLY = "(no reply)"


class Tools(Protocol):
    """Runs the tools the loop does not handle itself (`team.agents.tools.Toolbox`)."""

    def run(self, name: str, input: dict[str, Any]) -> Any: ...


class Shutdown(Exception):
    """The agent was asked to stop; raised at a step boundary."""


class StepFailed(Exception):
    """The model call failed after retries; the history is unchanged and the turn ends."""


@dataclass
class AgentState:
    """What `team status` shows, updated by the agent thread."""

    state: str = "starting"  # starting, idle, working, waiting (model error), stopped
    context_tokens: int = 0
    compactions: int = 0
    calls: int = 0
    task: int | None = None


class Agent:
    """One agent. Built by `team.agents.build.build_agent`; its collaborators are seams."""

    def __init__(
        self,
        *,
        config: AgentConfig,
        team: TeamConfig,
        system: str,
        tools: list[ToolSpec],
        model: Model,
        inboxes: Inboxes,
        board: Board,
        toolbox: Tools,
        compactor: Compactor,
        session: SessionLog,
        sink: EventSink,
        waker: Waker,
        stop: threading.Event,
        started_at: float | None = None,
        poll_s: float = 0.5,
        on_idle: Callable[[], str | None] | None = None,
    ) -> None:
        """`on_idle` runs when a turn ends with nothing left to do; a reason it returns
        keeps the agent working (the teammate_idle hook), None lets it go idle."""
        self.config = config
        self.name = config.name
        self.team = team
        self.model = model
        self.mailbox = inboxes.mailbox(config.name)
        self.board = board
        self.toolbox = toolbox
        self.compactor = compactor
        self.session = session
        self.sink = sink
        self.waker = waker
        self.stop = stop
        self.started_at = started_at if started_at is not None else time.time()
        self.poll_s = poll_s
        self.on_idle = on_idle
        self.system = system
        self.tools = tools
        self.status = AgentState()
        self.history = History()
        self._error_backoff = 0.0
        self.intake = Intake(self.name, inboxes, session, sink, self.started_at)
        self._board_checked = 0.0
        self.last_error: str | None = None

    def identity(self) -> str:
        return identity_block(self.config, self.team, self.board.open_for(self.name))

    # -- the loop ------------------------------------------------------------------------

    def run(self, *, until_idle: bool = False) -> None:
        """Resume from the session log, then work until asked to stop.

        Args:
            until_idle: return the first time there is no work, instead of waiting.
        """
        self.resume()
        try:
            while True:
                self.check_stop()
                if self.has_work():
                    self.status.state = "working"
                    self.turn()
                    continue
                self.status.state = "idle"
                self.status.task = None
                if until_idle:
                    return
                self.check_stop()
                self.waker.wait(self.poll_s)
        except Shutdown:
            pass
        finally:
            self.status.state = "stopped"
            self.session.close()
            self.waker.close()

    def check_stop(self) -> None:
        """At a step boundary: answer a pending shutdown request, or honour a hard stop."""
        if self.intake.shutdown is not None:
            self.intake.answer_shutdown()
            raise Shutdown
        if self.stop.is_set():
            raise Shutdown

    def resume(self) -> None:
        self.history = self.session.load()
        cut = interrupted_results(self.history)
        if cut:
            self._add_user(cut)
            self.sink.emit(AgentEvent(self.name, "resumed", f"{len(cut)} interrupted tool calls"))
        self._tell_untold_tasks()
        self.status.compactions = self.history.segment
        self.status.context_tokens = self.compactor.estimate(self.history)

    def _tell_untold_tasks(self) -> None:
        """Tasks we own that neither our conversation nor our inbox mentions.

        A claim is recorded on the board before it reaches the session log, so a crash
        in between would leave a task owned by an agent that never heard of it.
        """
        text = "\n".join(render_block(b) for m in self.history.messages for b in m.content)
        known = {int(next(g for g in m.groups() if g)) for m in TASK_REF.finditer(text)}
        known |= {m.task_id for m in self.mailbox.pending() if m.task_id is not None}
        untold = [t for t in self._actionable() if t.id not in known]
        if untold:
            listing = "; ".join(f"#{t.id} {t.subject}" for t in untold)
            self._add_user([TextBlock(f"You own these open tasks: {listing}. Work on them.")])

    def has_work(self) -> bool:
        """Unanswered input, new mail, or an open task nobody has claimed (which we claim)."""
        if self.take_inbox():
            return True
        if self.intake.shutdown is not None:
            return False  # stopping: take on nothing new
        if self.history.messages and self.history.messages[-1].role == "user":
            return True
        # Idle agents poll; reading the whole board every poll made 100 idle agents cost
        # more than the working ones. A task left open waits at most a second.
        now = time.monotonic()
        if now - self._board_checked < BOARD_POLL_S:
            return False
        self._board_checked = now
        task = self.board.claim_next(self.name)
        if task is None:
            return False
        self.sink.emit(AgentEvent(self.name, "claimed", f"#{task.id} {task.subject}"))
        self._add_user(
            [
                TextBlock(
                    f"You claimed open task #{task.id}: {task.subject}\n{task.description}".strip()
                )
            ]
        )
        return True

    def turn(self) -> None:
        """Call the model and run its tools until it ends its turn."""
        reminded = False
        kept = 0
        mine = self.board.open_for(self.name)
        self.status.task = mine[0].id if mine else None
        for _ in range(MAX_STEPS_PER_TURN):
            self.take_inbox()
            try:
                uses = self.step()
            except StepFailed:
                return  # has_work() sees the unanswered user turn and tries again
            if uses:
                self.run_tools(uses)
                continue
            if self.take_inbox():
                continue
            mine = self._actionable()
            if mine and not reminded:
                reminded = True
                listing = "; ".join(f"#{t.id} {t.subject}" for t in mine)
                self._add_user(
                    [
                        TextBlock(
                            f"Reminder: you still own open tasks: {listing}. Complete them "
                            "with complete_task, or say why you cannot."
                        )
                    ]
                )
                continue
            if self.on_idle is not None and kept < MAX_KEPT_WORKING:
                why = self.on_idle()  # the teammate_idle hook, and the lead's notice
                if why is not None:
                    kept += 1
                    self._add_user([TextBlock(f"Keep working (teammate_idle hook): {why}")])
                    continue
            return

    def _actionable(self) -> list:
        """Own tasks the agent can act on now: not blocked, no plan waiting for review."""
        return [
            t
            for t in self.board.open_for(self.name)
            if t.status != "blocked" and t.plan_state != "submitted"
        ]

    def step(self) -> list[ToolUseBlock]:
        """Compact if due, call the model once, persist the reply; return its tool calls."""
        self.check_stop()
        if self.compactor.should_auto(self.history):
            self.compact("auto", "threshold")
        view, breakpoints = self.compactor.prepare(self.history)
        validate(view)  # a request the API would reject is our bug, never the user's
        request = ModelRequest(
            system=self.system,
            messages=view,
            tools=self.tools,
            max_tokens=self.team.team.max_tokens,
            cache_breakpoints=breakpoints,
            cache_ttl=self.compactor.config.cache_ttl,
            agent=self.name,
        )
        estimate = self.compactor.estimate(self.history)
        start = time.monotonic()
        try:
            response = self.model.complete(request)
        except ModelError as e:
            self._model_failed(e, estimate, time.monotonic() - start)
            raise StepFailed(str(e)) from e
        self._error_backoff = 0.0
        u = response.usage
        self.compactor.observe(request, u)
        self.sink.emit(
            ModelCallEvent(
                agent=self.name,
                purpose="agent",
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_read_tokens=u.cache_read_tokens,
                cache_write_tokens=u.cache_write_tokens,
                estimate=estimate,
                duration_s=time.monotonic() - start,
            )
        )
        # whitespace-only text would make every later request a 400: keep what is real
        kept = tuple(
            b for b in response.content if not (isinstance(b, TextBlock) and not b.text.strip())
        )
        message = Message("assistant", kept or (TextBlock(EMPTY_REPLY),))
        self.record(AssistantTurn(message, u))
        self.status.calls += 1
        self.status.context_tokens = u.context_tokens
        return message.tool_uses()

    def run_tools(self, uses: list[ToolUseBlock]) -> None:
        results: list[Block] = []
        inbox_ids: list[str] = []
        focus: str | None = None
        compact_requested = False
        for use in uses:
            if use.name == "compact":
                compact_requested = True
                focus = str(use.input.get("focus") or "") or None
                content = "Compacting now: you will continue from a summary of your work."
                results.append(ToolResultBlock(use.id, content, use.name))
            elif use.name == "read_inbox":
                messages = self.intake.receive()
                inbox_ids += [m.id for m in messages]
                text = "\n\n".join(m.as_prompt() for m in messages) or "No new messages."
                results.append(ToolResultBlock(use.id, text, use.name))
            elif use.name == "idle":
                results.append(ToolResultBlock(use.id, "Going idle.", use.name))
            else:
                r = self.toolbox.run(use.name, use.input)
                results.append(ToolResultBlock(use.id, r.content, use.name, r.is_error))
        self._add_user(results, inbox_ids)
        if compact_requested:
            self.compact("manual", "tool", focus)

    def compact(self, layer: str, trigger: str, focus: str | None = None) -> None:
        rec = self.compactor.compact(
            self.history,
            identity=self.identity(),
            layer=layer,
            trigger=trigger,
            focus=focus,
            prefix=(self.system, self.tools),
        )
        if rec is None:
            if layer == "manual":
                self._add_user(
                    [TextBlock("compact failed; your conversation is unchanged. Go on.")]
                )
            return
        self.record(rec)
        self.status.compactions += 1

    # -- inbox ---------------------------------------------------------------------------

    def take_inbox(self) -> bool:
        """Bring new inbox messages into the conversation; True if there were any."""
        messages = self.intake.receive()
        if not messages:
            return False
        self._add_user([TextBlock(m.as_prompt()) for m in messages], [m.id for m in messages])
        return True

    def record(self, rec: Record) -> None:
        """The one way the conversation changes: append to the log (fsync), then fold."""
        self.session.append(rec)
        self.history.apply(rec)

    def _add_user(self, blocks: list[Block], inbox_ids: list[str] = ()) -> None:
        """Record user content, then acknowledge the mail that it carries."""
        self.record(UserTurn(tuple(blocks), tuple(inbox_ids)))
        self.intake.ack()

    def _model_failed(self, e: ModelError, estimate: int, duration: float) -> None:
        self.sink.emit(
            ModelCallEvent(
                agent=self.name,
                purpose="agent",
                estimate=estimate,
                duration_s=duration,
                error=str(e),
            )
        )
        self.last_error = str(e)
        self._error_backoff = min(30.0, max(1.0, self._error_backoff * 2))
        if e.retry_after is not None:  # the server knows better (a short 529, a long 429)
            self._error_backoff = min(self._error_backoff, e.retry_after)
        log.warning(
            "%s: model call failed (%s); retrying in %.0fs", self.name, e, self._error_backoff
        )
        self.status.state = "waiting"
        self.stop.wait(self._error_backoff)
