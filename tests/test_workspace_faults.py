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


def run_as_reader(*args: str, ws: Workspace) -> subprocess.CompletedProcess:
    """Run the CLI as a user for whom the workspace is read-only.

    chmod alone does not stop root, so as root the command runs as `nobody`.
    """
    prefix: list[str] = []
    if IS_ROOT:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.skip("running as root without setpriv: cannot drop to an unprivileged user")
        prefix = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["HOME"] = "/tmp"
    return subprocess.run(
        [*prefix, sys.executable, "-m", "team", *args, "--dir", str(ws.root)],
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
