"""The message that travels between inboxes (docs/design.md, "Inboxes")."""

from __future__ import annotations

import re
import time
import uuid
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # imported where used: `team send` writes mail, it builds no conversation
    from team.core.conversation import InboxMail, Message, TextBlock

MessageType = Literal[
    "message",
    "broadcast",
    "task",
    "shutdown_request",
    "shutdown_response",
    "goal",  # `team goal`, to the lead
    "notice",  # the team telling an agent: a teammate idle, done or failed
    "revoked",  # your task was cancelled or handed to another agent: stop working on it
    "plan_request",  # a plan waiting for review (to the lead, or to the user)
    "plan_response",  # the review: approved, or rejected with the reason
]


MESSAGE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
"""A message id: ours are uuid4 hex; a sender may choose its own (`team send --id`)."""


class MailMessage(BaseModel):
    """One message: one JSON file in an inbox. Extra keys are kept, not rejected."""

    # pydantic-core keeps the strings it parses from JSON in one process-wide cache of
    # ~16,000 entries; the values here (ids, times, texts) are nearly all new, so caching
    # them only fills it (~1.5 MiB) over a long run. Field names repeat: those are kept.
    model_config = ConfigDict(extra="allow", populate_by_name=True, cache_strings="keys")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex, pattern=MESSAGE_ID.pattern)
    type: MessageType = "message"
    sender: str = Field(alias="from")
    to: str
    content: str
    timestamp: float = Field(default_factory=time.time)
    task_id: int | None = None

    approved: bool | None = None
    """A `plan_response`: whether the plan was approved (the text says it for the model)."""

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)

    def as_mail(self) -> InboxMail:
        """The message as the model is shown it, as data (`AgentFacts.new_mail`)."""
        from team.core.conversation import InboxMail

        return InboxMail(self.sender, self.type, self.id, self.task_id, self.content, self.approved)

    def as_block(self) -> TextBlock:
        """The message as user content: its text rendered from its data."""
        from team.core.conversation import TextBlock

        return TextBlock.of_mail(self.as_mail())


def unanswered_mail(messages: list[Message]) -> list[InboxMail]:
    """The mail in the user turns after the last reply: taken in before a crash, never
    answered, so the next request's facts still name it as new."""
    from team.core.conversation import TextBlock, ToolResultBlock

    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    out: list[InboxMail] = []
    for m in messages[last + 1 :]:
        for b in m.content:
            if isinstance(b, TextBlock) and b.mail is not None:
                out.append(b.mail)
            elif isinstance(b, ToolResultBlock):
                out += b.mail
    return out


def told_tasks(messages: list[Message]) -> set[int]:
    """The ids of every task the conversation has told the agent about, from the
    blocks' data: task mail, board results, nudges, the identity block after a
    compaction, and the agent's own calls that name a task."""
    from team.core.conversation import ToolResultBlock, ToolUseBlock

    known: set[int] = set()
    for m in messages:
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                task = str(b.input.get("task_id", "")).strip().lstrip("#")
                if task.isdigit():
                    known.add(int(task))
                continue
            known.update(n.id for n in b.tasks)
            mails = b.mail if isinstance(b, ToolResultBlock) else (b.mail,) if b.mail else ()
            known.update(x.task for x in mails if x.task is not None)
    return known
