"""The conversation model: messages made of text, tool_use and tool_result blocks.

Plain frozen dataclasses rather than pydantic models: the compaction pipeline walks the
whole history before every model call, and at 10,000 messages validation-on-construct
would dominate the cost of a call. JSON round-trips exactly through `to_dict`/`from_dict`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from team.core.images import ImageBlock

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class InboxMail:
    """One inbox message as the model is shown it, as data.

    A mail block's text is rendered from this (`render`, the one writer of the
    envelope), so code that needs the sender, type, id or task reads these fields,
    never the text.
    """

    sender: str
    type: str
    id: str
    task: int | None
    body: str
    approved: bool | None = None
    """A `plan_response`: whether the plan was approved."""

    def render(self) -> str:
        task = f' task="{self.task}"' if self.task is not None else ""
        if self.approved is not None:
            task += f' approved="{"yes" if self.approved else "no"}"'
        head = f'<message from="{self.sender}" type="{self.type}" id="{self.id}"{task}>'
        return f"{head}\n{self.body}\n</message>"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"from": self.sender, "type": self.type, "id": self.id}
        if self.task is not None:
            d["task"] = self.task
        if self.approved is not None:
            d["approved"] = self.approved
        d["body"] = self.body
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InboxMail:
        task = d.get("task")
        approved = d.get("approved")
        return cls(
            str(d["from"]),
            str(d["type"]),
            str(d["id"]),
            None if task is None else int(task),
            str(d["body"]),
            None if approved is None else bool(approved),
        )


TaskEvent = Literal["open", "claimed", "created", "completed", "plan_approved"]


@dataclass(frozen=True, slots=True)
class TaskNote:
    """What a block tells the agent about one task, as data (its text is for the model).

    `open`: the agent owns it (identity block, reminders); `claimed`: it became the
    agent's; `created`: the agent put it on the board; `completed`: it is done;
    `plan_approved`: its plan is approved (a refused resubmission says so).
    """

    id: int
    event: TaskEvent
    subject: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "event": self.event}
        if self.subject:
            d["subject"] = self.subject
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskNote:
        return cls(int(d["id"]), d["event"], str(d.get("subject", "")))


def _notes(d: dict[str, Any]) -> tuple[TaskNote, ...]:
    return tuple(TaskNote.from_dict(n) for n in d.get("tasks") or ())


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Text for the model. `mail`: the inbox message it renders (when the text is the
    whole rendering, the log keeps only the mail and renders it again on load); `tasks`:
    what it says about tasks."""

    text: str
    mail: InboxMail | None = None
    tasks: tuple[TaskNote, ...] = ()

    @classmethod
    def of_mail(cls, mail: InboxMail) -> TextBlock:
        return cls(mail.render(), mail=mail)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "text"}
        if self.mail is None or self.text != self.mail.render():  # e.g. a carried mail, cut
            d["text"] = self.text
        if self.mail is not None:
            d["mail"] = self.mail.to_dict()
        if self.tasks:
            d["tasks"] = [n.to_dict() for n in self.tasks]
        return d

    def to_api(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}

    def chars(self) -> int:
        return len(self.text)


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}

    def to_api(self) -> dict[str, Any]:
        return self.to_dict()

    def chars(self) -> int:
        return len(self.name) + len(str(self.input))


