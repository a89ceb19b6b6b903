"""Who is told what when the board changes: task owners, the lead, the user.

Every change to the board that someone must act on becomes one inbox message here, so
the CLI, the agents' tools and the agent loop tell people the same way (docs/design.md,
"Task board and coordination"); the changes they share (assign, cancel, reassign,
reopen, set_blocked_by, review_plan) are methods here, the board's change and then its notices. A
message that cannot be delivered is logged, never raised: the board change it reports
has already happened and must not be undone by a full disk.

A running node on Redis passes a `Courier` (`team.backends.outbox.Outbox`): the notices
then go through a local spool and never wait for Redis in the agent's thread. Without
one (the CLI, a team on files) each is delivered at once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from team.backends import post
from team.core.errors import UserError
from team.core.events import EventSink
from team.mailbox.base import Inboxes
from team.mailbox.message import MailMessage
from team.tasks import Board, Task, wording
from team.workspace.config import TeamConfig
from team.workspace.places import USER, Workspace

log = logging.getLogger(__name__)


class TaskNotDelivered(Exception):
    """A task was added, its delivery failed, and taking it back failed too."""

    def __init__(self, task: Task, cause: OSError) -> None:
        super().__init__(f"task #{task.id} added for {task.owner}, but not delivered: {cause}")
        self.task = task
        self.cause = cause


def require_worker(config: TeamConfig, name: str, *, noun: str = "agent") -> None:
    """Tasks are for agents: a typo, or `user`, is refused before anything changes.

    Args:
        noun: what the reader calls the others ("agent" at the CLI, "teammate" for an
            agent's tools).

    Raises:
        UserError: `name` is not one of the team's agents.
    """
    if name in config.names():
        return
    agents = ", ".join(config.names())
    if name == USER:  # `user` has an inbox, but no agent would do the work
        raise UserError(f"tasks are for agents, not {name!r} (agents: {agents})")
    raise UserError(f"unknown {noun} {name!r} (agents: {agents})")


class Courier(Protocol):
    """Takes a composed message and sees it delivered, soon or once Redis is back."""

    def send(self, msg: MailMessage) -> None: ...

    def pending(self) -> int:
        """Messages taken and not delivered yet."""
        ...


@dataclass(frozen=True)
class Crew:
    """What every part that acts for the team shares: the workspace, team.toml, the
    board, where events go, the inboxes, and how notices travel."""

    ws: Workspace
    config: TeamConfig
    board: Board
    sink: EventSink | None = None
    inboxes: Inboxes | None = None
    """The running node's backend; None: the one team.toml names, opened per send."""
    courier: Courier | None = None
    """How notices go out (a running node's outbox); None: delivered at once."""


class Teamwork:
    """The messages of coordination, sent on behalf of `sender` (an agent or `user`)."""

    def __init__(self, crew: Crew) -> None:
        self.crew = crew
        self.ws = crew.ws
        self.config = crew.config
        self.board = crew.board
        self.sink = crew.sink
        self.courier = crew.courier

    @property
    def lead(self) -> str | None:
        return self.config.team.lead

    def reviewer(self, agent: str) -> str:
        """Who reviews `agent`'s plans: the lead, or the user when there is none (or it is
        the lead's own plan)."""
        return self.lead if self.lead and self.lead != agent else USER

    # -- tasks --------------------------------------------------------------------------

    def assign(
        self,
        subject: str,
        owner: str | None,
        *,
        description: str = "",
        blocked_by: Sequence[int] = (),
        sender: str = USER,
    ) -> tuple[Task, bool]:
        """Put a task on the board and deliver it to `owner` (None: open for anyone), all
        or nothing: a task its owner never hears of would stay open for ever.

        Returns the task, and whether its owner was told now (a blocked task is told
        when it unblocks).

        Raises:
            TaskError: what the board refuses (empty subject, unknown blocker).
            OSError: the task was not added (the board's write, or the delivery failed
                and the task was taken back).
            TaskNotDelivered: the delivery failed and taking the task back failed too.
        """
        task = self.board.create(
            subject, owner=owner, description=description, blocked_by=blocked_by, created_by=sender
        )
        try:
            return task, self.assigned(task, sender, strict=True)
        except OSError as e:
            try:
                self.board.discard(task.id)
            except OSError:
                raise TaskNotDelivered(task, e) from e
            raise

    def cancel(self, task_id: int, sender: str = USER) -> tuple[Task, list[int]]:
        """Cancel a task; its owner is told to drop it.

        Returns the task, and the ids of the unfinished tasks that wait on it (they stay
        blocked).

        Raises:
            TaskError: unknown id, or a completed task.
        """
        before = self.board.get(task_id)
        task = self.board.cancel(task_id)
        self.cancelled(task, sender, before.status)
        return task, self._waiting_on(task_id)

    def reassign(self, task_id: int, owner: str, sender: str = USER) -> tuple[Task, str | None]:
        """Give an unfinished task to `owner`: it starts over, the old owner is told to
        stop and the new one gets it. A task `owner` has already stays as it is, and
        nobody is told.

        Returns the task and its owner before (None: it was open).

        Raises:
            UserError: `owner` is not one of the team's agents.
            TaskError: unknown id, or a finished task.
        """
        require_worker(self.config, owner)
        before = self.board.get(task_id)
        task = self.board.reassign(task_id, owner)
        if before.owner != task.owner:
            self.reassigned(task, before.owner, sender)
        return task, before.owner

    def reopen(self, task_id: int, sender: str = USER) -> Task:
        """Make a finished task pending again; its owner gets it again.

        Raises:
            TaskError: unknown id, or a task not finished.
        """
        task = self.board.reopen(task_id)
        self.assigned(task, sender)
        return task

    def set_blocked_by(self, task_id: int, blocked_by: Sequence[int], sender: str = USER) -> Task:
        """Replace what a task waits on; a task this unblocks is delivered to its owner
        (who was not told of it while it was blocked).

        Raises:
            TaskError: unknown id, a finished or in-progress task, or a cycle.
        """
        before = self.board.get(task_id)
        task = self.board.set_blocked_by(task_id, blocked_by)
        if before.status == "blocked" and task.status == "pending":
            self.assigned(task, sender)
        return task

    def assigned(self, task: Task, sender: str, *, strict: bool = False) -> bool:
        """Deliver a task to its owner, unless it is blocked: then it comes on unblocking.

        Returns True if it was delivered now. `strict`: a failed delivery raises (the
        CLI then takes the task back) instead of being logged.
        """
        if task.owner is None or task.owner == sender:
            return False
        if task.status == "blocked":
            return False
        self._send(task.owner, task_text(task), sender, type="task", task_id=task.id, strict=strict)
        return True

    def completed(self, task: Task, agent: str) -> list[Task]:
        """A task was completed: tell the owners of what it unblocks, and the lead."""
        # statuses as derived by the board: a pending one no longer waits on anything
        freed = [t for t in self.board.unfinished() if task.id in t.blocked_by]
        freed = [t for t in freed if t.status == "pending"]
        for t in freed:
            if t.owner is not None:
                text = f"Task #{t.id} is unblocked (#{task.id} is completed).\n{task_text(t)}"
                self._send(t.owner, text, agent, type="task", task_id=t.id)
        if self.lead and self.lead != agent:
            opened = f" Unblocked: {_ids(freed)}." if freed else ""
            result = f": {task.result}" if task.result else ""
            self._send(
                self.lead,
                f"{agent} completed task #{task.id} ({task.subject}){result}.{opened}",
                agent,
                task_id=task.id,
            )
        return freed

    def failed(self, task: Task, agent: str) -> None:
        if self.lead and self.lead != agent:
            waiting = self._waiting_on(task.id)
            behind = f" Waiting on it: {_ids(waiting)}." if waiting else ""
            self._send(
                self.lead,
                f"{agent} failed task #{task.id} ({task.subject}): {task.result or 'no reason'}."
                f"{behind}",
                agent,
                task_id=task.id,
            )

    def cancelled(self, task: Task, sender: str, previous_status: str) -> None:
        if task.owner and task.owner != sender and previous_status in ("pending", "in_progress"):
            text = (
                f"Task #{task.id} ({task.subject}) was cancelled by {sender}: stop working on it."
            )
            self._send(task.owner, text, sender, type="revoked", task_id=task.id)

    def reassigned(self, task: Task, old_owner: str | None, sender: str) -> None:
        if old_owner and old_owner not in (task.owner, sender):
            to = task.owner or "anyone"
            text = f"Task #{task.id} ({task.subject}) was reassigned to {to}: stop working on it."
            self._send(old_owner, text, sender, type="revoked", task_id=task.id)
        self.assigned(task, sender)

    def going_idle(self, agent: str, root: str) -> str | None:
        """`agent` is about to go idle: run the teammate_idle hook; tell the lead.

        Returns the hook's reason when it says keep working (exit 2): the agent is told
        it and goes on, and the lead hears nothing yet.
        """
        from team.hooks import run_hook  # only when a turn ends
        from team.sandbox.bwrap import Sandbox

        hooks = self.config.hooks
        open_tasks = [t.model_dump() for t in self.board.open_for(agent)]
        verdict = run_hook(
            "teammate_idle",
            hooks.teammate_idle,
            {
                "team": self.config.team.name,
                "agent": agent,
                "workspace": root,
                "open_tasks": open_tasks,
            },
            cwd=self.ws.root,
            timeout=hooks.timeout,
            sandbox=Sandbox.for_hooks(self.ws, self.config) if hooks.teammate_idle else None,
        )
        if verdict.refused:
            return verdict.reason
        self.idle(agent)
        return None

    def idle(self, agent: str) -> None:
        """`agent` ended its turn with nothing left to do: the lead may hand it work."""
        if self.lead and self.lead != agent:
            mine = self.board.open_for(agent)
            holding = f" It still holds {_ids(t.id for t in mine)}." if mine else ""
            self._send(self.lead, f"{agent} is idle.{holding}", agent)

    # -- plans --------------------------------------------------------------------------

    def plan_submitted(self, task: Task, agent: str) -> str:
        to = self.reviewer(agent)
        how = (
            "Answer with review_plan{task_id, approve, feedback}."
            if to != USER
            else f"Answer with `team approve {task.id}` or `team reject {task.id} --why TEXT`."
        )
        text = f"{agent} asks you to approve a plan for task #{task.id} ({task.subject}):\n"
        self._send(to, f"{text}{task.plan}\n\n{how}", agent, type="plan_request", task_id=task.id)
        return to

    def review_plan(
        self, task_id: int, approve: bool, feedback: str | None = None, reviewer: str = USER
    ) -> Task:
        """Approve or (with a reason) reject the plan waiting on a task; its owner is told.

        Raises:
            TaskError: unknown id, no plan waiting, or a rejection without a reason.
        """
        task = self.board.review_plan(task_id, approve, feedback)
        self.plan_reviewed(task, reviewer)
        return task

    def plan_reviewed(self, task: Task, reviewer: str) -> None:
        if task.owner is None:
            return
        approved = task.plan_state == "approved"
        text = wording.plan_answer(task.id, approved, task.plan_feedback)
        self._send(
            task.owner, text, reviewer, type="plan_response", task_id=task.id, approved=approved
        )

    # -- goals --------------------------------------------------------------------------

    def goal(self, text: str, sender: str = USER) -> str:
        """Give the team a goal through its lead; returns the lead's name.

        Raises:
            UserError: an empty goal, a team without a lead, or the goal not delivered.
        """
        if not text.strip():
            raise UserError("the goal is empty")
        if not self.lead:
            raise UserError('this team has no lead: set [team] lead = "NAME" in team.toml')
        self._send(self.lead, text, sender, type="goal", strict=True)
        return self.lead

    def _waiting_on(self, task_id: int) -> list[int]:
        return [t.id for t in self.board.unfinished() if task_id in t.blocked_by]

    def _send(
        self,
        to: str,
        text: str,
        sender: str,
        *,
        type: str = "notice",
        task_id: int | None = None,
        strict: bool = False,
        approved: bool | None = None,
    ) -> None:
        if to == sender:
            return
        fields = {"sender": sender, "type": type, "task_id": task_id, "approved": approved}
        try:
            spool = None if strict or self.courier is None else self.courier.send
            post.send(self.ws, self.config, to, text, sink=self.sink, spool=spool, **fields)
        except (UserError, OSError) as e:
            if strict:
                raise
            log.warning("could not tell %s about task #%s: %s", to, task_id, e)


def task_text(task: Task) -> str:
    """How a task reads in its owner's inbox: the subject, then the description."""
    return f"{task.subject}\n\n{task.description}".strip() if task.description else task.subject


def _ids(ids) -> str:
    return ", ".join(f"#{i}" if isinstance(i, int) else f"#{i.id}" for i in ids)
