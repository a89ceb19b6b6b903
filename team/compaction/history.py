"""One agent's live context, and the one fold that builds it from records."""

from __future__ import annotations

from dataclasses import dataclass, field

from team.compaction.records import AssistantTurn, Compaction, Note, Record, UserTurn
from team.core.conversation import Message, append_user
from team.llm.base import Usage


@dataclass
class History:
    """The messages since the last compaction (the segment) and the last real usage.

    The stored messages always hold full text; micro-compaction only changes the view
    sent to the model. `usage_tokens` is the context size the last response reported,
    and `usage_index` how many messages that covered, so the estimate only has to count
    what was appended since. `floor` is the size of the context a compaction left (0
    before the first one): its estimate, raised to the first call's recorded input once
    there is one, so a fixed prefix the estimate did not see is counted too. The next
    auto compaction waits for the context to grow past it (`team.compaction.auto`).
    """

    messages: list[Message] = field(default_factory=list)
    usage_tokens: int | None = None
    usage_index: int = 0
    segment: int = 0
    floor: int = 0
    measured: bool = False
    """The segment's first call has been answered (and `floor` raised to its input)."""

    @classmethod
    def of(cls, records) -> History:
        """The history that `records` build, folded in order."""
        history = cls()
        for rec in records:
            history.apply(rec)
        return history

    def apply(self, rec: Record) -> None:
        """Fold one record in: the only way a conversation changes, live, at resume
        and in replay alike."""
        if isinstance(rec, UserTurn):
            append_user(self.messages, *rec.blocks)
        elif isinstance(rec, AssistantTurn):
            self.append_response(rec.message, rec.usage)
        elif isinstance(rec, Compaction):
            self.messages = [rec.first]
            self.usage_tokens = None
            self.usage_index = 0
            self.segment += 1
            self.floor = rec.tokens_after
            self.measured = False
        elif not isinstance(rec, Note):
            raise TypeError(f"not a record: {rec!r}")

    def append_user(self, *blocks) -> None:
        append_user(self.messages, *blocks)

    def append_response(self, message: Message, usage: Usage) -> None:
        self.messages.append(message)
        self.usage_tokens = usage.context_tokens
        self.usage_index = len(self.messages)
        if self.segment and not self.measured:
            self.measured = True
            self.floor = max(self.floor, usage.input_total)

    def last_assistant_index(self) -> int:
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].role == "assistant":
                return i
        return -1

    def pending_tool_uses(self) -> list[str]:
        """Ids of the last assistant turn's tool calls that have no result yet."""
        i = self.last_assistant_index()
        if i < 0:
            return []
        uses = [b.id for b in self.messages[i].tool_uses()]
        answered: set[str] = set()
        if i + 1 < len(self.messages):
            answered = {r.tool_use_id for r in self.messages[i + 1].tool_results()}
        return [u for u in uses if u not in answered]