INTERRUPTED = (
    "Interrupted: the team stopped before this tool call finished, so its result is "
    "unknown. Run it again if you still need it."
)
"""The result a resumed agent is given for a call its crash cut off (the model reads it)."""


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """The result of one tool call.

    `name` is the tool that produced it. The Messages API does not take it, but micro
    compaction needs it for the `[Previous: used <tool>]` placeholder, so it is stored
    here and dropped by `to_api`. `mail` (the messages a `read_inbox` handed over) and
    `tasks` (what a board tool did) are the result's facts as data, never sent.
    `images` follow the text (`content`) in what is sent; a result without them is sent
    as its text alone, as the API's plain string.
    """

    tool_use_id: str
    content: str
    name: str = ""
    is_error: bool = False
    mail: tuple[InboxMail, ...] = ()
    tasks: tuple[TaskNote, ...] = ()
    images: tuple[ImageBlock, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": self.content,
            "name": self.name,
        }
        if self.is_error:
            d["is_error"] = True
        if self.mail:
            d["mail"] = [m.to_dict() for m in self.mail]
        if self.tasks:
            d["tasks"] = [n.to_dict() for n in self.tasks]
        if self.images:
            d["images"] = [i.to_dict() for i in self.images]
        return d

    def to_api(self) -> dict[str, Any]:
        content: str | list[dict[str, Any]] = self.content
        if self.images:  # the API refuses an empty text block: an image-only result has none
            text = [{"type": "text", "text": self.content}] if self.content.strip() else []
            content = text + [i.to_api() for i in self.images]
        d: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": content,
        }
        if self.is_error:
            d["is_error"] = True
        return d

    def chars(self) -> int:
        n = len(self.content)
        return n + sum(i.chars() for i in self.images) if self.images else n


Block = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[Block, ...]
    # chars(), counted once: the compactor and the loop count the whole history before
    # every call, and a message never changes (its blocks are frozen too)
    _chars: int = field(default=-1, init=False, repr=False, compare=False)

    @classmethod
    def user(cls, *blocks: Block | str) -> Message:
        return cls("user", tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks))

    @classmethod
    def assistant(cls, *blocks: Block | str) -> Message:
        return cls("assistant", tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks))

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": [b.to_dict() for b in self.content]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        return cls(d["role"], tuple(block_from_dict(b) for b in d["content"]))

    def chars(self) -> int:
        n = self._chars
        if n < 0:
            n = sum(b.chars() for b in self.content)
            object.__setattr__(self, "_chars", n)
        return n

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def text(self) -> str:
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


def block_from_dict(d: dict[str, Any]) -> Block:
    kind = d.get("type")
    if kind == "text":
        mail = InboxMail.from_dict(d["mail"]) if d.get("mail") is not None else None
        text = d["text"] if "text" in d or mail is None else mail.render()
        return TextBlock(text, mail, _notes(d))
    if kind == "tool_use":
        return ToolUseBlock(d["id"], d["name"], dict(d.get("input") or {}))
    if kind == "tool_result":
        content = d.get("content", "")
        images = [ImageBlock.from_dict(i) for i in d.get("images") or ()]
        if isinstance(content, list):  # the API's shape: a list of text and image blocks
            images += [ImageBlock.from_dict(c) for c in content if c.get("type") == "image"]
            content = "\n".join(c.get("text", "") for c in content if c.get("type") == "text")
        return ToolResultBlock(
            d["tool_use_id"],
            content,
            d.get("name", ""),
            bool(d.get("is_error", False)),
            tuple(InboxMail.from_dict(m) for m in d.get("mail") or ()),
            _notes(d),
            tuple(images),
        )
    raise ValueError(f"unknown content block type: {kind!r}")


