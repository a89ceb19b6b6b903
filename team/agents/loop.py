"""The agent loop: wait for work, take in the inbox, compact, call the model, run tools, persist.

One `Agent` per thread. The loop reads top to bottom in `run` -> `turn` -> `step`; the
collaborators (model, mailbox, board, toolbox, compactor, session log) do the rest.
"""

from __future__ import annotations

import errno
import logging
import time

from team.agents import replies
from team.agents.backoff import Backoff
from team.agents.context import Context
from team.agents.replies import Tools
from team.agents.seat import Control, Link, Seat
from team.agents.session.log import interrupted_results
from team.agents.state import AgentFailed, AgentState, BudgetReached, Shutdown, StepFailed
from team.agents.words import notices, nudges
from team.agents.words.identity import agent_facts, identity_block
from team.compaction.clip import Clipper
from team.compaction.records import AssistantTurn, Note, Record, UserTurn
from team.core.conversation import (
    Block,
    InboxMail,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Validator,
)
from team.core.errors import is_disk_error, os_error_line
from team.core.events import AgentEvent, EventSink, ModelCallEvent
from team.llm.base import (
    AgentFacts,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    PermanentModelError,
    PromptTooLong,
)
from team.mailbox.message import told_tasks, unanswered_mail
from team.tasks.model import Task

log = logging.getLogger(__name__)

BOARD_POLL_S = 1.0
MAX_STEPS_PER_TURN = 200  # a runaway tool loop still yields to the inbox and to shutdown
MAX_KEPT_WORKING = 3  # a teammate_idle hook that always says "keep working" must not loop
EMPTY_REPLY = "(no reply)"
PROMPT_TOO_LONG_COMPACTIONS = 2


