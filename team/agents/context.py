"""An agent's conversation: its session log, the history folded from it, its compactor.

The session log is the truth (one writer, append then fold); the history is its fold;
the compactor decides what of it is sent (micro), and when a segment ends (auto, manual).
The loop changes the conversation only through `record` and `compact`, and `record`
passes every user turn through `Results`, so nothing larger than the cap enters it.
"""

from __future__ import annotations

from team.agents.session.log import SessionLog
from team.agents.session.repair import load_repaired
from team.agents.session.results import Results
from team.compaction.compactor import Compactor, Prepared
from team.compaction.history import History
from team.compaction.records import Record, UserTurn
from team.core.conversation import Message
from team.llm.base import AgentFacts, ModelRequest, Usage


class Context:
    """One agent's conversation, for its own thread only."""

    def __init__(self, session: SessionLog, compactor: Compactor, results: Results) -> None:
        self.session = session
        self.compactor = compactor
        self.results = results
        self.history = History()

    @property
    def messages(self) -> list[Message]:
        return self.history.messages

    @property
    def segment(self) -> int:
        """How many compactions the conversation has been through."""
        return self.history.segment

    @property
    def cache_ttl(self):
        return self.compactor.config.cache_ttl

    def waiting_for_reply(self) -> bool:
        """The last message is the user's: the model has something to answer."""
        return bool(self.messages) and self.messages[-1].role == "user"

    def resume(self) -> str | None:
        """Fold the session log; one line saying what was mended if it was damaged."""
        self.history, repaired = load_repaired(self.session)
        return repaired

    def record(self, rec: Record) -> None:
        """The one way the conversation changes: append to the log (fsync), then fold.

        A block over the cap is kept whole in the results folder first, and the record
        holds its head, its tail and where the whole is.
        """
        if isinstance(rec, UserTurn):
            blocks = self.results.blocks(rec.blocks)
            if blocks is not rec.blocks:
                rec = UserTurn(blocks, rec.inbox)
        self.session.append(rec)
        self.history.apply(rec)

    def clear_results(self, ids: tuple[str, ...]) -> None:
        """Send these tool results as placeholders from now on in this segment (a replay
        repeating what the recorded agent cleared)."""
        self.compactor.micro.clear(ids)

    def estimate(self) -> int:
        return self.compactor.estimate(self.history)

    def prepare(self) -> Prepared:
        """What the next request sends (micro's view), and its cache breakpoints."""
        return self.compactor.prepare(self.history)

    def observe(self, request: ModelRequest, usage: Usage) -> None:
        self.compactor.observe(request, usage)

    def due(self) -> bool:
        """Whether auto-compaction should run before the next call."""
        return self.compactor.should_auto(self.history)

    def auto_paused(self) -> str | None:
        """Why auto-compaction is paused for this agent (None: it is not)."""
        gate = self.compactor.gate
        return (gate.reason or "paused") if gate.paused else None

    def compact(
        self,
        *,
        identity: str,
        layer: str,
        trigger: str,
        facts: AgentFacts,
        focus: str | None = None,
    ) -> bool:
        """Archive and summarise the segment, and record the new one; False when it
        failed (the conversation is unchanged, an event says why)."""
        rec = self.compactor.compact(
            self.history, identity=identity, layer=layer, trigger=trigger, focus=focus, facts=facts
        )
        if rec is None:
            return False
        self.record(rec)
        return True

    def close(self) -> None:
        self.session.close()
