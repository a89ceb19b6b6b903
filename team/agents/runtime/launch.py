"""Starting a team in a workspace: the one assembly behind `team up`, `team demo` and
`team experiment` (docs/design.md, "Agents").

`TeamRun` opens the event log, the backend (files, or Redis with this node's leases) and
the runtime, and closes them in the right order. `foreground` is `team up` itself: it
runs a `TeamRun` in this terminal, with the live view or the plain event lines, until the
team stops, and returns what the run did; the CLI only parses options and prints.
"""

from __future__ import annotations

import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from team.agents.build import reach_lines
from team.agents.console.activity import Activity, spent_so_far
from team.agents.console.live import LiveFeed, LiveView
from team.agents.console.printer import EventPrinter, RunCounter
from team.agents.console.warnings import route_warnings
from team.agents.runtime.lock import TeamLock
from team.agents.runtime.reload import ConfigWatch
from team.agents.runtime.supervisor import Runtime
from team.backends.base import RedisBackend, open_backend
from team.compaction.auto import window_problem
from team.core.errors import UserError
from team.core.events import EventSink, FanoutSink, SqliteEventLog
from team.llm import make_model
from team.llm.base import Model
from team.sandbox import bwrap as sandbox
from team.workspace import worktrees
from team.workspace.config import TeamConfig
from team.workspace.places import Workspace


def open_events(ws: Workspace) -> SqliteEventLog:
    """`.team/events.db`, or one line saying why it cannot be used.

    Raises:
        UserError: the database cannot be opened (full, read-only, locked) or is not one.
    """
    try:
        return SqliteEventLog(ws.events_db)
    except sqlite3.OperationalError as e:  # full, read-only, locked: the file itself is fine
        raise UserError(f"{ws.events_db}: cannot open the event database: {e}") from None
    except sqlite3.DatabaseError as e:
        raise UserError(
            f"{ws.events_db}: not a usable event database ({e}); move it aside to start afresh"
        ) from None


class TeamRun:
    """A team started in `ws`: its event log, backend and runtime, closed together.

    Args:
        sinks: more places every event goes besides the event log (counters, printers).
        agents: the agents this process runs (default: all of them).
        activity: the status' activity and spend, checked by budgets (default: none).
        watch: team.toml as the running team follows it (agents added and removed).
        fsync: fsync session logs and inbox files (off for throwaway experiment runs).
        lease_wait: on Redis, wait for the leases another node holds, telling this
            (`Countdown`) how long; None: refuse at once, as `team up --no-wait` does.

    Raises:
        UserError: the event log cannot be opened, Redis is unreachable, or another node
            runs one of the agents; nothing is left open.
    """

    def __init__(
        self,
        ws: Workspace,
        config: TeamConfig,
        model: Model,
        *,
        sinks: Iterable[EventSink] = (),
        agents: list[str] | None = None,
        activity: Activity | None = None,
        watch: ConfigWatch | None = None,
        fsync: bool = True,
        lease_wait: Callable[[str, bool], None] | None = None,
    ) -> None:
        self.ws, self.config = ws, config
        self.watch = watch
        self.lease_wait = lease_wait
        self.events = open_events(ws)
        self.sink: EventSink = FanoutSink(self.events, *sinks)
        self.node = None
        try:
            self.runtime = self._runtime(model, agents or config.names(), activity, fsync)
        except BaseException:
            self.events.close()
            raise
        self.started = time.monotonic()

    def _runtime(self, model, agents, activity, fsync) -> Runtime:
        ws, config = self.ws, self.config
        check = open_backend(ws, config)
        if not isinstance(check, RedisBackend):
            return Runtime(
                ws,
                config,
                model,
                self.sink,
                agents=agents,
                activity=activity,
                watch=self.watch,
                fsync=fsync,
                events_health=self.events.health,
            )
        try:
            check.link.ping()  # at start, fail with one line rather than wait
        finally:
            check.close()
        from team.backends.node import Node  # imports redis: only for a Redis backend

        if self.watch is not None:
            self.watch.membership = False  # each node runs the agents it holds leases for
        stop = threading.Event()
        backend = open_backend(ws, config, wait=True, stop=stop)  # running: wait out outages
        node = Node(
            backend,
            config,
            agents,
            root=str(ws.root),
            on_lost=lambda _a: stop.set(),
            spool=ws.outbox_dir,  # task notices wait here while Redis is away
            sink=self.sink,
        )
        runtime = Runtime(
            ws,
            config,
            model,
            self.sink,
            board=backend.board(),
            inboxes=backend,
            agents=agents,
            on_status=node.publish,
            stop=stop,
            courier=node.outbox,
            activity=activity,
            watch=self.watch,
            fsync=fsync,
            events_health=self.events.health,
        )
        try:
            node.claim(wait=self.lease_wait is not None, say=self.lease_wait)
        except KeyboardInterrupt:
            raise UserError("stopped while waiting for the leases (nothing started)") from None
        self.node = node
        return runtime

    def start(self) -> None:
        """Start every agent thread; on a refusal (the team runs already) close all."""
        try:
            self.runtime.start()
        except BaseException:
            self._close_rest()
            raise

    def wait(self, *, until_idle: bool, idle_grace: float, timeout: float | None, tick=None):
        """Until the team stops; False if `timeout` ran out first."""
        return self.runtime.wait(
            until_idle=until_idle, idle_grace=idle_grace, timeout=timeout, tick=tick
        )

    def close(self) -> None:
        try:
            self.runtime.close()
        finally:
            self._close_rest()

    def _close_rest(self) -> None:
        if self.node is not None:
            self.node.close()  # only after the agents stopped: another node may take them
            self.node = None
        self.events.close()

    def __enter__(self) -> TeamRun:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def tasks_done(self) -> tuple[int, int]:
        """(completed, all) tasks on the board."""
        tasks = self.runtime.board.list()
        return sum(1 for t in tasks if t.status == "completed"), len(tasks)


