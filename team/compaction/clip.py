"""Bounding one huge block: what the model and the summariser see of a 10 MB message.

The stored history, the session log and the transcripts keep the full text; only what
is sent is cut. A block larger than `BLOCK_CHARS` keeps its head and its tail, joined by
a note saying how much was left out and where the whole of it is. That keeps one giant
message from making every request too long for the context window, and keeps every
text scan on the hot path (the sim's reading, summaries) bounded.
"""

from __future__ import annotations

from dataclasses import replace

from team.core.conversation import Block, Message, TextBlock, ToolResultBlock
from team.core.prefix import common_prefix

BLOCK_CHARS = 100_000
"""~25,000 tokens: far below any context window, above the file and bash tools' caps."""
HEAD_SHARE = 0.75


def clip_text(text: str, limit: int = BLOCK_CHARS, where: str = "the session log") -> str:
    """`text` itself when it fits in `limit` characters, else its head and tail with a note."""
    if len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    tail = limit - head
    note = (
        f"\n[... {len(text) - limit:,} of {len(text):,} characters cut here: too large for "
        f"the context. The full text is kept in {where}.]\n"
    )
    return text[:head] + note + text[len(text) - tail :]


WHERE = "the session log and the transcript"


def clip_block(block: Block, limit: int = BLOCK_CHARS) -> Block:
    # `replace` keeps the block's data (its mail, its task notes): only the text is cut
    if isinstance(block, TextBlock) and len(block.text) > limit:
        return replace(block, text=clip_text(block.text, limit, WHERE))
    if isinstance(block, ToolResultBlock) and len(block.content) > limit:
        return replace(block, content=clip_text(block.content, limit, WHERE))
    return block


def clip_messages(messages: list[Message], limit: int = BLOCK_CHARS) -> list[Message]:
    """The messages with every oversized block clipped (the same objects when none is)."""
    out = []
    for m in messages:
        # no block is larger than its message (`chars` counts each block's text and more)
        if m.chars() > limit and any(_size(b) > limit for b in m.content):
            m = Message(m.role, tuple(clip_block(b, limit) for b in m.content))
        out.append(m)
    return out


class Clipper:
    """`clip_messages` for one stream of requests, each re-sending the last one's history:
    only the messages after the part both begin with alike are looked at again."""

    def __init__(self, limit: int = BLOCK_CHARS) -> None:
        self.limit = limit
        self._sent: list[Message] = []
        self._clipped: list[Message] = []

    def __call__(self, messages: list[Message]) -> list[Message]:
        same = common_prefix(messages, self._sent)
        out = self._clipped[:same] + clip_messages(messages[same:], self.limit)
        self._sent, self._clipped = list(messages), out
        return out


def _size(block: Block) -> int:
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ToolResultBlock):
        return len(block.content)
    return 0
