"""The task board tools: list, claim, complete, create, update, and plans for review.

Each handler checks who may do what, changes the board through the `Board` protocol,
then tells whoever must act (`Teamwork`): the owners of unblocked tasks, the lead, the
reviewer of a plan. The `task_completed` hook runs before a completion is recorded and
may refuse it; in worktree mode the agent's worktree is committed when a task completes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from team.agents.tools.input import (
    ToolInputError,
    ToolResult,
    need_int,
    need_str,
    opt_int,
    opt_str,
)
from team.agents.tools.task_specs import (
    DESCRIPTION_CHARS,
    LISTED_FINISHED,
    MORE_FINISHED,
    UPDATABLE,
)
from team.core.conversation import TaskNote
from team.core.events import AgentEvent
from team.hooks import run_hook
from team.sandbox.bwrap import Sandbox
from team.tasks import Task, TaskError, rules, wording
from team.teamwork import Teamwork, require_worker
from team.workspace import worktrees

log = logging.getLogger(__name__)


class TaskTools:
    """One agent's board tools; `Toolbox` routes their calls here."""

    def __init__(self, teamwork: Teamwork, agent: str, *, root: Path) -> None:
        """`root`: where the agent works (its worktree, or the workspace)."""
        crew = teamwork.crew
        self.ws = crew.ws
        self.agent = agent
        self.config = crew.config
        self.board = crew.board
        self.root = root
        self.sink = crew.sink
        self.teamwork = teamwork
        self.handlers: dict[str, Callable[[dict[str, Any]], str | ToolResult]] = {
            "list_tasks": self.list_tasks,
            "get_task": self.get_task,
            "claim_task": self.claim_task,
            "complete_task": self.complete_task,
            "create_task": self.create_task,
            "update_task": self.update_task,
            "submit_plan": self.submit_plan,
            "review_plan": self.review_plan,
        }

    @property
    def plan_approval(self) -> bool:
        try:
            return self.config.agent(self.agent).plan_approval
        except KeyError:
            return False

    def plan_gate(self) -> str | None:
        """Why this agent may not change files yet: an in-progress task without an
        approved plan (plan approval only); None when it may."""
        if not self.plan_approval:
            return None
        for t in self.board.open_for(self.agent):
            if t.status == "in_progress" and t.plan_state != "approved":
                waiting = "is waiting for review" if t.plan_state == "submitted" else "is needed"
                return (
                    f"task #{t.id} needs an approved plan before you change files: your plan "
                    f"{waiting} (submit_plan{{task_id, plan}}, then end your turn and wait)"
                )
        return None

    # -- tools --------------------------------------------------------------------------

    def list_tasks(self, input: dict[str, Any]) -> str:
        # Small whatever the board holds: every listing stays in the context of whoever
        # asked, and a 2 MB description listed whole made each agent's next call carry
        # it (16 auto compactions for 11 two-word messages). Descriptions only of the
        # caller's own open tasks, cut; finished tasks briefly, the newest only.
        limit = opt_int(input, "finished")
        limit = LISTED_FINISHED if limit is None else max(0, min(limit, MORE_FINISHED))
        finished = self.board.recently_finished(limit + 1) if limit else []
        more = len(finished) > limit
        finished = sorted(finished, key=lambda t: (t.updated_at, t.id))[len(finished) - limit :]
        rows = [self._row(t) for t in self.board.unfinished()]
        rows += [_brief(t) for t in finished]
        rows.sort(key=lambda r: r["id"])
        if more:
            rows.append(
                {
                    "note": "older finished tasks are not listed: list_tasks{finished: "
                    f"{MORE_FINISHED}}} lists up to {MORE_FINISHED}; `get_task` shows one"
                }
            )
        return json.dumps(rows, indent=1)

    def get_task(self, input: dict[str, Any]) -> str:
        # whole, as the board holds it: a long one is cut to the result cap on its way
        # into the context, and kept whole for read_result (team.agents.session.results)
        return json.dumps(self.board.get(need_int(input, "task_id")).model_dump(), indent=1)

    def _row(self, t: Task) -> dict[str, Any]:
        row = _brief(t)
        row["blocked_by"] = list(t.blocked_by)
        if t.plan_state:
            row["plan_state"] = t.plan_state
        if t.owner == self.agent and t.description:
            text = t.description
            if len(text) > DESCRIPTION_CHARS:
                text = (
                    text[:DESCRIPTION_CHARS].rstrip()
                    + f"… ({len(t.description):,} characters: get_task{{task_id: {t.id}}})"
                )
            row["description"] = text
        return row

    def claim_task(self, input: dict[str, Any]) -> ToolResult:
        task_id = need_int(input, "task_id")
        was = self.board.get(task_id)
        task = self.board.claim(task_id, self.agent)
        note = (TaskNote(task.id, "claimed", task.subject),)
        if was.owner == self.agent and was.status == "in_progress":
            # claimed already (the loop takes open tasks itself): one event, not two
            return ToolResult(wording.already_claimed(task.id, task.subject), tasks=note)
        self._event("claimed", f"#{task.id} {task.subject}")
        plan = self.plan_approval and task.plan_state != "approved"
        return ToolResult(wording.claimed(task.id, task.subject, plan_note=plan), tasks=note)

    def complete_task(self, input: dict[str, Any]) -> ToolResult:
        return self._complete(need_int(input, "task_id"), opt_str(input, "result"))

    def create_task(self, input: dict[str, Any]) -> ToolResult:
        subject = need_str(input, "subject")
        owner = opt_str(input, "owner")
        if owner is not None:
            require_worker(self.config, owner, noun="teammate")
        task = self.board.create(
            subject,
            owner=owner,
            description=opt_str(input, "description") or "",
            created_by=self.agent,
            blocked_by=_ids(input, "blocked_by"),
        )
        self._event("created", f"#{task.id} {task.subject}")
        self.teamwork.assigned(task, self.agent)
        waits = _refs(task.blocked_by) if task.status == "blocked" else ""
        text = wording.created(task.id, task.subject, owner=owner, waits_on=waits)
        return ToolResult(text, tasks=(TaskNote(task.id, "created", task.subject),))

    def update_task(self, input: dict[str, Any]) -> ToolResult:
        task_id = need_int(input, "task_id")
        status, result, owner = (
            opt_str(input, "status"),
            opt_str(input, "result"),
            opt_str(input, "owner"),
        )
        if result is not None and status not in ("completed", "failed"):
            raise ToolInputError("result goes with status completed or failed")
        if status is None and owner is None and "blocked_by" not in input:
            raise ToolInputError("nothing to change: give status, owner or blocked_by")
        if status is not None and status not in UPDATABLE:
            hint = " (blocked is derived: set blocked_by)" if status == "blocked" else ""
            raise ToolInputError(
                f"unknown status {status!r} (one of: {', '.join(UPDATABLE)}){hint}"
            )
        done: list[str] = []
        notes: list[TaskNote] = []
        if "blocked_by" in input:
            self._may_manage(task_id)
            t = self.teamwork.set_blocked_by(task_id, _ids(input, "blocked_by"), self.agent)
            done.append(f"blocked by {_refs(t.blocked_by) or 'nothing'} ({t.status})")
        if owner is not None:
            done.append(self._reassign(task_id, owner))
        if status == "completed":
            out = self._complete(task_id, result)
            if out.is_error:
                return out
            done.append(out.content)
            notes += out.tasks
        elif status == "failed":
            t = self.board.fail(task_id, self.agent, result)
            self._event("failed", f"#{t.id} {t.subject}")
            self.teamwork.failed(t, self.agent)
            done.append(f"task #{t.id} marked failed")
        elif status == "in_progress":
            out = self.claim_task({"task_id": task_id})
            done.append(out.content)
            notes += out.tasks
        elif status == "pending":
            t = self.board.release(task_id, self.agent)
            done.append(f"task #{t.id} is pending again (still yours)")
        elif status == "cancelled":
            self._may_manage(task_id)
            t, _ = self.teamwork.cancel(task_id, self.agent)
            done.append(f"task #{t.id} cancelled")
        return ToolResult(f"task #{task_id}: " + "; ".join(done), tasks=tuple(notes))

    def submit_plan(self, input: dict[str, Any]) -> str | ToolResult:
        if not self.plan_approval:
            raise ToolInputError("you do not work under plan approval: just go ahead")
        task_id = need_int(input, "task_id")
        if self.board.get(task_id).plan_state == "approved":
            # said as data too: an agent whose context lost the approval learns it here
            note = (TaskNote(task_id, "plan_approved"),)
            return ToolResult(f"submit_plan: {wording.already_approved(task_id)}", True, note)
        task = self.board.submit_plan(task_id, self.agent, need_str(input, "plan"))
        to = self.teamwork.plan_submitted(task, self.agent)
        self._event("plan_submitted", f"#{task.id} to {to}")
        return (
            f"plan for task #{task.id} sent to {to} for review. End your turn now: the answer "
            "arrives as a message."
        )

    def review_plan(self, input: dict[str, Any]) -> str:
        if self.config.team.lead != self.agent:
            raise ToolInputError("only the lead reviews plans")
        approve = input.get("approve")
        if not isinstance(approve, bool):
            raise ToolInputError(f"'approve' must be true or false, got {approve!r}")
        task_id = need_int(input, "task_id")
        task = self.teamwork.review_plan(task_id, approve, opt_str(input, "feedback"), self.agent)
        self._event("plan_" + (task.plan_state or "reviewed"), f"#{task.id}")
        return f"plan for task #{task.id} {task.plan_state}; {task.owner} is told"

    # -- the parts ----------------------------------------------------------------------

    def _complete(self, task_id: int, result: str | None) -> ToolResult:
        now = time.time()
        task = self.board.get(task_id)  # the task and what it waits on: all the checks need
        records = {task_id: task, **{b: self.board.get(b) for b in task.blocked_by}}
        current = rules.finish(records, task_id, self.agent, "completed", result, now)  # checks
        done = (TaskNote(task_id, "completed", task.subject),)
        if records[task_id].status == "completed":
            return ToolResult(wording.already_completed(task_id), tasks=done)
        if self.plan_approval and current.plan_state != "approved":
            raise TaskError(
                f"task #{task_id} needs an approved plan first: submit_plan and wait for the answer"
            )
        hooks = self.config.hooks
        verdict = run_hook(
            "task_completed",
            hooks.task_completed,
            {
                "team": self.config.team.name,
                "agent": self.agent,
                "workspace": str(self.root),
                "task": {**records[task_id].model_dump(), "result": result},
            },
            cwd=self.ws.root,
            timeout=hooks.timeout,
            sandbox=Sandbox.for_hooks(self.ws, self.config) if hooks.task_completed else None,
        )
        if verdict.refused:
            self._event("completion_refused", f"#{task_id}")
            return ToolResult(
                f"complete_task: the task_completed hook refused task #{task_id}; it is still "
                f"yours and in progress. The hook says:\n{verdict.reason}",
                is_error=True,
            )
        task = self.board.complete(task_id, self.agent, result)
        self._event("completed", f"#{task.id} {task.subject}")
        saved = self._commit(task)
        freed = self.teamwork.completed(task, self.agent)
        after = f"; unblocked {_refs(t.id for t in freed)}" if freed else ""
        return ToolResult(wording.completed(task.id, task.subject, saved + after), tasks=done)

    def _commit(self, task: Task) -> str:
        if self.config.team.isolation != "worktree":
            return ""
        try:
            commit = worktrees.commit_all(
                self.ws.worktree_dir(self.agent),
                self.agent,
                f"{self.agent}: task #{task.id} {task.subject}",
            )
        except worktrees.WorktreeError as e:
            log.warning(
                "%s: could not commit its worktree after task #%s: %s", self.agent, task.id, e
            )
            return f" (committing your worktree failed: {e})"
        branch = worktrees.branch_of(self.agent)
        return f" (committed {commit} on {branch})" if commit else ""

    def _reassign(self, task_id: int, owner: str) -> str:
        require_worker(self.config, owner, noun="teammate")
        if self.board.get(task_id).owner not in (None, self.agent):
            self._may_manage(task_id)
        _, was = self.teamwork.reassign(task_id, owner, self.agent)
        return f"{owner} has it already" if was == owner else f"handed to {owner}"

    def _may_manage(self, task_id: int) -> None:
        """The lead, the task's creator or its owner may change it; nobody else."""
        task = self.board.get(task_id)
        if self.agent in (self.config.team.lead, task.created_by, task.owner):
            return
        raise TaskError(
            f"task #{task_id} is not yours to change (created by {task.created_by}, "
            f"owner {task.owner or 'nobody'}); ask them"
        )

    def _event(self, kind: str, detail: str) -> None:
        if self.sink is not None:
            self.sink.emit(AgentEvent(self.agent, kind, detail))


def _brief(t: Task) -> dict[str, Any]:
    return {"id": t.id, "subject": t.subject, "status": t.status, "owner": t.owner}


def _ids(input: dict[str, Any], key: str) -> list[int]:
    value = input.get(key)
    if value is None:
        return []
    if isinstance(value, int | str):
        value = [value]
    if not isinstance(value, list):
        raise ToolInputError(f"{key!r} must be a list of task ids, got {value!r}")
    return [need_int({key: v}, key) for v in value]


def _refs(ids) -> str:
    return ", ".join(f"#{i}" for i in ids)
