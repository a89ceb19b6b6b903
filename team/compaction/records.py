"""The records an agent's conversation is made of: one line each in its session log.

An agent's conversation changes only by these records. They are appended to
`.team/agents/<agent>/session.jsonl` (see `team.agents.session.log`) and folded into a
`History` by `History.apply`, the same fold live, at resume and in replay. The format
is part of the contract: docs/design.md, "The session log".

    {"t": "user", "blocks": [...], "inbox": [ids]}
    {"t": "assistant", "message": {...}, "usage": {...}}
    {"t": "compaction", "layer": ..., "first": {...}, "transcript": ..., figures...}
    {"t": "note", ...}

Logs written before the records were typed have the same keys with fewer figures, so
they load unchanged: every field added since has a default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from team.core.conversation import Block, Message, block_from_dict
from team.llm.base import Usage


@dataclass(frozen=True, slots=True)
class UserTurn:
    """User content (inbox messages, tool results, reminders); `inbox` are the ids of
    the mail it carries, which is how intake knows a message was taken in."""

    blocks: tuple[Block, ...]
    inbox: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"t": "user", "blocks": [b.to_dict() for b in self.blocks]}
        if self.inbox:
            d["inbox"] = list(self.inbox)
        return d


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """One model reply, with the usage the provider reported for that call."""

    message: Message
    usage: Usage = field(default_factory=Usage)
    cleared: tuple[str, ...] = ()
    """Tool results micro-compaction newly replaced in the request this reply answers
    (their tool_use ids): what the model saw, for `team log`. The fold ignores it."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "t": "assistant",
            "message": self.message.to_dict(),
            "usage": asdict(self.usage),
            "cleared": list(self.cleared),
        }


@dataclass(frozen=True, slots=True)
class Compaction:
    """A new segment begins with `first` (identity block, summary, transcript path).

    The figures describe what happened; the fold uses `tokens_after` (raised to the
    segment's first recorded input) as the floor the context must grow past before the
    next auto compaction (`team.compaction.auto`).
    """

    layer: str  # "auto" or "manual"
    first: Message
    transcript: str = ""  # workspace-relative path of the archived segment
    trigger: str = ""
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    summary_chars: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = {"t": "compaction", **{k: getattr(self, k) for k in _COMPACTION_FIGURES}}
        d["first"] = self.first.to_dict()
        return d


_COMPACTION_FIGURES = (
    "layer",
    "transcript",
    "trigger",
    "tokens_before",
    "tokens_after",
    "messages_before",
    "summary_chars",
)


@dataclass(frozen=True, slots=True)
class Note:
    """Something worth keeping that does not change the conversation (a shutdown)."""

    fields: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**self.fields, "t": "note"}


Record = UserTurn | AssistantTurn | Compaction | Note
KINDS = ("user", "assistant", "compaction", "note")


def record_from_dict(d: dict[str, Any]) -> Record:
    """The record a session-log line holds.

    Raises:
        ValueError, KeyError, TypeError: the line is not a record.
    """
    if not isinstance(d, dict):
        raise TypeError("a record is a JSON object")
    kind = d.get("t")
    if kind == "user":
        blocks = tuple(block_from_dict(b) for b in d["blocks"])
        return UserTurn(blocks, tuple(str(i) for i in d.get("inbox", ())))
    if kind == "assistant":
        return AssistantTurn(
            Message.from_dict(d["message"]),
            Usage(**d.get("usage", {})),
            tuple(str(i) for i in d.get("cleared", ())),
        )
    if kind == "compaction":
        figures = {k: d[k] for k in _COMPACTION_FIGURES if d.get(k) is not None}
        return Compaction(first=Message.from_dict(d["first"]), **figures)
    if kind == "note":
        return Note({k: v for k, v in d.items() if k != "t"})
    raise ValueError(f"unknown record type {kind!r}")
