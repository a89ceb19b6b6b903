"""The message that travels between inboxes (docs/design.md, "Inboxes")."""

from __future__ import annotations

import time
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    type: MessageType = "message"
    sender: str = Field(alias="from")
    to: str
    content: str
    timestamp: float = Field(default_factory=time.time)
    task_id: int | None = None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True)

    def as_prompt(self) -> str:
        """How the message reaches the model: sender, type and id in view."""
        task = f' task="{self.task_id}"' if self.task_id is not None else ""
        return (
            f'<message from="{self.sender}" type="{self.type}" id="{self.id}"{task}>\n'
            f"{self.content}\n</message>"
        )
