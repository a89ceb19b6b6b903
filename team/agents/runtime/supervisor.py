"""The runtime: one supervised thread per agent, the team lock, stopping and idling.

Stopping goes through the inboxes: Ctrl-C, SIGTERM and `team down` all deliver a
`shutdown_request` to every agent, each agent answers it at its next step boundary and
its thread ends; once every thread has ended the runtime returns. A crashed agent
thread is restarted from its session log with a growing backoff. With a `ConfigWatch`,
agents added to team.toml while the team runs are started and removed ones stopped
after their step (team.agents.runtime.reload).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from team.agents.build import Parts, build_agent
from team.agents.console.activity import Activity, budget_check
from team.agents.loop import Agent
from team.agents.runtime.lock import TeamLock
from team.agents.runtime.malloc import keep_large_blocks_mapped
from team.agents.runtime.reload import ConfigWatch
from team.agents.runtime.servers import open_pool
from team.backends.post import shutdown_request
from team.compaction.compactor import AutoGate
from team.core.errors import os_error_line
from team.core.events import AgentEvent, EventSink
from team.llm.base import Model
from team.mailbox.base import Inboxes
from team.tasks import TaskBoard
from team.tasks.model import Board
from team.teamwork import Courier
from team.workspace.config import AgentConfig, TeamConfig
from team.workspace.places import Workspace

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0
STALL_NOTICE_S = 60.0
"""How long `--until-idle` waits on a quiet team with open tasks before it says so (once)."""


class Runtime:
    """Runs every agent of `config` in `ws`, each in its own supervised thread.

    Args:
        board, inboxes: the task board and the inboxes (default: the ones on disk).
        agents: the agents to run (default: all); a node of a team on the Redis
            backend runs some of them (`team up --agents`).
        on_status: also given every status snapshot (a node publishes it to Redis).
        stop: the hard-stop event (default: a new one), when others must share it.
        activity: what status shows besides the agents' own state (last action and
            error, compactions by layer, spend), and what budgets are checked against.
        watch: team.toml, checked each second while the team runs; None: never reread.
        courier: how coordination notices go out (a Redis node's outbox, which the
            team waits for before it counts as idle); None: delivered at once.
        events_health: the event log's outage, if any (`SqliteEventLog.health`): status
            carries it as `events`.
    """

    def __init__(
        self,
        ws: Workspace,
        config: TeamConfig,
        model: Model,
        sink: EventSink,
        *,
        poll_s: float = 0.5,
        fsync: bool = True,
        board: Board | None = None,
        inboxes: Inboxes | None = None,
        agents: list[str] | None = None,
        on_status: Callable[[dict], None] | None = None,
        stop: threading.Event | None = None,
        activity: Activity | None = None,
        watch: ConfigWatch | None = None,
        courier: Courier | None = None,
        events_health: Callable[[], dict | None] | None = None,
    ) -> None:
        self.ws = ws
        self.config = config
        self.names = list(agents) if agents else config.names()
        self.on_status = on_status
        self.events_health = events_health
        self.activity = activity  # folds the events `sink` carries (it must be among them)
        self.parts = Parts(
            ws=ws,
            config=config,
            model=model,
            sink=sink,
            board=board or TaskBoard(ws.tasks_dir),
            inboxes=inboxes,
            fsync=fsync,
            poll_s=poll_s,
            stop=stop or threading.Event(),
            budget=budget_check(activity, config) if activity is not None else None,
            courier=courier,
            # one session per server for the whole team, started with it (not before:
            # a runtime refused by the lock must not have started any)
            mcp=open_pool(ws, config, sink),
        )
        self.sink = sink
        self.board = self.parts.board
        self.inboxes: Inboxes = self.parts.inboxes  # type: ignore[assignment]
        self.lock = TeamLock(ws.lock_path)
        self.stop = self.parts.stop  # hard stop: agents end at their next step boundary
        self.agents: dict[str, Agent] = {}
        self.threads: dict[str, threading.Thread] = {}
        self.crashes: dict[str, int] = {}
        self.failed: dict[str, str] = {}  # agents stopped by a permanent error: why
        # kept across restarts of an agent's thread, so a failing summariser stays paused
        self.gates: dict[str, AutoGate] = {}
        self._stopping = False
        self._status_failing = False
        self.watch = watch
        self._deferred: list[str] = []  # re-added while its old thread still stops
        # removed from team.toml, still finishing its step: its own lookups need its config
        self._retiring: dict[str, AgentConfig] = {}

    def build_agent(self, name: str) -> Agent:
        return build_agent(self.parts, name, gate=self.gates.setdefault(name, AutoGate()))

    # -- running -------------------------------------------------------------------------

    def start(self) -> None:
        self.lock.acquire()
        keep_large_blocks_mapped()  # a run of hours must not grow malloc's heaps
        if self.parts.mcp is not None:
            self.parts.mcp.start()  # in the background: each agent waits as it is built
        for name in self.names:
            self._start_thread(name)
        self.write_status()  # at once: `team status` must not read the last run's snapshot

    def _start_thread(self, name: str) -> None:
        t = threading.Thread(target=self._supervise, args=(name,), name=f"agent-{name}")
        self.threads[name] = t
        t.start()

    def _supervise(self, name: str) -> None:
        """Run the agent; if its thread crashes, rebuild it from its log and go on."""
        backoff = 0.5
        while True:
            try:
                agent = self.build_agent(name)
                self.agents[name] = agent
                self.sink.emit(AgentEvent(name, "started"))
                agent.run()
                if agent.status.state.startswith("failed"):
                    self.failed[name] = agent.status.state.removeprefix("failed: ")
                else:
                    self.sink.emit(AgentEvent(name, "stopped"))
                return
            except Exception as e:
                self.crashes[name] = self.crashes.get(name, 0) + 1
                log.exception("%s: agent crashed; restarting in %.1fs", name, backoff)
                self.sink.emit(AgentEvent(name, "crashed", f"{type(e).__name__}: {e}"))
                if not self._wait_to_restart(name, backoff):
                    return
                backoff = min(MAX_BACKOFF_S, backoff * 2)
                self.sink.emit(AgentEvent(name, "restarted"))

    def _wait_to_restart(self, name: str, seconds: float) -> bool:
        """Wait out a crash backoff; False when the agent is not to run again.

        A crashed agent cannot answer a shutdown request, so the stop is seen here:
        Ctrl-C, SIGTERM or removal from team.toml end its backoff at once, instead of an
        agent whose build keeps failing holding the team up for ever.
        """
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.stop.wait(min(left, 0.2)):
                return False
            if self._stopping or name not in self.names:
                return False
        return not (self._stopping or name not in self.names)

    @property
    def stopping(self) -> bool:
        """A graceful stop was asked for (agents finish their step first)."""
        return self._stopping

    def alive(self) -> list[str]:
        return [n for n, t in self.threads.items() if t.is_alive()]

    def reload(self) -> None:
        """Take the agents added to and removed from team.toml since the last check.

        Any other change is refused with one warning (team.agents.runtime.reload). The running
        `TeamConfig` is updated in place: every agent's tools hold that same object, so
        the old agents can message and assign the new ones at once.
        """
        if self._stopping:
            self._deferred.clear()
            return
        for name in list(self._deferred):
            if not self.threads[name].is_alive():
                self._deferred.remove(name)
                self._start_thread(name)
        gone = [n for n in self._retiring if not self.threads[n].is_alive()]
        for name in gone:
            del self._retiring[name]
        if gone:
            self.config.agents = [a for a in self.config.agents if a.name not in gone]
        if self.watch is None:
            return
        change = self.watch.check(self.config)
        if change is None:
            return
        if change.refused:
            log.warning("%s", change.refused)
            return
        old = {a.name: a for a in self.config.agents}
        for name in change.removed:
            if name not in self.names:  # `team up --agents` left it to another process
                continue
            self.names.remove(name)
            if name in self._deferred:  # re-added and removed again before it stopped
                self._deferred.remove(name)
            self.failed.pop(name, None)  # removed on purpose: not a reason to exit 1
            self.sink.emit(AgentEvent(name, "removed", "removed from team.toml"))
            if name in self.alive():
                self._retiring[name] = old[name]
                self.inboxes.mailbox(name).deliver(shutdown_request(name, "user"))
        for name in change.added:
            self._retiring.pop(name, None)  # back before it stopped: it starts again after
        self.config.agents = [*change.config.agents, *self._retiring.values()]
        for name in change.added:
            self.names.append(name)
            self.sink.emit(AgentEvent(name, "added", "added to team.toml"))
            if name in self.alive():  # removed a moment ago, not stopped yet
                self._deferred.append(name)
            else:
                self._start_thread(name)

    def request_stop(self, sender: str = "user") -> None:
        """Ask every agent to stop after its current step (idempotent)."""
        if self._stopping:
            return
        self._stopping = True
        for name in self.alive():
            self.inboxes.mailbox(name).deliver(shutdown_request(name, sender))

    def is_idle(self) -> bool:
        """Every agent idle, every inbox empty and no task open.

        A failed agent, or one whose thread has ended (its budget spent), takes on
        nothing more: its mail and its tasks do not keep the rest of the team up.
        """
        return self._quiet() is not None and not self.open_tasks_waited_on()

    def _quiet(self) -> set[str] | None:
        """The agents that ended, if every other one is idle with an empty inbox."""
        ended = {n for n, t in self.threads.items() if not t.is_alive()} | set(self.failed)
        ended -= set(self._deferred)
        courier = self.parts.courier
        if courier is not None and courier.pending():  # a notice may yet bring work
            return None
        for name in list(self.names):
            if name in ended:
                continue
            agent = self.agents.get(name)
            # a stopped agent takes on nothing more: it counts as idle
            if agent is None or agent.status.state not in ("idle", "stopped"):
                return None
            if self.inboxes.mailbox(name).has_pending():
                return None
        return ended

    def open_tasks_waited_on(self) -> list:
        """Unfinished tasks an agent that is still running may yet finish."""
        ended = self._quiet() or set()
        if self.board.all_done():
            return []
        return [t for t in self.board.unfinished() if t.owner not in ended]

    def _stall_line(self) -> str | None:
        """With the team quiet but tasks open: the line that names them (None otherwise)."""
        if self._quiet() is None:
            return None
        waiting = self.open_tasks_waited_on()
        if not waiting:
            return None
        shown = ", ".join(f"#{t.id} ({t.owner or 'unowned'}, {t.status})" for t in waiting[:5])
        more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
        tasks = "task is" if len(waiting) == 1 else "tasks are"
        return (
            f"every agent has been idle for {STALL_NOTICE_S:g}s, but {len(waiting)} {tasks} "
            f"still open: {shown}{more}; --until-idle waits for them (`team tasks` shows "
            "them; `team send` or --timeout ends the wait)"
        )

    def wait(
        self,
        *,
        until_idle: bool = False,
        idle_grace: float = 2.0,
        timeout: float | None = None,
        tick: Callable[[], None] | None = None,
        stop_grace: float = 60.0,
    ) -> bool:
        """Block until the team stops; returns False if `timeout` ran out first."""
        deadline = time.monotonic() + timeout if timeout else None
        idle_since: float | None = None
        stop_asked: float | None = None
        stall_since: float | None = None  # quiet with open tasks since (told once per stall)
        stall_told = False
        timed_out = False
        last_status = 0.0
        while self.alive() or self._deferred:
            now = time.monotonic()
            if now - last_status >= 1.0:
                last_status = now
                self.reload()
                if tick:
                    tick()
                self.write_status()
                if until_idle and not self._stopping:
                    stall_since, stall_told = self._watch_stall(now, stall_since, stall_told)
            if until_idle and not self._stopping:
                if self.is_idle():
                    idle_since = idle_since or now
                    if now - idle_since >= idle_grace:
                        self.request_stop()
                else:
                    idle_since = None
            if deadline and now > deadline and not self._stopping:
                timed_out = True
                self.request_stop()
            if self._stopping:
                stop_asked = stop_asked or now
                if now - stop_asked > stop_grace:
                    self.stop.set()  # an agent is stuck in a long call: stop at its boundary
            for t in self.threads.values():
                t.join(timeout=0.1 / max(1, len(self.threads)))
        self.stop.set()
        self.write_status()
        return not timed_out

    def _watch_stall(
        self, now: float, since: float | None, told: bool
    ) -> tuple[float | None, bool]:
        """Say once when a quiet team has waited STALL_NOTICE_S on tasks nobody works on.

        Called once a second; the board is only read while every agent is idle.
        """
        line = self._stall_line()
        if line is None:
            return None, False
        since = since or now
        if not told and now - since >= STALL_NOTICE_S:
            log.warning("%s", line)
            told = True
        return since, told

    def close(self) -> None:
        self.stop.set()
        for t in self.threads.values():
            t.join(timeout=10)
        if self.parts.mcp is not None:
            self.parts.mcp.close()
        if self.alive():
            # keep the lock: a second `team up` must not write to logs we still write;
            # the kernel releases it when this process exits
            log.warning("agents still running at close: %s", ", ".join(self.alive()))
            return
        self.lock.release()

    # -- status --------------------------------------------------------------------------

    def status(self) -> dict:
        agents = {}
        for name in list(self.names):
            agent = self.agents.get(name)
            st = agent.status.snapshot() if agent is not None else {"state": "starting"}
            if st["state"] == "starting" and self.crashes.get(name):
                st["state"] = "crashed, restarting"  # it crashes before it gets going
            st["pending"] = self.inboxes.mailbox(name).pending_count()
            st["crashes"] = self.crashes.get(name, 0)
            if self.activity is not None:
                st.update(self.activity.snapshot(name))
                st["budget_usd"] = self.config.agent(name).budget_usd
            agents[name] = st
        out = {"pid": os.getpid(), "updated": time.time(), "agents": agents}
        if self.parts.mcp is not None:
            out["mcp"] = self.parts.mcp.status()
        if self.events_health is not None and (health := self.events_health()) is not None:
            out["events"] = health
        if self.activity is not None:
            out["team_spend"] = {
                "spent_usd": self.activity.team_spent(),
                "budget_usd": self.config.team.budget_usd,
            }
        return out

    def write_status(self) -> None:
        """Write the snapshot `team status` reads; a full or read-only disk only warns.

        The team goes on without it (the snapshot goes stale), and says so once.
        """
        snapshot = self.status()
        if self.on_status is not None:
            self.on_status(snapshot)
        try:
            write_json_atomic(self.ws.status_path, snapshot)
        except OSError as e:
            if not self._status_failing:
                log.warning(
                    "cannot write %s (%s); team status will lag",
                    self.ws.status_path,
                    os_error_line(e),
                )
            self._status_failing = True
        else:
            self._status_failing = False


def write_json_atomic(path: Path, data: dict) -> None:
    """tmp + rename: `team status` in another process never reads half a file."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not leave half a file behind
        raise
