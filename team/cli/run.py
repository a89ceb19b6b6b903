"""`team up`, `team down`, `team status`."""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
import threading
import time
from typing import Annotated

import typer

from team import worktrees
from team.agents import sandbox
from team.agents.activity import Activity, spent_so_far
from team.agents.console import EventPrinter, RunCounter, status_table
from team.agents.live import LiveFeed, LiveView
from team.agents.lock import TeamLock
from team.agents.reload import ConfigWatch
from team.agents.runtime import Runtime
from team.agents.warnings import route_warnings
from team.backends.base import RedisBackend, open_backend
from team.cli.base import DirOption, JsonOption, app, workspace
from team.config import TeamConfig
from team.errors import UserError
from team.events import FanoutSink, SqliteEventLog
from team.llm import make_model
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.post import request_shutdown
from team.workspace import Workspace


@app.command()
def up(
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Return once the team has nothing left to do.")
    ] = False,
    model: Annotated[
        str | None, typer.Option(help='Override the model: an Anthropic id, or "sim".')
    ] = None,
    idle_grace: Annotated[
        float, typer.Option(help="Seconds the team must stay idle before --until-idle returns.")
    ] = 2.0,
    timeout: Annotated[
        float | None, typer.Option(help="Stop the team after this many seconds (exit 1).")
    ] = None,
    sim_latency: Annotated[
        float, typer.Option(help="Seconds each sim model call takes (sim only).")
    ] = 0.0,
    agents: Annotated[
        str | None,
        typer.Option(
            "--agents",
            help="Run only these agents (comma-separated): one node of a team on Redis.",
        ),
    ] = None,
    dir: DirOption = ".",
) -> None:
    """Run the team in the foreground until Ctrl-C, `team down`, or (--until-idle) idle."""
    ws = workspace(dir)
    watch = ConfigWatch(ws.config_path)  # before reading: an edit from now on is seen
    config = ws.load_config()
    if config.team.isolation == "worktree":
        worktrees.require_repo(ws)  # before anything is written: nothing changes on a refusal
    local = pick_agents(config, agents)
    model_id = model or config.team.model
    # before anything starts: an explicit sandbox = "bwrap" that cannot work is an error
    if warning := sandbox.preflight(config, sandbox.detect()):
        print(warning, file=sys.stderr, flush=True)
    llm = make_model(model_id, sim_latency=sim_latency)
    live = sys.stdout.isatty()
    counter = RunCounter()
    lock = TeamLock(ws.lock_path)
    if lock.is_held():  # say so before opening anything else
        lock.acquire()
    ws.check_writable()
    try:
        events = SqliteEventLog(ws.events_db)
    except sqlite3.OperationalError as e:  # full, read-only, locked: the file itself is fine
        raise UserError(f"{ws.events_db}: cannot open the event database: {e}") from None
    except sqlite3.DatabaseError as e:
        raise UserError(
            f"{ws.events_db}: not a usable event database ({e}); move it aside to start afresh"
        ) from None
    feed = LiveFeed()
    activity = Activity(model_id, spent_so_far(ws.events_db, model_id))
    sink = FanoutSink(events, counter, activity, feed if live else EventPrinter())
    route_warnings(sink, ws.team_dir / "errors.log")  # one path for warnings: the events
    try:
        runtime, node = _runtime(ws, config, llm, sink, local, activity, watch)
    except UserError:
        events.close()
        raise
    _handle_signals(runtime)  # before any agent thread exists: Ctrl-C always stops cleanly
    try:
        runtime.start()
    except UserError:
        if node is not None:
            node.close()
        events.close()
        raise
    names = ", ".join(f"{a.name} ({a.role})" for a in config.agents if a.name in local)
    label = " - an offline simulation, no real model is called" if model_id == "sim" else ""
    print(f"team {config.team.name!r} up in {ws.root}: {names}; model {model_id}{label}")
    print("Ctrl-C or `team down` stops it.", flush=True)
    start = time.monotonic()
    try:
        if live:
            finished = _run_live(runtime, feed, until_idle, idle_grace, timeout)
        else:
            finished = runtime.wait(until_idle=until_idle, idle_grace=idle_grace, timeout=timeout)
    finally:
        runtime.close()
        if node is not None:
            node.close()  # only now: another node may take the agents once they stopped
        events.close()
    tasks = runtime.board.list()
    done = sum(1 for t in tasks if t.status == "completed")
    print(counter.summary(done, len(tasks), time.monotonic() - start))
    if runtime.failed:  # the agents that could not work say why; the others finished
        name, why = next(iter(runtime.failed.items()))
        more = len(runtime.failed) - 1
        raise UserError(f"{name} failed: {why}" + (f" (and {more} more agents)" if more else ""))
    if not finished:
        raise UserError(f"stopped after --timeout {timeout:g}s before the team was idle")


def pick_agents(config: TeamConfig, agents: str | None) -> list[str]:
    """The agents `--agents a,b` names (all when None); unknown names are one line."""
    if agents is None:
        return config.names()
    picked = [a.strip() for a in agents.split(",") if a.strip()]
    unknown = [a for a in picked if a not in config.names()]
    if unknown or not picked:
        what = f"unknown agent {unknown[0]!r}" if unknown else "no agent named"
        raise UserError(f"--agents: {what} (this team has: {', '.join(config.names())})")
    return list(dict.fromkeys(picked))