def to_api(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as the Anthropic Messages API takes them (no private fields)."""
    return [{"role": m.role, "content": [b.to_api() for b in m.content]} for m in messages]


class InvalidConversation(ValueError):
    """A request the Messages API would reject with a 400."""


def problems(messages: list[Message]) -> list[str]:
    """Every reason the Messages API would reject this message list, in order."""
    return _problems(messages, 0, set())


def _problems(messages: list[Message], start: int, seen_ids: set[str]) -> list[str]:
    """`problems`, with the messages before `start` known to have none of their own
    (a valid conversation, whose tool_use ids are `seen_ids`), so they are not read."""
    errs: list[str] = []
    if not messages:
        return ["messages: at least one message is required"]
    if messages[0].role != "user":
        errs.append("messages.0: the first message must use the user role")
    if messages[-1].role != "user":
        errs.append(f"messages.{len(messages) - 1}: the last message must use the user role")
    prev_uses: dict[str, ToolUseBlock] = {}
    for i in range(start, len(messages)):
        m = messages[i]
        if m.role not in ("user", "assistant"):
            errs.append(f"messages.{i}: unknown role {m.role!r}")
        if not m.content:
            errs.append(f"messages.{i}: content must be non-empty")
        uses_here: dict[str, ToolUseBlock] = {}
        answered: set[str] = set()
        after_other = False
        for j, b in enumerate(m.content):
            where = f"messages.{i}.content.{j}"
            if isinstance(b, TextBlock):
                if not b.text.strip():
                    errs.append(f"{where}: text content blocks must contain non-whitespace text")
                after_other = True
            elif isinstance(b, ToolUseBlock):
                if m.role != "assistant":
                    errs.append(f"{where}: tool_use blocks are only allowed in assistant turns")
                if b.id in seen_ids:
                    errs.append(f"{where}: tool_use ids must be unique ({b.id})")
                seen_ids.add(b.id)
                uses_here[b.id] = b
            elif isinstance(b, ToolResultBlock):
                if m.role != "user":
                    errs.append(f"{where}: tool_result blocks are only allowed in user turns")
                if after_other:
                    errs.append(f"{where}: tool_result blocks must come first in the message")
                if b.tool_use_id not in prev_uses:
                    errs.append(
                        f"{where}: unexpected tool_use_id {b.tool_use_id}: no corresponding "
                        "tool_use block in the previous message"
                    )
                if b.tool_use_id in answered:
                    errs.append(f"{where}: duplicate tool_result for {b.tool_use_id}")
                answered.add(b.tool_use_id)
                for k, image in enumerate(b.images):
                    if (why := image.problem()) is not None:
                        errs.append(f"{where}.content.{k}: image refused: {why}")
        missing = [uid for uid in prev_uses if uid not in answered]
        if missing:
            errs.append(
                f"messages.{i}: tool_use ids were found without tool_result blocks "
                f"immediately after: {', '.join(missing)}"
            )
        prev_uses = uses_here
    if prev_uses:
        errs.append("the last assistant message has tool_use blocks without results")
    return errs


def validate(messages: list[Message]) -> None:
    """Raise `InvalidConversation` if the Messages API would reject these messages."""
    errs = problems(messages)
    if errs:
        raise InvalidConversation("; ".join(errs))


class Validator:
    """`validate` for one conversation sent again and again as it grows.

    A request that begins with the whole of the last valid one (equal messages, in
    practice the same objects) is checked from where that one ended: a valid
    conversation ends with a user message, which has no tool calls to answer, so
    nothing before it can make a later message wrong. Anything else is checked whole,
    and so is any request found wrong, so the error is always `validate`'s.
    """

    def __init__(self) -> None:
        self._last: list[Message] = []
        self._ids: set[str] = set()

    def validate(self, messages: list[Message]) -> None:
        k = len(self._last)
        grown = 0 < k <= len(messages) and messages[:k] == self._last
        ids = self._ids if grown else set()
        self._last, self._ids = [], set()  # until this one is known to be valid
        if _problems(messages, k if grown else 0, ids):
            validate(messages)  # raises, with every reason from the first message on
        self._last, self._ids = list(messages), ids


def append_user(messages: list[Message], *blocks: Block) -> None:
    """Add user content, merging into a trailing user turn so roles keep alternating.

    Tool results must lead a user turn, so when merging they go before existing text.
    """
    if messages and messages[-1].role == "user":
        old = messages[-1].content
        results = [b for b in old if isinstance(b, ToolResultBlock)]
        others = [b for b in old if not isinstance(b, ToolResultBlock)]
        new_results = [b for b in blocks if isinstance(b, ToolResultBlock)]
        new_others = [b for b in blocks if not isinstance(b, ToolResultBlock)]
        messages[-1] = Message("user", tuple(results + new_results + others + new_others))
    else:
        messages.append(Message("user", tuple(blocks)))


def render_block(block: Block) -> str:
    """A block as plain text: what summaries, repairs and task scans read."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return f"[tool call {block.name} id={block.id}] {json.dumps(block.input)}"
    if isinstance(block, ToolResultBlock):
        flag = " (error)" if block.is_error else ""
        images = "".join(f"\n{i.describe()}" for i in block.images)
        return f"[tool result {block.name or 'tool'}{flag}]\n{block.content}{images}"
    raise TypeError(block)
