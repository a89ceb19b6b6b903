"""What the board tools tell the agent about a task, and the one reader of each line.

`team.agents.tools.task_tools` (and the loop, for a task it claims itself) write these lines
into tool results the model reads; the simulator and replay read the task id back from
them. Writer and reader live together so a change of wording changes both.
"""

from __future__ import annotations

import re

PLAN_NOTE = " Submit your plan (submit_plan) before changing files."

_CLAIMED = re.compile(r"(?:You claimed open|claimed) task #(\d{1,18}): ([^\n]*)")
_ALREADY = re.compile(r"task #(\d{1,18}) is already yours and in progress: ([^\n]*)")
_CREATED = re.compile(r"created task #(\d{1,18}) ")
_PLAN = re.compile(r"Your plan for task #\d{1,18} is (approved|rejected)")
_ALREADY_APPROVED = re.compile(r"the plan for task #\d{1,18} is already approved")
_COMPLETED = re.compile(r"completed task #(\d{1,18}): |task #(\d{1,18}) was already completed")


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


def parse_claimed(text: str) -> tuple[int, str] | None:
    """(id, subject) of a claim line (`claimed`, `already_claimed`, `claimed_open`)."""
    m = _CLAIMED.match(text) or _ALREADY.match(text)
    if m is None:
        return None
    return int(m[1]), m[2].removesuffix(PLAN_NOTE).strip()


def parse_created(text: str) -> int | None:
    """The id in a `created` line."""
    m = _CREATED.match(text)
    return int(m[1]) if m else None


def parse_completed(text: str) -> int | None:
    """The id in a `completed` (or `already_completed`) line."""
    m = _COMPLETED.match(text)
    return int(m[1] or m[2]) if m else None


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


def parse_plan_answer(text: str) -> bool | None:
    """True for an approval, False for a rejection (`plan_answer`), None for neither."""
    m = _PLAN.match(text)
    return None if m is None else m[1] == "approved"


def says_already_approved(text: str) -> bool:
    """Whether a `submit_plan` result is the `already_approved` refusal."""
    return _ALREADY_APPROVED.search(text[:300]) is not None
