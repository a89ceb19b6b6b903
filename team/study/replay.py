"""Replay a recorded session log under another compaction strategy.

A session log (`.team/agents/<agent>/session.jsonl`, see `team.agents.session.log`) holds
everything an agent saw and said: user records (inbox messages, reminders, tool results)
and assistant records (the model's replies). Replay feeds the same records through the
real `Agent.step` and `Compactor` under the strategy being studied:

- user records are appended as recorded: tool results come from the log, nothing is run;
- at each assistant record the agent takes a step, so the strategy's micro view and auto
  compaction apply to the request exactly as in a live run, and `ReplayModel` answers
  with the recorded reply (and answers summary requests as the simulator does);
- a recorded `compact` tool call compacts (manual layer) after its result, as the loop
  does; recorded compaction records are skipped: the strategy decides when to compact.

Faithful: the sequence of everything the agent saw and said, tool results byte for byte,
where user input arrived between calls, manual compactions, and so the token economics
of each strategy on that sequence. Not faithful: the replies do not react to the
strategy (a live model would answer a compacted context differently); usage is the
simulated prompt cache's (not the recorded bill), with no cache expiry for pauses in the
recording; summaries are the simulator's extractive ones; the identity block's open
tasks are those the log shows (assigned or claimed, not yet completed), not a live board;
a recorded `compact` that failed still compacts here.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from team.agents.build import Parts, build_agent
from team.agents.session.log import SessionLogError, read_records
from team.agents.state import StepFailed
from team.agents.tools.input import ToolResult
from team.compaction.records import AssistantTurn, Record, UserTurn
from team.core.conversation import Block, Message, ToolResultBlock
from team.core.errors import UserError
from team.core.events import EventSink
from team.llm.base import ModelError, ModelRequest
from team.llm.sim import SimModel
from team.mailbox.waker import PollingWaker
from team.study.outcome import Outcome, outcome, tool_output_chars
from team.study.stats import load
from team.tasks.memory import MemoryBoard
from team.tasks.model import Task, TaskError
from team.workspace.config import CompactionConfig, ConfigError, TeamConfig, parse_config
from team.workspace.places import Workspace


class ReplayError(UserError):
    """The recording cannot be replayed (unreadable, or not a valid conversation)."""


@dataclass
class Recording:
    """A recorded team: its config and each agent's session records, in order."""

    config: TeamConfig
    sessions: dict[str, list[Record]]
    source: str

    def turns(self) -> dict[str, list[Message]]:
        """Every agent's recorded assistant messages, in order."""
        return {
            name: [r.message for r in recs if isinstance(r, AssistantTurn)]
            for name, recs in self.sessions.items()
        }


def load_recording(path: Path) -> Recording:
    """Read a workspace (every agent with a session log) or one agent's session.jsonl.

    For a single file the agent is named by its folder (`.team/agents/<agent>/`); the
    team comes from the workspace's team.toml when there is one, else a team of one.

    Raises:
        ReplayError: nothing replayable at `path`.
    """
    path = path.resolve()
    if path.is_dir():
        ws = Workspace.at(path)
        config = ws.load_config()
        names = [n for n in config.names() if ws.session_log(n).is_file()]
        if not names:
            raise ReplayError(f"{path}: no session logs under {ws.agents_root}")
        return Recording(config, {n: _records(ws.session_log(n)) for n in names}, str(path))
    if not path.is_file():
        raise ReplayError(f"{path}: no such file or directory")
    name = path.parent.name
    config = _config_near(path, name)
    return Recording(config, {name: _records(path)}, str(path))


def _config_near(path: Path, name: str) -> TeamConfig:
    place = Workspace.of_agent_file(path)
    if place is not None and place[0].config_path.is_file():
        try:
            config = place[0].load_config()
            if name in config.names():
                return config
        except ConfigError:
            pass  # a broken team.toml next to a good log: replay the log alone
    try:
        return parse_config({"agents": [{"name": name, "role": "agent"}]}, str(path))
    except ConfigError:
        raise ReplayError(
            f"{path}: cannot tell the agent's name (expected .team/agents/<agent>/session.jsonl)"
        ) from None


