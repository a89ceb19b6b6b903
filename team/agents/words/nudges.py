"""What the loop itself says to the model, one writer each (docs/design.md, "The loop").

A nudge that names tasks is a `TextBlock` that carries them as data too (`TaskNote`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from team.core.conversation import TaskNote, TextBlock
from team.tasks import wording

CUT_CALL = (
    "Not run: your reply was cut off at the max_tokens limit in the middle of this call, "
    "so its input is incomplete. Send it again (split it up if it is large)."
)
CONTINUE = "Your last reply was cut off at the max_tokens limit. Continue from where it stopped."
COMPACTING = "Compacting now: you will continue from a summary of your work."
COMPACT_FAILED = "compact failed; your conversation is unchanged. Go on."
NO_MESSAGES = "No new messages."
GOING_IDLE = "Going idle."


def listing(tasks: Iterable[Any]) -> str:
    """`#3 fix the parser; #7 review`: how every nudge names tasks."""
    return "; ".join(f"#{t.id} {t.subject}" for t in tasks)


def claimed(task: Any) -> TextBlock:
    """The board gave the agent an open task nobody had claimed."""
    text = wording.claimed_open(task.id, task.subject, task.description)
    return TextBlock(text, tasks=(TaskNote(task.id, "claimed", task.subject),))


def untold(tasks: list[Any]) -> TextBlock:
    """Tasks the agent owns that its conversation never mentioned (a crash after a claim)."""
    return TextBlock(
        f"You own these open tasks: {listing(tasks)}. Work on them.", tasks=_open(tasks)
    )


def reminder(tasks: list[Any]) -> TextBlock:
    """The turn is ending while the agent still owns tasks it can act on."""
    text = (
        f"Reminder: you still own open tasks: {listing(tasks)}. Complete them "
        "with complete_task, or say why you cannot."
    )
    return TextBlock(text, tasks=_open(tasks))


def _open(tasks: Iterable[Any]) -> tuple[TaskNote, ...]:
    return tuple(TaskNote(t.id, "open", t.subject) for t in tasks)


def keep_working(why: str) -> str:
    """The teammate_idle hook's answer, when it keeps the agent working."""
    return f"Keep working (teammate_idle hook): {why}"
