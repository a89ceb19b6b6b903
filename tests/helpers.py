"""Builders for conversations used across the compaction tests."""

from __future__ import annotations

from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock


def tool_round(i: int, name: str = "bash", output: str | None = None, *, text: str | None = None):
    """An assistant tool call and the user turn carrying its result."""
    out = output if output is not None else f"output of call {i}: " + "x" * 300
    blocks = ((TextBlock(text),) if text else ()) + (ToolUseBlock(f"id{i}", name, {"n": i}),)
    return [Message("assistant", blocks), Message("user", (ToolResultBlock(f"id{i}", out, name),))]


def conversation(n_rounds: int, name: str = "bash", size: int = 300) -> list[Message]:
    msgs = [Message.user("Please work on task #1: fix src/parser.py")]
    for i in range(n_rounds):
        msgs += tool_round(i, name, f"output of call {i}: " + "x" * size)
    return msgs
