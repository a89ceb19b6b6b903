"""What the loop itself says to the model, one writer each (docs/design.md, "The loop").

Tasks are anything with `id` and `subject` (the board's `Task`, replay's stand-ins).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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


def claimed(task: Any) -> str:
    """The board gave the agent an open task nobody had claimed (read back by
    `team.tasks.wording.parse_claimed`, which lives beside the words)."""
    return wording.claimed_open(task.id, task.subject, task.description)


def untold(tasks: Iterable[Any]) -> str:
    """Tasks the agent owns that its conversation never mentioned (a crash after a claim)."""
    return f"You own these open tasks: {listing(tasks)}. Work on them."


def reminder(tasks: Iterable[Any]) -> str:
    """The turn is ending while the agent still owns tasks it can act on."""
    return (
        f"Reminder: you still own open tasks: {listing(tasks)}. Complete them "
        "with complete_task, or say why you cannot."
    )


def keep_working(why: str) -> str:
    """The teammate_idle hook's answer, when it keeps the agent working."""
    return f"Keep working (teammate_idle hook): {why}"
