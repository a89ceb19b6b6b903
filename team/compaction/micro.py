"""Layer 1, micro: old tool results become `[Previous: used <tool>]` in what is sent.

This is a view over the stored history, never an edit of it: the stored messages keep
the full text, so transcripts and summaries always see what really happened.
"""

from __future__ import annotations

from dataclasses import dataclass

from team.compaction.tokens import chars_to_tokens
from team.config import CompactionConfig
from team.conversation import Message, ToolResultBlock


def placeholder(tool: str) -> str:
    return f"[Previous: used {tool or 'tool'}]"


@dataclass(frozen=True, slots=True)
class MicroOutcome:
    """The view to send, and what this call newly cleared (for the micro event)."""

    view: list[Message]
    newly_cleared: int
    tokens_cleared: int


class MicroCompactor:
    """Decides which tool results are replaced, and keeps that decision stable.

    Once a result is replaced it stays replaced for the rest of the segment: flipping it
    back would change the prefix the provider has cached. With `clear_at_least`, new
    replacements wait until together they clear at least that many tokens, so the
    cached prefix survives between clears (each clear invalidates the cache from the
    first changed message on, so fewer, larger clears are cheaper).
    """

    def __init__(self, config: CompactionConfig) -> None:
        self.config = config
        self._cleared: set[str] = set()

    def reset(self) -> None:
        """A new segment starts: nothing in it has been replaced yet."""
        self._cleared = set()

    @property
    def cleared(self) -> frozenset[str]:
        return frozenset(self._cleared)

    def candidates(self, messages: list[Message]) -> list[ToolResultBlock]:
        """Results the rules allow to be replaced, oldest first."""
        cfg = self.config
        last_assistant = -1
        results: list[tuple[int, ToolResultBlock]] = []
        for i, m in enumerate(messages):
            if m.role == "assistant":
                last_assistant = i
            else:
                for b in m.content:
                    if isinstance(b, ToolResultBlock):
                        results.append((i, b))
        if cfg.keep_recent:
            results = results[: -cfg.keep_recent]
        preserve = set(cfg.preserve_tools)
        return [
            b
            for i, b in results
            # results after the last assistant turn have not been seen by the model yet
            if i < last_assistant and b.name not in preserve and len(b.content) > cfg.min_chars
        ]

    def view(self, messages: list[Message]) -> MicroOutcome:
        """The messages to send, with every cleared result as a placeholder."""
        if not self.config.micro:
            return MicroOutcome(list(messages), 0, 0)
        new = [b for b in self.candidates(messages) if b.tool_use_id not in self._cleared]
        new_tokens = sum(chars_to_tokens(len(b.content)) for b in new)
        newly = 0
        if new and new_tokens >= self.config.clear_at_least:
            self._cleared.update(b.tool_use_id for b in new)
            newly = len(new)
        else:
            new_tokens = 0
        if not self._cleared:
            return MicroOutcome(list(messages), 0, 0)
        return MicroOutcome(self._apply(messages), newly, new_tokens)

    def _apply(self, messages: list[Message]) -> list[Message]:
        cleared = self._cleared
        out: list[Message] = []
        for m in messages:
            if m.role == "user" and any(
                isinstance(b, ToolResultBlock) and b.tool_use_id in cleared for b in m.content
            ):
                m = Message(
                    "user",
                    tuple(
                        ToolResultBlock(b.tool_use_id, placeholder(b.name), b.name, b.is_error)
                        if isinstance(b, ToolResultBlock) and b.tool_use_id in cleared
                        else b
                        for b in m.content
                    ),
                )
            out.append(m)
        return out