def _records(path: Path) -> list[Record]:
    try:
        records = list(read_records(path, strict=True))
    except SessionLogError as e:
        raise ReplayError(str(e)) from None
    if not any(isinstance(r, AssistantTurn) for r in records):
        raise ReplayError(f"{path}: no model replies recorded, nothing to replay")
    return records


class ReplayModel(SimModel):
    """Answers each agent's turns with its recorded replies, in order.

    Summary requests, usage and the prompt cache are the simulator's (this is a
    `SimModel` whose turns come from the log), so a replayed strategy is billed exactly
    as a live sim run would be.
    """

    name = "replay"

    def __init__(self, turns: dict[str, list[Message]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._turns = {agent: deque(messages) for agent, messages in turns.items()}
        self._turn_lock = threading.Lock()

    def left(self, agent: str) -> int:
        """Recorded replies not yet given."""
        return len(self._turns.get(agent, ()))

    def clock(self, agent: str) -> Callable[[], float] | None:
        """The agent's prompt-cache clock; None: our logs keep no call times, so the
        replay runs on real time (a warm cache throughout)."""
        return None

    def fixed_prefix(self, agent: str) -> int | None:
        """Tokens this model bills for the agent's system prompt and tools, when they are
        not the ones its characters say; None: this model bills the prefix sent."""
        return None

    def _turn(self, request: ModelRequest) -> tuple[Block, ...]:
        with self._turn_lock:
            queue = self._turns.get(request.agent)
            if not queue:
                raise ModelError(f"replay: no recorded reply left for {request.agent!r}")
            return queue.popleft().content


class _NoTools:
    """The replay's toolbox: results come from the log, so a call here is a bug."""

    def run(self, name: str, input: dict[str, Any]) -> ToolResult:
        return ToolResult(f"replay runs no tools (asked for {name})", is_error=True)


class LogBoard(MemoryBoard):
    """The agent's tasks as its log shows them: the board its identity block names.

    Rebuilt from the records' data (task mail, the board tools' task notes), never from
    their text; replay claims and completes nothing itself.
    """

    def __init__(self, agent: str) -> None:
        super().__init__()
        self.agent = agent

    def see(self, blocks: tuple[Block, ...]) -> None:
        """Learn from one user record's data: task mail, claims and completions."""
        for b in blocks:
            mails = b.mail if isinstance(b, ToolResultBlock) else (b.mail,) if b.mail else ()
            for mail in mails:
                if mail.type == "task" and mail.task is not None:
                    self._note(mail.task, _first_line(mail.body), "in_progress")
            if isinstance(b, ToolResultBlock) and b.is_error:
                continue
            for note in b.tasks:
                if note.event == "completed":
                    self._note(note.id, note.subject, "completed")
                elif note.event in ("claimed", "open"):
                    self._note(note.id, note.subject, "in_progress")

    def _note(self, task_id: int, subject: str, status: str) -> None:
        try:
            known = self.get(task_id)
        except TaskError:
            known = None
        if known is not None and (known.status == "completed" or known.status == status):
            return
        now = time.time()
        self.put(
            Task(
                id=task_id,
                subject=(known.subject if known else "") or subject or f"task {task_id}",
                status=status,
                owner=self.agent,
                created_at=now,
                updated_at=now,
                completed_at=now if status == "completed" else None,
            )
        )

    def counts(self) -> tuple[int, int]:
        """(tasks seen, tasks completed)."""
        tasks = self.list()
        return len(tasks), sum(t.status == "completed" for t in tasks)


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0].strip()


@dataclass
class AgentReplay:
    """What one agent's replay did."""

    steps: int
    tasks_seen: int
    tasks_completed: int


def replay_agent(
    recording: Recording,
    name: str,
    model: ReplayModel,
    ws: Workspace,
    compaction: CompactionConfig,
    sink: EventSink,
    compact_at: frozenset[int] = frozenset(),
    clear_at: dict[int, tuple[str, ...]] | None = None,
) -> AgentReplay:
    """Replay one agent's log through the real agent step and compactor.

    `compact_at`: steps (0-based) before which to compact as the recorded agent did
    (the `recorded` strategy of an imported log; its model answers with the log's own
    summary). `clear_at`: steps before which to replace the tool results the recorded
    agent replaced (its micro-compactions), whatever the strategy's micro says.

    Raises:
        ReplayError: the log is not a conversation the API would accept.
    """
    tasks = LogBoard(name)
    parts = Parts(ws=ws, config=recording.config, model=model, sink=sink, board=tasks, fsync=False)
    agent = build_agent(
        parts,
        name,
        compaction=compaction,
        toolbox=_NoTools(),
        waker=PollingWaker(parts.stop),
        clock=model.clock(name),
        prefix_tokens=model.fixed_prefix(name),
    )
    steps = 0
    compact_focus: dict[str, str | None] = {}  # tool_use id of a pending `compact` -> focus
    try:
        for rec in recording.sessions[name]:
            if isinstance(rec, UserTurn):
                agent.record(rec)
                tasks.see(rec.blocks)
                answered = [b.tool_use_id for b in rec.blocks if isinstance(b, ToolResultBlock)]
                if any(i in compact_focus for i in answered):
                    focus = next(compact_focus[i] for i in answered if i in compact_focus)
                    compact_focus.clear()
                    agent.compact("manual", "tool", focus)
            elif isinstance(rec, AssistantTurn):
                if steps in compact_at:
                    agent.compact("auto", "recorded")
                if clear_at and steps in clear_at:
                    agent.context.clear_results(clear_at[steps])
                uses = agent.step()
                steps += 1
                compact_focus = {
                    u.id: str(u.input.get("focus") or "") or None
                    for u in uses
                    if u.name == "compact"
                }
    except StepFailed as e:
        where = f"{recording.source}: {name}: step {steps + 1}"
        raise ReplayError(f"{where} cannot be replayed: {e}") from None
    finally:
        agent.close()
    return AgentReplay(steps, *tasks.counts())


def replay_strategy(
    recording: Recording,
    name: str,
    compaction: dict[str, Any],
    root: Path,
    model: ReplayModel | None = None,
    compact_at: dict[str, frozenset[int]] | None = None,
    clear_at: dict[str, dict[int, tuple[str, ...]]] | None = None,
) -> Outcome:
    """Replay every agent of `recording` under one strategy's `[compaction]` settings.

    Agents are replayed one after another in this thread, so a replay is deterministic.
    `model` answers with the recorded replies (a fresh `ReplayModel` by default; an
    imported log's replay passes a calibrated one, see team.sessions.calibration).
    """
    from team.core.events import SqliteEventLog

    ws = Workspace.at(root)
    ws.team_dir.mkdir(parents=True, exist_ok=True)
    model = model or ReplayModel(recording.turns())
    # Over the defaults, not over the recording's team.toml: every strategy means the
    # same settings whatever the recorded team was configured with.
    config = CompactionConfig.model_validate(compaction)
    events = SqliteEventLog(ws.events_db)
    done = seen = 0
    try:
        for agent in recording.sessions:
            at = (compact_at or {}).get(agent, frozenset())
            clears = (clear_at or {}).get(agent)
            r = replay_agent(recording, agent, model, ws, config, events, at, clears)
            done += r.tasks_completed
            seen += r.tasks_seen
            if model.left(agent):
                left = model.left(agent)
                raise ReplayError(f"{recording.source}: {agent}: {left} replies not replayed")
    finally:
        events.close()
    chars = tool_output_chars(ws, list(recording.sessions))
    return outcome(name, load(ws.events_db), done, seen, chars)