@dataclass
class RunOptions:
    """What `team up` takes from its command line."""

    until_idle: bool = False
    model: str | None = None  # default: team.toml's
    idle_grace: float = 2.0
    timeout: float | None = None
    sim_latency: float = 0.0
    agents: list[str] | None = None  # this node's agents (default: all)
    no_wait: bool = False  # Redis: refuse at once if another node holds an agent's lease


@dataclass
class RunResult:
    finished: bool  # False: stopped by the timeout before the team was idle
    done: int
    total: int
    summary: str  # the closing lines `team up` prints
    failed: dict[str, str] = field(default_factory=dict)  # agents stopped by an error: why


def _say(line: str) -> None:
    print(line, flush=True)  # a pipe reading `team up` sees each line as it comes


def foreground(ws: Workspace, opts: RunOptions, say: Callable[[str], None] = _say) -> RunResult:
    """`team up`: run the team in this terminal until it stops, then say what it did.

    On a TTY the live table with the event feed above it; otherwise one line per event.
    Ctrl-C and SIGTERM ask every agent to stop at its next step (twice: stop now).

    Raises:
        UserError: a bad team.toml, a team running already, an unusable workspace.
    """
    watch = ConfigWatch(ws.config_path)  # before reading: an edit from now on is seen
    config = ws.load_config()
    if config.team.isolation == "worktree":
        worktrees.require_repo(ws)  # before anything is written: nothing changes on a refusal
    local = pick_agents(config, opts.agents)
    model_id = opts.model or config.team.model
    # before anything starts: an explicit sandbox = "bwrap" that cannot work is an error
    if warning := sandbox.preflight(config, sandbox.detect()):
        print(warning, file=sys.stderr, flush=True)
    if problem := window_problem(config, model_id):
        raise UserError(problem)
    llm = make_model(model_id, sim_latency=opts.sim_latency)
    live = sys.stdout.isatty()
    lock = TeamLock(ws.lock_path)
    if lock.is_held():  # say so before opening anything else
        lock.acquire()
    ws.check_writable()
    counter, feed = RunCounter(), LiveFeed()
    activity = Activity(model_id, spent_so_far(ws.events_db, model_id))
    run = TeamRun(
        ws,
        config,
        llm,
        sinks=(counter, activity, feed if live else EventPrinter()),
        agents=local,
        activity=activity,
        watch=watch,
        lease_wait=None if opts.no_wait else Countdown(sys.stderr),
    )
    route_warnings(run.sink, ws.errors_log)  # one path for warnings: the events
    handle_signals(run.runtime)  # before any agent thread exists: Ctrl-C always stops cleanly
    for line in reach_lines(config, model_id):  # before a summary that frees little is paid
        print(line, file=sys.stderr, flush=True)
    run.start()
    names = ", ".join(f"{a.name} ({a.role})" for a in config.agents if a.name in local)
    label = " - an offline simulation, no real model is called" if model_id == "sim" else ""
    say(f"team {config.team.name!r} up in {ws.root}: {names}; model {model_id}{label}")
    say("Ctrl-C or `team down` stops it.")
    with run:
        if live:
            with LiveView(feed) as view:
                tick = lambda: view.tick(run.runtime.status())  # noqa: E731
                tick()
                finished = run.wait(
                    until_idle=opts.until_idle,
                    idle_grace=opts.idle_grace,
                    timeout=opts.timeout,
                    tick=tick,
                )
                tick()
        else:
            finished = run.wait(
                until_idle=opts.until_idle, idle_grace=opts.idle_grace, timeout=opts.timeout
            )
    done, total = run.tasks_done()
    summary = counter.summary(done, total, time.monotonic() - run.started)
    return RunResult(finished, done, total, summary, dict(run.runtime.failed))


