"""The conversation model: messages made of text, tool_use and tool_result blocks.

Plain frozen dataclasses rather than pydantic models: the compaction pipeline walks the
whole history before every model call, and at 10,000 messages validation-on-construct
would dominate the cost of a call. JSON round-trips exactly through `to_dict`/`from_dict`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str

    def to_dict(self) -> dict[str, Any]:
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

    def chars(self) -> int:
        return len(self.name) + len(str(self.input))


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """The result of one tool call.

    `name` is the tool that produced it. The Messages API does not take it, but micro
    compaction needs it for the `[Previous: used <tool>]` placeholder, so it is stored
    here and dropped by `to_api`.
    """

    tool_use_id: str
    content: str
    name: str = ""
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": self.content,
            "name": self.name,
        }
        if self.is_error:
            d["is_error"] = True
        return d

    def chars(self) -> int:
        return len(self.content)


Block = TextBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[Block, ...]

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
        return sum(b.chars() for b in self.content)

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def text(self) -> str:
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


def block_from_dict(d: dict[str, Any]) -> Block:
    kind = d.get("type")
    if kind == "text":
        return TextBlock(d["text"])
    if kind == "tool_use":
        return ToolUseBlock(d["id"], d["name"], dict(d.get("input") or {}))
    if kind == "tool_result":
        content = d.get("content", "")
        if isinstance(content, list):  # the API also allows a list of text blocks
            content = "\n".join(c.get("text", "") for c in content)
        return ToolResultBlock(
            d["tool_use_id"], content, d.get("name", ""), bool(d.get("is_error", False))
        )
    raise ValueError(f"unknown content block type: {kind!r}")


def to_api(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as the Anthropic Messages API takes them (no private fields)."""
    out = []
    for m in messages:
        blocks = []
        for b in m.content:
            d = b.to_dict()
            if d["type"] == "tool_result":
                d.pop("name", None)
            blocks.append(d)
        out.append({"role": m.role, "content": blocks})
    return out


class InvalidConversation(ValueError):
    """A request the Messages API would reject with a 400."""


def problems(messages: list[Message]) -> list[str]:
    """Every reason the Messages API would reject this message list, in order."""
    errs: list[str] = []
    if not messages:
        return ["messages: at least one message is required"]
    if messages[0].role != "user":
        errs.append("messages.0: the first message must use the user role")
    if messages[-1].role != "user":
        errs.append(f"messages.{len(messages) - 1}: the last message must use the user role")
    seen_ids: set[str] = set()
    prev_uses: dict[str, ToolUseBlock] = {}
    for i, m in enumerate(messages):
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
        return f"[tool result {block.name or 'tool'}{flag}]\n{block.content}"
    raise TypeError(block)
