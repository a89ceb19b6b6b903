"""`team up`, `team down`, `team status` and `team demo` as a user runs them: subprocesses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from conftest import ROOT, run_team, write_team
from teamrun import (
    assign,
    check_every_task_completed,
    check_identity_after_every_compaction,
    check_messages_exactly_once,
    make_workspace,
    start_up,
    wait_for,
)

from team.agents.runtime.lock import TeamLock
from team.mailbox.maildir import MaildirMailbox

NAMES = ["alice", "bob", "carol"]


def test_a_sim_team_finishes_work_assigned_before_and_during_the_run(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    assign(ws, "alice", "Review src/inventory.py and list its functions")
    assign(ws, "--any", "Count the lines of every Python file under src/")
    # slow enough that alice's task outlasts the two CLI calls below on a busy machine:
    # mail that lands after the team stopped waits for the next `team up`
    proc = start_up(ws, {}, "--sim-latency", "0.25", grace="1")
    wait_for(lambda: ws.events_db.exists(), what="the team to start")
    r = run_team(
        "assign",
        "bob",
        "Check tests/test_inventory.py covers every function",
        "--dir",
        str(ws.root),
    )
    assert r.returncode == 0, r.stderr
    r = run_team("broadcast", "Standup in five minutes", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert "offline simulation" in out and "3 of 3 completed" in out
    check_every_task_completed(ws)
    check_messages_exactly_once(ws, NAMES)
    check_identity_after_every_compaction(ws, NAMES)
    status = json.loads(run_team("status", "--json", "--dir", str(ws.root)).stdout)
    assert status["running"] is False
    assert {a: s["state"] for a, s in status["agents"].items()} == dict.fromkeys(NAMES, "down")


def test_second_up_down_and_status(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    proc = start_up_forever(ws)
    try:
        wait_for(
            lambda: TeamLock(ws.lock_path).is_held() and ws.status_path.exists(),
            what="the team to be up",
        )
        second = run_team("up", "--dir", str(ws.root))
        assert second.returncode == 1
        assert second.stderr.count("\n") == 1 and "already running" in second.stderr
        status = json.loads(run_team("status", "--json", "--dir", str(ws.root)).stdout)
        assert status["running"] is True and set(status["agents"]) == set(NAMES)
        r = run_team("down", "--dir", str(ws.root))
        assert r.returncode == 0, r.stderr
        assert "team stopped" in r.stdout
        proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    answers = MaildirMailbox(ws.inbox_dir("user")).pending()
    assert sorted(m.sender for m in answers) == NAMES
    r = run_team("down", "--dir", str(ws.root))
    assert r.returncode == 1 and "no team is running" in r.stderr


def test_sigterm_stops_gracefully(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    proc = start_up_forever(ws)
    wait_for(lambda: ws.status_path.exists(), what="the team to be up")
    proc.terminate()
    proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert not TeamLock(ws.lock_path).is_held()


def start_up_forever(ws):
    return subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--dir", str(ws.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_unknown_agent_in_send_and_assign_is_one_line_and_no_inbox(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    for args in (["send", "zed", "hi"], ["assign", "zed", "do it"]):
        r = run_team(*args, "--dir", str(ws.root))
        assert r.returncode == 1 and r.stderr.count("\n") == 1
        assert "unknown agent 'zed'" in r.stderr
    assert not ws.inbox_dir("zed").exists()
    assert not any(ws.tasks_dir.glob("*.json")) if ws.tasks_dir.exists() else True


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```(?:bash|sh)?\n(.*?)```", quick, re.S)]


def test_readme_quick_start_has_exactly_two_commands():
    cmds = quick_start_commands()
    assert len(cmds) == 2
    assert cmds[0].endswith("team demo")
    script = ROOT / cmds[1].split()[0]  # the test command may be a script that runs pytest
    assert "pytest" in cmds[1] or (script.is_file() and "pytest" in script.read_text())


def test_the_demo_from_a_fresh_tree_finishes_by_itself(tmp_path):
    """The quick start's demo, on a copy of the committed tree (the venv is reused)."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout
    tree = tmp_path / "clone"
    for rel in files.split():
        if (ROOT / rel).is_file():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, tree / rel)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    r = subprocess.run(
        [sys.executable, "-m", "team", "demo", "--latency", "0"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "8 of 8 completed" in r.stdout  # 4 assigned, 4 the lead split its goal into
    assert (tree / "demo" / ".team" / "events.db").exists()
    assert Path(tree / "demo" / "team.toml").exists()


def test_a_quick_look_by_status_does_not_block_up(tmp_path):
    import fcntl

    ws = make_workspace(tmp_path / "ws", "sim")
    ws.team_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(ws.lock_path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH)  # what `team status` holds for an instant
    look = threading.Timer(0.3, lambda: fcntl.flock(fd, fcntl.LOCK_UN))
    look.start()
    try:
        lock = TeamLock(ws.lock_path)
        lock.acquire()
        lock.release()
    finally:
        look.join()
        os.close(fd)


def test_a_corrupt_event_database_is_one_line(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    ws.team_dir.mkdir(parents=True, exist_ok=True)
    ws.events_db.write_bytes(b"this is not sqlite" * 100)
    r = run_team("up", "--until-idle", "--dir", str(ws.root))
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert "events.db" in r.stderr and "Traceback" not in r.stderr


def test_demo_never_deletes_a_folder_it_did_not_make(tmp_path):
    project = tmp_path / "project"
    write_team(project)
    (project / "important.py").write_text("keep me")
    r = run_team("demo", "--latency", "0", "--dir", str(project))
    assert r.returncode == 1 and "not a demo folder" in r.stderr
    assert (project / "important.py").read_text() == "keep me"


def test_the_user_reads_and_acknowledges_their_own_inbox(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    r = run_team("send", "user", "report: done", "--from", "alice", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    r = run_team("inbox", "user", "--ack", "--json", "--dir", str(ws.root))
    assert [m["content"] for m in json.loads(r.stdout)] == ["report: done"]
    r = run_team("inbox", "user", "--json", "--dir", str(ws.root))
    assert json.loads(r.stdout) == []
    r = run_team("inbox", "alice", "--ack", "--dir", str(ws.root))
    assert r.returncode == 1 and "only your own inbox" in r.stderr
    r = run_team("send", "alice", "hi", "--from", "alice", "--dir", str(ws.root))
    assert r.returncode == 1 and "itself" in r.stderr