def _runtime(
    ws: Workspace,
    config: TeamConfig,
    llm,
    sink,
    local: list[str],
    activity=None,
    watch: ConfigWatch | None = None,
):
    """The runtime for this node, and on Redis the `Node` that holds its agents' leases.

    Raises:
        UserError: Redis is unreachable, or another node runs one of the agents.
    """
    check = open_backend(ws, config)
    if not isinstance(check, RedisBackend):
        runtime = Runtime(ws, config, llm, sink, agents=local, activity=activity, watch=watch)
        return runtime, None
    try:
        check.link.ping()  # at start, fail with one line rather than wait
    finally:
        check.close()
    from team.backends.node import Node  # imports redis: only for a Redis backend

    if watch is not None:
        watch.membership = False  # each node runs the agents it holds leases for
    stop = threading.Event()
    backend = open_backend(ws, config, wait=True, stop=stop)  # running: wait out outages
    node = Node(backend, config, local, root=str(ws.root), on_lost=lambda _agent: stop.set())
    runtime = Runtime(
        ws,
        config,
        llm,
        sink,
        board=backend.board(),
        inboxes=backend,
        agents=local,
        on_status=node.publish,
        stop=stop,
        activity=activity,
        watch=watch,
    )
    node.claim()
    return runtime, node


def _run_live(
    runtime: Runtime, feed: LiveFeed, until_idle: bool, idle_grace: float, timeout
) -> bool:
    """The table with the event feed above it (team.agents.live), until the team stops."""
    with LiveView(feed) as view:
        view.tick(runtime.status())
        finished = runtime.wait(
            until_idle=until_idle,
            idle_grace=idle_grace,
            timeout=timeout,
            tick=lambda: view.tick(runtime.status()),
        )
        view.tick(runtime.status())
        return finished


def _handle_signals(runtime: Runtime) -> None:
    def on_signal(signum, frame):
        if runtime.stopping:  # second Ctrl-C: stop at the next step boundary, now
            runtime.stop.set()
        else:
            print("stopping: each agent finishes its current step...", file=sys.stderr)
            runtime.request_stop()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)


@app.command()
def down(
    wait: Annotated[float, typer.Option(help="Seconds to wait for the team to stop.")] = 120.0,
    dir: DirOption = ".",
) -> None:
    """Ask a running team to stop gracefully (each agent finishes its step first)."""
    ws = workspace(dir)
    config = ws.load_config()
    backend = open_backend(ws, config)
    if isinstance(backend, RedisBackend):
        from team.backends.node import ask_team_to_stop, wait_team_stopped

        asked = ask_team_to_stop(ws, backend, config)
        print(f"asked {len(asked)} agents to stop", flush=True)
        wait_team_stopped(backend, config, asked, wait)
        print("team stopped")
        return
    lock = TeamLock(ws.lock_path)
    if not lock.is_held():
        raise UserError(f"no team is running in {ws.root}")
    for name in config.names():
        request_shutdown(ws, name)
    print(f"asked {len(config.agents)} agents to stop", flush=True)
    deadline = time.monotonic() + wait
    while lock.is_held():
        if time.monotonic() > deadline:
            raise UserError(f"the team did not stop within {wait:g}s (it may be mid-call)")
        time.sleep(0.2)
    print("team stopped")


@app.command()
def status(json_out: JsonOption = False, dir: DirOption = ".") -> None:
    """Agents of the team here: state, what each is doing, task, context, compactions
    (auto/manual/micro), pending inbox, spend against budget, and last errors."""
    ws = workspace(dir)
    config = ws.load_config()
    backend = open_backend(ws, config)
    if isinstance(backend, RedisBackend):
        from team.backends.node import team_status

        out = {"team": config.team.name, "backend": backend.spec, **team_status(backend, config)}
        _show_status(out, json_out)
        return
    running = TeamLock(ws.lock_path).is_held()
    snapshot: dict = {}
    if ws.status_path.exists():
        try:
            snapshot = json.loads(ws.status_path.read_text())
        except (OSError, ValueError):
            snapshot = {}
    agents = {}
    for name in config.names():
        st = dict(snapshot.get("agents", {}).get(name, {}))
        if not running:
            was = str(st.get("state", ""))
            # a spent budget outlasts the run: say so until the budget is raised
            st["state"] = "down (budget)" if was.startswith("budget") else "down"
            st["task"] = None
            st["current"] = None
        # the running team lists every agent it runs, "starting" ones too: one it does not
        # list (added to team.toml but refused, or left to another `--agents` process) is
        # not going to start by itself
        st.setdefault("state", "not running")
        st["pending"] = MaildirMailbox(ws.inbox_dir(name)).pending_count()
        if config.team.isolation == "worktree":
            wt = worktrees.status(ws, name)
            st["branch"] = wt.branch if wt else None
            st["changes"] = wt.changes if wt else 0
            st["ahead"] = wt.ahead if wt else 0
        st["budget_usd"] = config.agent(name).budget_usd  # as team.toml says now
        agents[name] = st
    out = {"team": config.team.name, "running": running, "agents": agents}
    if "team_spend" in snapshot:
        out["team_spend"] = {**snapshot["team_spend"], "budget_usd": config.team.budget_usd}
    _show_status(out, json_out)


def _show_status(out: dict, json_out: bool) -> None:
    if json_out:
        print(json.dumps(out, indent=2))
        return
    from rich.console import Console

    title = f"team {out['team']!r}: " + ("up" if out["running"] else "down")
    console = Console()
    (console if console.is_terminal else Console(width=160)).print(status_table(out, title))
