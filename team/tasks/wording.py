"""What the board tools tell the agent about a task: the one writer of each line.

`team.agents.tools.task_tools` (and the loop, for a task it claims itself) write these
lines into what the model reads. Nothing reads them back: the same facts travel as data
beside the text (`TaskNote` on the block), so the words can change freely.
"""

from __future__ import annotations

PLAN_NOTE = " Submit your plan (submit_plan) before changing files."


def claimed(task_id: int, subject: str, *, plan_note: bool = False) -> str:
    """The result of a successful `claim_task`."""
    return f"claimed task #{task_id}: {subject}{PLAN_NOTE if plan_note else ''}"


def already_claimed(task_id: int, subject: str) -> str:
    return f"task #{task_id} is already yours and in progress: {subject}"


def claimed_open(task_id: int, subject: str, description: str = "") -> str:
    """What the loop tells an idle agent that took an open task from the board."""
    return f"You claimed open task #{task_id}: {subject}\n{description}".strip()


def created(task_id: int, subject: str, *, owner: str | None, waits_on: str = "") -> str:
    """The result of `create_task`; `waits_on` names the tasks it is blocked by."""
    who = f"for {owner}" if owner else "open for anyone"
    waits = f", blocked by {waits_on}" if waits_on else ""
    return f"created task #{task_id} ({who}{waits}): {subject}"


def completed(task_id: int, subject: str, tail: str = "") -> str:
    """The result of a completion; `tail` says what else happened (commit, unblocked)."""
    return f"completed task #{task_id}: {subject}{tail}"


def already_completed(task_id: int) -> str:
    return f"task #{task_id} was already completed"


def plan_answer(task_id: int, approved: bool, feedback: str | None) -> str:
    """The review of a plan, as its owner is told it (a `plan_response` message)."""
    if approved:
        note = f" Note: {feedback}" if feedback else ""
        return f"Your plan for task #{task_id} is approved: go ahead.{note}"
    return (
        f"Your plan for task #{task_id} is rejected: {feedback}\nRevise it and submit_plan again."
    )


def already_approved(task_id: int) -> str:
    """Why `submit_plan` refuses a plan that was approved already."""
    return f"the plan for task #{task_id} is already approved: go ahead"
