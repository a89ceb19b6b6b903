"""The message that travels between inboxes (docs/design.md, "Inboxes").

A plain frozen dataclass with its own checks, not a pydantic model: `team send` writes
one and `team status` counts them, and importing pydantic alone cost those commands
more than the rest of their work (issue 27, bench/README.md). One writer (`to_json`),
one reader (`model_validate_json`), the same JSON on disk as the pydantic model wrote:
`{"id", "type", "from", "to", "content", "timestamp", "task_id", "approved"}` then any
extra keys, compact, UTF-8. The methods keep the names pydantic gave them, so callers
did not change.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

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
MESSAGE_TYPES: tuple[str, ...] = get_args(MessageType)
FIELDS = ("id", "type", "from", "to", "content", "timestamp", "task_id", "approved")
"""The keys of a message on disk, in the order they are written."""


class MessageError(ValueError):
    """A message that is not one: `field` names the key, `reason` says what is wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


MESSAGE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
"""A message id: ours are uuid4 hex; a sender may choose its own (`team send --id`)."""


def _new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, kw_only=True)
class MailMessage:
    """One message: one JSON file in an inbox. Extra keys are kept, not rejected.

    Construct with `sender=`; on disk (and to `model_validate`) the key is `from`.

    Raises:
        MessageError: a value of the wrong type, an unknown `type`, or text that is not
            UTF-8 (a stray byte of a command line).
    """

    id: str = field(default_factory=_new_id)
    type: MessageType = "message"
    sender: str
    to: str
    content: str
    timestamp: float = field(default_factory=time.time)
    task_id: int | None = None
    approved: bool | None = None
    """A `plan_response`: whether the plan was approved (the text says it for the model)."""
    model_extra: dict[str, Any] = field(default_factory=dict)
    """Keys the message carried that are none of the above, kept as they came."""

    def __post_init__(self) -> None:
        for name in ("id", "sender", "to", "content"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise MessageError(_key(name), f"must be a string, got {type(value).__name__}")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise MessageError(_key(name), "not UTF-8 text") from None
        if not MESSAGE_ID.match(self.id):
            raise MessageError("id", f"must match {MESSAGE_ID.pattern}, got {self.id[:80]!r}")
        if self.type not in MESSAGE_TYPES:
            known = ", ".join(MESSAGE_TYPES)
            raise MessageError("type", f"must be one of {known}, got {self.type!r}")
        ts = self.timestamp
        if isinstance(ts, bool) or not isinstance(ts, int | float):
            raise MessageError("timestamp", f"must be a number, got {type(ts).__name__}")
        if isinstance(ts, int):
            object.__setattr__(self, "timestamp", float(ts))
        if self.task_id is not None and (
            isinstance(self.task_id, bool) or not isinstance(self.task_id, int)
        ):
            raise MessageError("task_id", f"must be a whole number, got {self.task_id!r}")
        if self.approved is not None and not isinstance(self.approved, bool):
            raise MessageError("approved", f"must be true or false, got {self.approved!r}")
        if not isinstance(self.model_extra, dict):
            raise MessageError("model_extra", "must be a dict")

    @classmethod
    def model_validate(cls, data: Any) -> MailMessage:
        """A message from its JSON object (`from`, or `sender`, for the sender)."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise MessageError("(top level)", f"must be an object, got {type(data).__name__}")
        data = dict(data)
        if "from" in data:
            sender = data.pop("from")
            data.pop("sender", None)
        elif "sender" in data:
            sender = data.pop("sender")
        else:
            raise MessageError("from", "required key is missing")
        known = {k: data.pop(k) for k in FIELDS if k in data}
        for required in ("to", "content"):
            if required not in known:
                raise MessageError(required, "required key is missing")
        return cls(sender=sender, **known, model_extra=data)

    @classmethod
    def model_validate_json(cls, raw: bytes | str) -> MailMessage:
        """Parse one message file. Raises ValueError (MessageError, or bad JSON/UTF-8)."""
        return cls.model_validate(json.loads(raw))

    def model_dump(self, mode: str = "json", by_alias: bool = True) -> dict[str, Any]:
        """The message as its JSON object (`from` for the sender unless `by_alias=False`)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        extra = out.pop("model_extra")
        if by_alias:
            out = {_key(k): v for k, v in out.items()}
        return {**out, **{k: v for k, v in extra.items() if k not in out}}

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self, update: dict[str, Any] | None = None) -> MailMessage:
        """A copy with `update`'s fields replaced (checked like a new message)."""
        return dataclasses.replace(self, **(update or {}))

    def as_mail(self) -> InboxMail:
        """The message as the model is shown it, as data (`AgentFacts.new_mail`)."""
        from team.core.conversation import InboxMail

        return InboxMail(self.sender, self.type, self.id, self.task_id, self.content, self.approved)

    def as_block(self) -> TextBlock:
        """The message as user content: its text rendered from its data."""
        from team.core.conversation import TextBlock

        return TextBlock.of_mail(self.as_mail())


def _key(name: str) -> str:
    return "from" if name == "sender" else name


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
