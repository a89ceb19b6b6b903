"""A workspace that fights back: a FIFO, a read-only folder, a full disk.

Each is what a user meets on a real machine; each must give one clear line (or a tool
error the model can read), never a traceback, a hang, or a half-written file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_team

from team.agents.tools.toolbox import Toolbox
from team.tasks import TaskBoard
from team.teamwork import Crew
from team.workspace.config import render_config
from team.workspace.places import Workspace

AGENTS = [("alice", "coder"), ("bob", "tester")]
IS_ROOT = os.geteuid() == 0


def make_ws(root: Path) -> Workspace:
    root.mkdir(parents=True, exist_ok=True)
    (root / "team.toml").write_text(render_config("faults", "sim", AGENTS))
    return Workspace.at(root)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes: to prove a failed command changed nothing."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def one_clear_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("team: error: "), r.stderr
    return r.stderr


# -- a FIFO ---------------------------------------------------------------------------


def test_read_file_refuses_a_fifo_at_once(tmp_path):
    ws = make_ws(tmp_path / "ws")
    os.mkfifo(ws.root / "pipe")  # no writer will ever come: opening it would block for ever
    box = Toolbox(Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir)), "alice")
    result: list = []
    t = threading.Thread(target=lambda: result.append(box.run("read_file", {"path": "pipe"})))
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "read_file blocked on a FIFO"
    [r] = result
    assert r.is_error and "FIFO" in r.content and "pipe" in r.content
    # the other tools still see it for what it is, and regular files still read
    (ws.root / "a.txt").write_text("hello\n")
    assert box.run("read_file", {"path": "a.txt"}).content == "hello\n"


# -- read-only ------------------------------------------------------------------------


@contextlib.contextmanager
def shared_dir() -> Iterator[Path]:
    """A folder another user can traverse (pytest's tmp_path is private to its owner)."""
    d = Path(tempfile.mkdtemp(prefix="team-ro-", dir="/tmp"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in [d, *d.rglob("*")]:
            with contextlib.suppress(OSError):
                p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(d, ignore_errors=True)


READER = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _as_nobody(python: str, code: str, env: dict[str, str]) -> bool:
    r = subprocess.run(
        [shutil.which("setpriv") or "setpriv", *READER, python, "-c", code],
        capture_output=True, text=True, timeout=60, env=env, cwd="/",
    )  # fmt: skip
    return r.returncode == 0


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)  # instant, and the file keeps its (world-readable) mode
    except OSError:
        shutil.copy2(src, dst)  # another filesystem


_reader: dict[str, list[str] | dict[str, str]] = {}


def reader_command() -> tuple[list[str], dict[str, str]]:
    """How `nobody` runs `python -m team`, and its environment.

    From a clone nobody can read (under a 0700 folder such as /root), nobody can neither
    run the venv's python nor import the package: then the package and the venv's
    site-packages are linked (hard links; copied across filesystems) into a world-readable
    folder, run with a Python of the same version that nobody can start. Built once.
    """
    if _reader:
        return _reader["argv"], _reader["env"]  # type: ignore[return-value]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PYTHON"))}
    env["HOME"] = "/tmp"
    probe = "import team.cli.app, pydantic, click"
    if _as_nobody(sys.executable, probe, env):
        _reader.update(argv=[sys.executable], env=env)
        return [sys.executable], env
    import sysconfig

    want = f"import sys; assert sys.version_info[:2] == {tuple(sys.version_info[:2])}"
    candidates = [
        os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
        f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
        f"/usr/local/bin/python{sys.version_info.major}.{sys.version_info.minor}",
    ]
    python = next((c for c in candidates if os.path.exists(c) and _as_nobody(c, want, env)), None)
    if python is None:
        pytest.skip(
            f"no Python {sys.version_info.major}.{sys.version_info.minor} here that nobody "
            f"can run (tried {', '.join(candidates)}): cannot run team as another user"
        )
    root = Path(tempfile.mkdtemp(prefix="team-reader-", dir="/tmp"))
    root.chmod(0o755)
    import atexit

    import team

    atexit.register(shutil.rmtree, root, True)
    site = sysconfig.get_paths()["purelib"]
    shutil.copytree(site, root / "site", copy_function=_link_or_copy, symlinks=True)
    shutil.copytree(Path(team.__file__).parent, root / "src" / "team", copy_function=_link_or_copy)
    for d in [root, *root.rglob("*")]:
        if d.is_dir() and not d.is_symlink():
            d.chmod(0o755)
    env = {**env, "PYTHONPATH": f"{root / 'src'}:{root / 'site'}", "PYTHONNOUSERSITE": "1"}
    if not _as_nobody(python, probe, env):
        pytest.skip(f"nobody cannot import team even from {root} with {python}")
    _reader.update(argv=[python], env=env)
    return [python], env


def run_as_reader(*args: str, ws: Workspace) -> subprocess.CompletedProcess:
    """Run the CLI as a user for whom the workspace is read-only.

    chmod alone does not stop root, so as root the command runs as `nobody`, with a copy
    of the package it can read when the clone is private (`reader_command`).
    """
    prefix: list[str] = []
    python = [sys.executable]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["HOME"] = "/tmp"
    if IS_ROOT:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.skip("running as root without setpriv: cannot drop to an unprivileged user")
        prefix = [setpriv, *READER]
        python, env = reader_command()
    return subprocess.run(
        [*prefix, *python, "-m", "team", *args, "--dir", str(ws.root)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd="/",
    )


def test_a_read_only_workspace_gives_one_line_and_changes_nothing():
    with shared_dir() as d:
        ws = make_ws(d / "ws")
        # a healthy, existing .team: a task, mail for alice and for the user, an events.db
        assert run_team("assign", "alice", "Fix the parser", "--dir", str(ws.root)).returncode == 0
        assert (
            run_team("send", "user", "done", "--from", "bob", "--dir", str(ws.root)).returncode == 0
        )
        assert ws.events_db.exists()
        for p in [ws.root, *ws.root.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        before = tree(ws.root)
        for args in (
            ["up", "--until-idle"],
            ["up"],
            ["assign", "alice", "Another task"],
            ["assign", "--any", "Open task"],
            ["send", "bob", "hello"],
            ["broadcast", "hello all"],
            ["inbox", "user", "--ack"],
        ):
            err = one_clear_line(run_as_reader(*args, ws=ws))
            assert "permission denied" in err or "read-only" in err, (args, err)
            assert "move it aside" not in err, err  # the events.db is healthy
        assert tree(ws.root) == before
        # reading still works
        r = run_as_reader("inbox", "user", ws=ws)
        assert r.returncode == 0 and "done" in r.stdout


# -- a full disk ----------------------------------------------------------------------


@contextlib.contextmanager
def small_filesystem(size: str = "4m") -> Iterator[Path]:
    """A tmpfs of `size`: a real ENOSPC, with no risk to the machine's disks."""
    if not IS_ROOT or not shutil.which("mount"):
        pytest.skip("mounting a small tmpfs needs root")
    d = Path(tempfile.mkdtemp(prefix="team-full-", dir="/tmp"))
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        d.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)
        with contextlib.suppress(OSError):
            d.rmdir()


def fill(root: Path, leave_pages: int = 0) -> list[Path]:
    """Fill the filesystem with one-page files, then free `leave_pages` of them."""
    files = []
    for i in range(100_000):
        p = root / f"filler-{i:06d}"
        try:
            with open(p, "wb") as f:
                f.write(b"\0" * 4096)
        except OSError:
            p.unlink(missing_ok=True)
            break
        files.append(p)
    for p in files[len(files) - leave_pages :] if leave_pages else []:
        p.unlink()
    return files


def test_a_full_disk_gives_one_line_and_leaves_no_partial_file():
    with small_filesystem() as d:
        ws = make_ws(d / "ws")
        assert run_team("assign", "alice", "Fix the parser", "--dir", str(ws.root)).returncode == 0
        assert (
            run_team("send", "user", "done", "--from", "bob", "--dir", str(ws.root)).returncode == 0
        )
        fill(d)
        before = tree(ws.root)
        for args in (
            ["up", "--until-idle"],
            ["assign", "alice", "Another task"],
            ["assign", "--any", "Open task"],
            ["send", "bob", "hello"],
            ["broadcast", "hello all"],
        ):
            r = run_team(*args, "--dir", str(ws.root))
            err = one_clear_line(r)
            assert "disk full" in err, (args, err)
            assert "move it aside" not in err
        assert tree(ws.root) == before  # no temp file, no task without its message
        r = run_team("inbox", "user", "--ack", "--dir", str(ws.root))
        assert r.returncode == 0 and "done" in r.stdout and "Traceback" not in r.stderr


def test_assign_is_all_or_nothing_when_the_message_does_not_fit():
    with small_filesystem() as d:
        ws = make_ws(d / "ws")
        assert run_team("send", "alice", "warm up", "--dir", str(ws.root)).returncode == 0
        fill(d, leave_pages=1)  # room for the task file, none for the message after it
        r = run_team("assign", "alice", "Fix the parser", "--dir", str(ws.root))
        one_clear_line(r)
        assert TaskBoard(ws.tasks_dir).list() == []  # no task its owner would never hear of


def test_a_full_disk_mid_run_warns_once_holds_the_events_and_writes_them_back():
    """The review's storm (issue 24, 7): an agent's command fills the disk while the team
    runs. The event log says so once, tries again a few times a minute rather than
    spinning (the recovery line counts the tries), keeps every event in memory, and
    writes them, the audit row of the command that filled the disk among them, once
    space returns; `team status` says there was an outage."""
    import json
    import time

    from fakeapi import FakeMessagesAPI, ScriptedResponder
    from teamrun import wait_for
    from test_sandbox_e2e import one_agent_workspace, tool_use

    fill_cmd = "head -c 64M /dev/zero > filler; echo filled"
    script = ScriptedResponder(
        [tool_use("fill", ("bash", {"command": fill_cmd})), "Done."], then="Nothing more."
    )
    with small_filesystem("8m") as d, FakeMessagesAPI(script) as api:
        ws = one_agent_workspace(d / "ws", 'sandbox = "off"')
        out_path = Path(tempfile.mkdtemp(prefix="team-full-out-")) / "out.txt"
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test-not-real",
               "ANTHROPIC_BASE_URL": api.url}  # fmt: skip
        with open(out_path, "w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "team", "up", "--timeout", "240", "--dir", str(ws.root)],
                env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        try:
            assert run_team("send", "alice", "fill it", "--dir", str(ws.root)).returncode == 0
            text = lambda: out_path.read_text()  # noqa: E731
            wait_for(lambda: "cannot record events" in text(), timeout=120, what="the warning")
            time.sleep(4)  # the team idles on a full disk: no storm
            during = text()
            assert during.count("cannot record events") == 1, during
            assert "could not record" not in during
            assert len(during.splitlines()) < 40, during
            (ws.root / "filler").unlink()  # space returns
            wait_for(lambda: "writable again" in text(), timeout=60, what="the recovery line")
            line = next(x for x in text().splitlines() if "writable again" in x)
            secs = float(line.split("after ")[1].split("s and")[0])
            tries = int(line.split(" and ")[1].split()[0])
            # 0.5, 1, 2, then one try per 5 s, however many events come: not one per event
            assert 1 <= tries <= 4 + secs / 5, line
            wait_for(lambda: "events: recorded again after 1 outage" in
                     run_team("status", "--dir", str(ws.root)).stdout,
                     timeout=30, what="team status to say so")  # fmt: skip
            status = json.loads(run_team("status", "--json", "--dir", str(ws.root)).stdout)
            assert status["events"]["dropped"] == 0 and status["events"]["outages"] == 1
            assert run_team("down", "--dir", str(ws.root)).returncode == 0
            assert proc.wait(timeout=120) == 0, text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        warnings = [x for x in text().splitlines() if "events" in x and "warning" in x]
        assert len(warnings) <= 3, warnings
        rows = json.loads(run_team("audit", "--json", "--dir", str(ws.root)).stdout)
        assert [r["target"] for r in rows if r["tool"] == "bash"] == [fill_cmd]
        shutil.rmtree(out_path.parent)


def test_a_command_killed_with_its_team_still_has_its_audit_row(tmp_path):
    """The audit row of a command is written before it runs (issue 24, 7): kill -9 of
    the team mid-command leaves `team audit` saying the command started and never
    finished; a command that did finish is one row, its outcome."""
    import json
    import signal

    from fakeapi import FakeMessagesAPI, ScriptedResponder
    from teamrun import wait_for
    from test_sandbox_e2e import one_agent_workspace, tool_use

    script = ScriptedResponder(
        [
            tool_use("a", ("bash", {"command": "echo first"})),
            tool_use("b", ("bash", {"command": "sleep 600"})),
        ],
        then="Nothing more.",
    )
    with FakeMessagesAPI(script) as api:
        ws = one_agent_workspace(tmp_path / "ws", 'sandbox = "off"')
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test-not-real",
               "ANTHROPIC_BASE_URL": api.url}  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "team", "up", "--dir", str(ws.root)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        try:
            assert run_team("send", "alice", "go", "--dir", str(ws.root)).returncode == 0

            def audit() -> list[dict]:
                r = run_team("audit", "--json", "--dir", str(ws.root))
                return json.loads(r.stdout) if r.returncode == 0 else []

            wait_for(lambda: any(r["target"] == "sleep 600" for r in audit()),
                     timeout=180, what="the sleep's audit row")  # fmt: skip
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    rows = [(r["target"], r["outcome"]) for r in audit() if r["tool"] == "bash"]
    assert rows == [("echo first", "ok"), ("sleep 600", "started")]


def test_events_held_on_a_full_disk_are_bounded_and_counted(monkeypatch):
    """Past HELD_MAX the oldest held events go, counted; the rest are written on recovery."""
    import sqlite3

    from teamrun import wait_for

    from team.core import events

    monkeypatch.setattr(events, "HELD_MAX", 100)
    with small_filesystem("2m") as d:
        log = events.SqliteEventLog(d / "events.db")
        try:
            files = fill(d)
            for i in range(150):
                log.emit(events.AgentEvent("alice", "idle", f"n{i}"))
            log.flush()
            health = log.health()
            assert health is not None and health["failing_since"] is not None
            assert health["held"] == 100 and health["dropped"] == 50
            for p in files:
                p.unlink()
            wait_for(lambda: not (log.health() or {}).get("held"), timeout=30, what="recovery")
        finally:
            log.close()
        conn = sqlite3.connect(d / "events.db")
        kept = [r[0] for r in conn.execute("SELECT detail FROM agent_events ORDER BY id")]
        conn.close()
        assert kept == [f"n{i}" for i in range(50, 150)]  # the newest 100, in order