class Agent:
    """One agent. Built by `team.agents.build.build_agent`; its collaborators are seams.

    Args:
        seat: who it is, and the system prompt and tools every request carries.
        model: what answers.
        context: its conversation (session log, history, compactor).
        toolbox: runs the tools the loop does not handle itself.
        link: its side of the team: mail in, the board, waking, the idle hook.
        control: when it stops (the team's stop, its budget) and how often it looks.
        sink: where its events go.
    """

    def __init__(
        self,
        seat: Seat,
        model: Model,
        context: Context,
        toolbox: Tools,
        link: Link,
        control: Control,
        sink: EventSink,
    ) -> None:
        self.seat = seat
        self.name = seat.name
        self.model = model
        self.context = context
        self.toolbox = toolbox
        self.link = link
        self.intake = link.intake
        self.board = link.board
        self.control = control
        self.sink = sink
        self.status = AgentState()
        self.backoff = Backoff()
        self._validator = Validator()  # each request checked from where the last ended
        self._clip = Clipper()  # each request clipped from where the last one changed
        self._cut = False  # the last reply was cut off at max_tokens
        self._board_checked = 0.0
        self.last_error: str | None = None
        self._idle = False  # the model called `idle`: wait for new input, call nothing
        self._new_mail: list[InboxMail] = []  # taken in since the last reply (its facts)

    def identity(self) -> str:
        return identity_block(self.facts())

    def facts(self) -> AgentFacts:
        """Who the agent is, its tasks and the mail since its last reply, as data."""
        # blocked tasks are not work yet: their owner is told when they unblock
        mine = [t for t in self.board.open_for(self.name) if _can_act(t) or _waits_review(t)]
        return agent_facts(self.seat.config, self.seat.team, mine, self._new_mail)

    # -- the loop ------------------------------------------------------------------------

    def run(self, *, until_idle: bool = False) -> None:
        """Resume from the session log, then work until asked to stop.

        Args:
            until_idle: return the first time there is no work, instead of waiting.
        """
        self.resume()
        failed: str | None = None
        try:
            while True:
                self.check_stop()
                self.check_budget()
                try:
                    if self.has_work():
                        self.status.state = "working"
                        self.turn()
                        continue
                    self.status.state = "idle"
                    self.status.task = None
                    if until_idle:
                        return
                    self.check_stop()
                    self.link.waker.wait(self.control.poll_s)
                except OSError as e:
                    if not is_disk_error(e):
                        raise
                    self._disk_failed(e)
        except Shutdown:
            pass
        except AgentFailed as e:
            failed = str(e)
            self.sink.emit(AgentEvent(self.name, "failed", failed))
        except BudgetReached as e:
            self._stop_for_budget(str(e))
        finally:
            if failed:
                self.status.state = f"failed: {failed}"
            elif not self.status.state.startswith("budget"):
                self.status.state = "stopped"
            self.status.current = None
            self.close()

    def close(self) -> None:
        """Release what the agent holds open (its session log, its waker)."""
        self.context.close()
        self.link.waker.close()

    def check_stop(self) -> None:
        """At a step boundary: answer a pending shutdown request, or honour a hard stop."""
        if self.intake.shutdown is not None:
            self.intake.answer_shutdown()
            raise Shutdown
        if self.control.stop.is_set():
            raise Shutdown

    def resume(self) -> None:
        repaired = self.context.resume()
        if repaired:  # one event, which `team up` shows once (a log line too: twice)
            self.sink.emit(AgentEvent(self.name, "repaired", repaired))
        cut = interrupted_results(self.context.history)
        if cut:
            self._add_user(cut)
            self.sink.emit(AgentEvent(self.name, "resumed", f"{len(cut)} interrupted tool calls"))
        self._new_mail = unanswered_mail(self.context.messages)
        self._tell_untold_tasks()
        self.status.compactions = self.context.segment
        self.status.context_tokens = self.context.estimate()
        self.status.auto_paused = self.context.auto_paused()

    def _tell_untold_tasks(self) -> None:
        """Tasks we own that neither our conversation nor our inbox mentions.

        A claim is recorded on the board before it reaches the session log, so a crash
        in between would leave a task owned by an agent that never heard of it.
        """
        known = told_tasks(self.context.messages) | self.intake.pending_tasks()
        untold = [t for t in self._actionable() if t.id not in known]
        if untold:
            self._add_user([nudges.untold(untold)])

    def has_work(self) -> bool:
        """Unanswered input, new mail, or an open task nobody has claimed (which we claim)."""
        if self.take_inbox():
            return True
        if self.intake.shutdown is not None:
            return False  # stopping: take on nothing new
        if self.context.waiting_for_reply() and not self._idle:
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
        self._idle = False
        self.sink.emit(AgentEvent(self.name, "claimed", f"#{task.id} {task.subject}"))
        self._add_user([nudges.claimed(task)])
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
            idled = bool(uses) and self.run_tools(uses)
            self.check_budget()  # the step is done: stop here if it spent the last dollar
            if uses and not idled:
                continue
            if self._cut:
                self._cut = False
                self._add_user([TextBlock(nudges.CONTINUE)])
                continue
            if self.take_inbox():
                continue
            mine = self._actionable()
            if mine and not reminded:
                reminded = True
                self._add_user([nudges.reminder(mine)])
                continue
            if self.link.on_idle is not None and kept < MAX_KEPT_WORKING:
                why = self.link.on_idle()  # the teammate_idle hook, and the lead's notice
                if why is not None:
                    kept += 1
                    self._add_user([TextBlock(nudges.keep_working(why))])
                    continue
            # `idle` ends the turn: its results wait, unanswered, for the next input
            # (calling the model on them would be one full-context call for nothing)
            self._idle = idled
            return

    def _actionable(self) -> list[Task]:
        """Own tasks the agent can act on now: not blocked, no plan waiting for review."""
        return [t for t in self.board.open_for(self.name) if _can_act(t)]

    def check_budget(self) -> None:
        """At a step boundary: stop once the agent's or the team's budget is spent."""
        budget = self.control.budget
        if budget is not None and (why := budget(self.name)):
            raise BudgetReached(why)

    def _stop_for_budget(self, why: str) -> None:
        """Say so in the user inbox and in the events; the thread ends, taking no work."""
        self.status.state = "budget reached"  # why: in the events, the status, the inbox
        notices.budget_spent(self.name, why, self.intake, self.sink)

    def step(self) -> list[ToolUseBlock]:
        """Compact if due, call the model once, persist the reply; return its tool calls.

        A prompt too long for the model is compacted at once and sent again; if even
        a twice-compacted context does not fit, the agent fails.
        """
        self.check_stop()
        if self.context.due():
            self.compact("auto", "threshold")
        for attempt in range(PROMPT_TOO_LONG_COMPACTIONS + 1):
            try:
                return self._take(*self._call())
            except PromptTooLong as e:
                if attempt == PROMPT_TOO_LONG_COMPACTIONS:
                    raise AgentFailed(f"prompt too long even after compaction: {e}") from e
                segment = self.context.segment
                # the second pass also summarises what the first carried over verbatim
                self.compact("auto", "prompt_too_long")
                if self.context.segment == segment:  # the compaction failed: retry later
                    self._backoff(e)
                    raise StepFailed(str(e)) from e
        raise AssertionError("unreachable")

    def _call(self) -> tuple[ModelResponse, ModelRequest, int, float, tuple[int, ...]]:
        """One request from the current history.

        Returns (response, request, estimate, seconds, the results micro newly replaced).
        """
        sent = self.context.prepare()
        # one block can be larger than the whole context: the model sees its head and
        # tail; the log and the transcript keep all of it
        view = self._clip(sent.view)
        self._validator.validate(view)  # a request the API would reject is our bug
        request = ModelRequest(
            system=self.seat.prefix.system,
            messages=view,
            tools=list(self.seat.prefix.tools),
            max_tokens=self.seat.team.team.max_tokens,
            cache_breakpoints=sent.breakpoints,
            cache_ttl=self.context.cache_ttl,
            agent=self.name,
            facts=self.facts(),
        )
        estimate = self.context.estimate()
        start = time.monotonic()
        try:
            response = self.model.complete(request)
        except PromptTooLong as e:
            self._record_error(e, estimate, time.monotonic() - start)
            raise
        except PermanentModelError as e:
            self._record_error(e, estimate, time.monotonic() - start)
            raise AgentFailed(str(e)) from e
        except ModelError as e:
            self._record_error(e, estimate, time.monotonic() - start)
            self._backoff(e)
            raise StepFailed(str(e)) from e
        if self.backoff.failures > 1:  # the end of what the warning began
            n = self.backoff.failures
            self.sink.emit(AgentEvent(self.name, "recovered", f"model call ok after {n} failed"))
        self.backoff = Backoff()
        return response, request, estimate, time.monotonic() - start, sent.cleared

    def _take(
        self,
        response: ModelResponse,
        request: ModelRequest,
        estimate: int,
        duration: float,
        cleared: tuple[int, ...] = (),
    ) -> list[ToolUseBlock]:
        """Record a reply; a cut-off or refused one is noted for the turn to handle."""
        u = response.usage
        self.context.observe(request, u)
        self.sink.emit(
            ModelCallEvent(
                agent=self.name,
                purpose="agent",
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_read_tokens=u.cache_read_tokens,
                cache_write_tokens=u.cache_write_tokens,
                estimate=estimate,
                duration_s=duration,
                cache_ttl=request.cache_ttl,
            )
        )
        # whitespace-only text would make every later request a 400: keep what is real
        kept = tuple(
            b for b in response.content if not (isinstance(b, TextBlock) and not b.text.strip())
        )
        message = Message("assistant", kept or (TextBlock(EMPTY_REPLY),))
        self.record(AssistantTurn(message, u, cleared))
        self.status.calls += 1
        self.status.context_tokens = u.context_tokens
        uses = message.tool_uses()
        if response.stop_reason == "max_tokens":
            self._cut = True  # the last call, if any, is incomplete: run_tools refuses it
        elif response.stop_reason == "refusal":
            self._refused(message)
        return uses

    def run_tools(self, uses: list[ToolUseBlock]) -> bool:
        """Run one reply's tool calls and record their results; True if one was `idle`."""
        cut = uses[-1].id if self._cut and uses else None
        self._cut = self._cut and not cut
        out = replies.answer(
            uses, cut=cut, intake=self.intake, toolbox=self.toolbox, status=self.status
        )
        self._add_user(out.results, out.inbox_ids)
        self._new_mail += out.mail
        self._follow_task(out.results)
        if out.compact:
            self.compact("manual", "tool", out.focus)
        return out.idled

    def _follow_task(self, results: list[Block]) -> None:
        """The status's task follows what the board tools did: a claim, a completion."""
        notes = (n for r in results if isinstance(r, ToolResultBlock) for n in r.tasks)
        for note in notes:
            if note.event == "claimed":
                self.status.task = note.id
            elif note.event == "completed" and self.status.task == note.id:
                self.status.task = None

    def compact(self, layer: str, trigger: str, focus: str | None = None) -> None:
        facts = self.facts()
        done = self.context.compact(
            identity=identity_block(facts), layer=layer, trigger=trigger, focus=focus, facts=facts
        )
        self.status.auto_paused = self.context.auto_paused()
        if not done:
            if layer == "manual":
                self._add_user([TextBlock(nudges.COMPACT_FAILED)])
            return
        self.status.compactions += 1

    # -- inbox ---------------------------------------------------------------------------

    def take_inbox(self) -> bool:
        """Bring new inbox messages into the conversation; True if there were any."""
        messages = self.intake.receive()
        if not messages:
            return False
        self._idle = False
        self._add_user([m.as_block() for m in messages], [m.id for m in messages])
        self._new_mail += [m.as_mail() for m in messages]
        return True

    def record(self, rec: Record) -> None:
        """The one way the conversation changes: append to the log (fsync), then fold."""
        self.context.record(rec)
        if isinstance(rec, AssistantTurn):
            self._new_mail = []  # the reply has seen it

    def _add_user(self, blocks: list[Block], inbox_ids: list[str] = ()) -> None:
        """Record user content, then acknowledge the mail that it carries."""
        self.record(UserTurn(tuple(blocks), tuple(inbox_ids)))
        self.intake.ack()

    def _record_error(self, e: ModelError, estimate: int, duration: float) -> None:
        self.sink.emit(
            ModelCallEvent(
                agent=self.name,
                purpose="agent",
                estimate=estimate,
                duration_s=duration,
                error=str(e),
            )
        )
        self.last_error = self.status.error = str(e)

    def _backoff(self, e: ModelError) -> None:
        """Wait before retrying: exponential, or the server's hint when it gives one.

        A failure is one warning when it starts (or changes kind); its repeats only
        update the agent's status line (`waiting: overloaded (529), 3 failed, retry in
        8s`), so a long outage is not a line per retry."""
        repeat = self.backoff.failures > 0 and self.backoff.reason == e.reason
        seconds = self.backoff.next(e)
        if not repeat:
            log.warning(
                "%s: model call failed (%s); retrying in %.0fs (team status shows the retries)",
                self.name,
                e,
                seconds,
            )
        n = self.backoff.failures
        self.wait_interruptibly(seconds, e.reason if n == 1 else f"{e.reason}, {n} failed")

    def wait_interruptibly(self, seconds: float, reason: str) -> None:
        """Wait `seconds`, shown as `waiting: <reason>, retry in Ns`, unless told to stop.

        The wait ends at once on a hard stop (the waker watches it) and on a shutdown
        request (it arrives as mail, which wakes the waker): `team down`, Ctrl-C and
        SIGTERM never wait out a backoff. Other mail is taken in while waiting.
        """
        deadline = time.monotonic() + seconds
        self.status.state, self.status.waiting = "waiting", reason
        self.status.retry_at = time.time() + seconds
        try:
            while (left := deadline - time.monotonic()) > 0:
                self.check_stop()
                self.link.waker.wait(left)
                self.take_inbox()
            self.check_stop()
        finally:
            self.status.waiting = self.status.retry_at = None
            self.status.state = "working"

    def _disk_failed(self, e: OSError) -> None:
        """The session log cannot be written (disk full, read-only): wait, then go on.

        Nothing was applied that was not recorded (records are written before they are
        applied), and mail taken in but not recorded is taken in again.
        """
        line = f"cannot write: {os_error_line(e)}"
        self.last_error = self.status.error = line
        self.intake.forget_unrecorded()
        seconds = self.backoff.next()
        log.warning("%s: %s; retrying in %.0fs", self.name, line, seconds)
        self.wait_interruptibly(seconds, "disk full" if e.errno == errno.ENOSPC else "disk")

    def _refused(self, message: Message) -> None:
        """The model refused to go on: say so where the person will see it."""
        asked = next(
            (m.text() for m in reversed(self.context.messages[:-1]) if m.role == "user"), ""
        )
        self.record(Note({"event": "refusal", "text": message.text()[:1000]}))
        notices.refused(self.name, asked, self.intake, self.sink)


def _can_act(task: Task) -> bool:
    """Not blocked and no plan waiting for review."""
    return task.status != "blocked" and not _waits_review(task)


def _waits_review(task: Task) -> bool:
    return task.plan_state == "submitted"