class Countdown:
    """The line `team up` shows while it waits for a lease: redrawn in place on a
    terminal, and on a pipe once when it starts, then once a holder or the time changes
    by 5 s (a supervisor's log gets a few lines, not one per try)."""

    def __init__(self, out) -> None:
        self.out = out
        self.tty = out.isatty()
        self._last = ""

    def __call__(self, line: str, final: bool) -> None:
        if self.tty:
            end = "\n" if final else ""
            print(f"\r\033[K{line}", end=end, file=self.out, flush=True)
            return
        changed = _drop_digits(line) != _drop_digits(self._last)
        if final or changed or _secs(self._last) - _secs(line) >= 5:
            print(line, file=self.out, flush=True)
            self._last = line


def _drop_digits(line: str) -> str:
    return "".join(c for c in line if not c.isdigit())


def _secs(line: str) -> int:
    import re

    m = re.search(r"lapses in (\d+)s", line)
    return int(m[1]) if m else 0


def pick_agents(config: TeamConfig, agents: list[str] | None) -> list[str]:
    """The agents named (all when None); an unknown name is one line.

    Raises:
        UserError: a name this team does not have, or none at all.
    """
    if agents is None:
        return config.names()
    picked = [a.strip() for a in agents if a.strip()]
    unknown = [a for a in picked if a not in config.names()]
    if unknown or not picked:
        what = f"unknown agent {unknown[0]!r}" if unknown else "no agent named"
        raise UserError(f"--agents: {what} (this team has: {', '.join(config.names())})")
    return list(dict.fromkeys(picked))


def handle_signals(runtime: Runtime) -> None:
    """Ctrl-C and SIGTERM: every agent finishes its step; a second one stops at once."""

    def on_signal(signum, frame):
        if runtime.stopping:  # second Ctrl-C: stop at the next step boundary, now
            runtime.stop.set()
        else:
            print("stopping: each agent finishes its current step...", file=sys.stderr)
            runtime.request_stop()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


def run_error(result: RunResult, timeout: float | None) -> str | None:
    """The one line `team up` exits 1 with, or None when the run ended well."""
    if result.failed:  # the agents that could not work say why; the others finished
        name, why = next(iter(result.failed.items()))
        more = len(result.failed) - 1
        return f"{name} failed: {why}" + (f" (and {more} more agents)" if more else "")
    if not result.finished:
        return f"stopped after --timeout {timeout:g}s before the team was idle"
    return None
