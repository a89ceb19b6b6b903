"""The message that travels between inboxes (docs/design.md, "Inboxes")."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from team.core.conversation import Message, TextBlock, ToolResultBlock


@dataclass(frozen=True, slots=True)
class InboxMail:
    """One inbox message as the model is shown it, as data (`MailMessage.as_prompt` writes it)."""

    sender: str
    type: str
    id: str
    task: int | None
    body: str


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


class MailMessage(BaseModel):
    """One message: one JSON file in an inbox. Extra keys are kept, not rejected."""

    # pydantic-core keeps the strings it parses from JSON in one process-wide cache of
    # ~16,000 entries; the values here (ids, times, texts) are nearly all new, so caching
    # them only fills it (~1.5 MiB) over a long run. Field names repeat: those are kept.
    model_config = ConfigDict(extra="allow", populate_by_name=True, cache_strings="keys")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    type: MessageType = "message"
    sender: str = Field(alias="from")
    to: str
    content: str
    timestamp: float = Field(default_factory=time.time)
    task_id: int | None = None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)

    def as_mail(self) -> InboxMail:
        """The message as the model is shown it, as data (`AgentFacts.new_mail`)."""
        return InboxMail(self.sender, self.type, self.id, self.task_id, self.content)

    def as_prompt(self) -> str:
        """How the message reaches the model: sender, type and id in view."""
        return render_prompt(self.as_mail())


# The one writer of the <message> envelope and, beside it, its one reader: only for the
# older mail a context still holds as text (new mail reaches a model as `AgentFacts`).
_OPEN = '<message from="'
_CLOSE = "\n</message>"
_HEAD = re.compile(
    r'<message from="([^"\n]{0,200})" type="([^"\n]{0,64})" id="([^"\n]{0,200})"'
    r'(?: task="(\d{1,18})")?>\n'
)


def render_prompt(mail: InboxMail) -> str:
    task = f' task="{mail.task}"' if mail.task is not None else ""
    return (
        f'<message from="{mail.sender}" type="{mail.type}" id="{mail.id}"{task}>\n'
        f"{mail.body}{_CLOSE}"
    )


def parse_prompts(text: str) -> list[InboxMail]:
    """The messages `render_prompt` wrote into `text`, in order.

    Linear in the text: each character is looked at a bounded number of times (a 10 MB
    message must not stall the reader), so a message whose body holds the closing tag
    ends there.
    """
    out: list[InboxMail] = []
    at = text.find(_OPEN)
    while at >= 0:
        head = _HEAD.match(text, at)
        if head is None:
            at = text.find(_OPEN, at + 1)
            continue
        end = text.find(_CLOSE, head.end())
        if end < 0:
            break  # unclosed: nothing after it can be a whole message either
        body = text[head.end() : end]
        task = int(head[4]) if head[4] else None
        out.append(InboxMail(head[1], head[2], head[3], task, body))
        at = text.find(_OPEN, end + len(_CLOSE))
    return out


def unanswered_mail(messages: list[Message]) -> list[InboxMail]:
    """The mail in the user turns after the last reply: taken in before a crash, never
    answered, so the next request's facts still name it as new."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    out: list[InboxMail] = []
    for m in messages[last + 1 :]:
        for b in m.content:
            if isinstance(b, TextBlock):
                out += parse_prompts(b.text)
            elif isinstance(b, ToolResultBlock) and b.name == "read_inbox":
                out += parse_prompts(b.content)
    return out
