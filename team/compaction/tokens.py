"""Token accounting: the last response's real usage plus ~chars/4 of what came since."""

from __future__ import annotations

from team.compaction.history import History
from team.conversation import Message

CHARS_PER_TOKEN = 4


def chars_to_tokens(chars: int) -> int:
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def message_tokens(messages: list[Message]) -> int:
    return chars_to_tokens(sum(m.chars() for m in messages))


def estimate(history: History, overhead_chars: int = 0) -> int:
    """Estimated context tokens of the next call (DESIGN §6).

    Before the first response of a segment there is no real usage to anchor on, so the
    whole segment (plus the system prompt and tools, `overhead_chars`) is counted at
    chars/4. After it, the API's own count is exact for everything up to the response,
    and only what was appended since is estimated.
    """
    if history.usage_tokens is None:
        return chars_to_tokens(overhead_chars + sum(m.chars() for m in history.messages))
    tail = history.messages[history.usage_index :]
    return history.usage_tokens + chars_to_tokens(sum(m.chars() for m in tail))
