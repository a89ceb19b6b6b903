"""The neutral form every reader produces: agents, their turns, usage, time, compactions.

A reader turns another agent's log (Claude Code, Codex, Gemini CLI, SWE-agent, ...)
into a `Session`; everything after that (repair, the workspace writer, calibration,
replay) works on this form alone and never looks at the original format again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from team.core.conversation import Block, Message, Role
from team.core.errors import UserError
from team.llm.base import Usage


class LogError(UserError):
    """A log that cannot be read: one line naming the file, the line and the problem."""

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = str(path), line, problem


@dataclass
class Turn:
    """One message as recorded: its blocks (in our conversation model), where it came
    from (`line`, 1-based, for error messages), when (`time`, epoch seconds) and, for a
    model reply, the recorded usage of the call that produced it."""

    role: Role
    blocks: list[Block]
    line: int = 0
    time: float | None = None
    usage: Usage | None = None
    key: str = ""  # the reader's grouping key (Claude Code's message.id)

    def message(self) -> Message:
        return Message(self.role, tuple(self.blocks))


@dataclass(frozen=True)
class CompactionMark:
    """The recorded agent compacted its own context before turn `before` (an index into
    the agent's turns). The summary it wrote is kept here, not among the turns: a replay
    lets the strategy under study decide when to compact."""

    before: int
    trigger: str  # "auto", "manual", or whatever the log says
    pre_tokens: int | None
    summary_chars: int
    line: int = 0
    summary: str = ""  # the summary's text, which the `recorded` strategy replays


@dataclass(frozen=True)
class MicroClear:
    """The recorded agent replaced old tool results in what it sent, from turn `before`
    on (Claude Code's `microcompact_boundary`): the log keeps their text, the requests
    after it did not carry it."""

    before: int
    tool_ids: tuple[str, ...]
    tokens_saved: int | None = None
    line: int = 0


@dataclass
class AgentLog:
    """One agent's conversation: the main agent, or one subagent / sidechain."""

    name: str
    turns: list[Turn] = field(default_factory=list)
    compactions: list[CompactionMark] = field(default_factory=list)
    micro_clears: list[MicroClear] = field(default_factory=list)
    system: str = ""  # the recorded fixed prefix, when the log has it
    tools_chars: int = 0  # characters of the recorded tool definitions, when known
    model: str = ""
    cache_ttl: str = "5m"  # "1h" when the recorded cache writes were 1-hour ones

    def replies(self) -> list[Turn]:
        return [t for t in self.turns if t.role == "assistant"]


@dataclass
class ImportReport:
    """What an import kept, dropped and repaired, in words a user can check."""

    kept: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    repaired: list[str] = field(default_factory=list)
    renamed: Counter[str] = field(default_factory=Counter)  # "Read -> read_file"
    # what every log of the format holds and the API would not take as it is (a reply
    # split over lines, empty text blocks): made a valid conversation, counted here
    normalised: Counter[str] = field(default_factory=Counter)
    dropped_lines: list[int] = field(default_factory=list)  # unreadable lines dropped
    requests_recorded: int | None = None  # model requests the log records
    requests_kept: int = 0  # of which the conversation read keeps

    def lines(self) -> list[str]:
        def join(c: Counter[str]) -> str:
            return ", ".join(f"{n} {what}" for what, n in sorted(c.items())) or "nothing"

        out = []
        if self.requests_recorded is not None:
            out.append(f"kept {self.requests_kept} of {self.requests_recorded} recorded requests")
        out += [f"kept: {join(self.kept)}", f"dropped: {join(self.dropped)}"]
        if self.normalised:
            out.append("normalised: " + join(self.normalised))
        if self.renamed:
            out.append("tool names mapped: " + join(self.renamed))
        out.append("repaired: " + ("; ".join(self.repaired) if self.repaired else "nothing"))
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "kept": dict(self.kept),
            "dropped": dict(self.dropped),
            "renamed": dict(self.renamed),
            "repaired": list(self.repaired),
            "normalised": dict(self.normalised),
            "requests_recorded": self.requests_recorded,
            "requests_kept": self.requests_kept,
        }


@dataclass
class Session:
    """A whole recorded log: its format, its agents, and the report of reading it.

    `totals` is the log's own usage total when it has no per-call usage (SWE-agent
    keeps only `tokens_sent` / `tokens_received` for the run).
    """

    source: str
    format: str
    agents: list[AgentLog]
    report: ImportReport = field(default_factory=ImportReport)
    totals: Usage | None = None

    def recorded(self) -> Usage | None:
        """The recorded usage of every call of every agent, or None if the log has none."""
        calls = [t.usage for a in self.agents for t in a.turns if t.usage is not None]
        if calls:
            total = Usage()
            for u in calls:
                total = total + u
            return total
        return self.totals
