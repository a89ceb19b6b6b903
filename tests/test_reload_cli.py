"""team.toml edited while `team up` runs: agents added start, removed ones stop, anything
else is refused in one line and the team goes on (docs/design.md, "team.toml while the
team runs"). The CLI in subprocesses, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import run_team
from teamrun import make_workspace, wait_for
from test_sandbox_e2e import bin_without_bwrap

from team.agents.runtime.control import team_status
from team.mailbox.maildir import MaildirMailbox
from team.tasks import TaskBoard

REFUSED = "team.toml changed while the team runs"


def up_forever(ws, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--dir", str(ws.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def status(ws) -> dict:
    r = run_team("status", "--json", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["agents"]


def state(ws, agent: str) -> str:
    """What `team status` shows as `agent`'s state, read in process (cheap to poll)."""
    return team_status(ws, ws.load_config())["agents"][agent]["state"]


def completed(ws, task_id: int) -> bool:
    return TaskBoard(ws.tasks_dir).get(task_id).status == "completed"


def assign(ws, *args: str) -> int:
    r = run_team("assign", *args, "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    return max(t.id for t in TaskBoard(ws.tasks_dir).list())


def stop(proc, ws) -> tuple[str, str]:
    r = run_team("down", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out, err


def test_an_agent_added_to_team_toml_starts_and_a_removed_one_stops(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    proc = up_forever(ws)
    try:
        wait_for(lambda: ws.status_path.exists(), what="the team to be up")
        with ws.config_path.open("a") as f:
            f.write('\n[[agents]]\nname = "dave"\nrole = "reviewer"\n')
        # before the team takes it, dave is "not running", never a "starting" that lies
        assert status(ws)["dave"]["state"] in ("not running", "starting", "idle", "working")
        task = assign(ws, "dave", "Review src/inventory.py and list its functions")
        wait_for(lambda: completed(ws, task), what="dave to complete his task")
        assert TaskBoard(ws.tasks_dir).get(task).owner == "dave"
        # the snapshot is rewritten each second: the next one shows him at work or idle
        wait_for(lambda: state(ws, "dave") in ("idle", "working"), what="dave's state")

        text = ws.config_path.read_text()
        head, sep, rest = text.partition('[[agents]]\nname = "carol"')
        assert sep, text
        _, _, after = rest.partition("[[agents]]")
        ws.config_path.write_text(head + ("[[agents]]" + after if after else ""))
        user = MaildirMailbox(ws.inbox_dir("user"))
        wait_for(
            lambda: any(m.sender == "carol" for m in user.pending()),
            what="carol to answer the stop she was sent",
        )
        assert "carol" not in status(ws)
        assert run_team("send", "carol", "hi", "--dir", str(ws.root)).returncode == 1
        # the others work on
        task = assign(ws, "alice", "Find every TODO in the project")
        wait_for(lambda: completed(ws, task), what="alice to complete her task")
    finally:
        if proc.poll() is None:
            out, err = stop(proc, ws)
    assert REFUSED not in out
    assert "dave" in out and "added" in out and "removed" in out
    assert "Traceback" not in err


def test_other_changes_and_a_broken_file_are_refused_in_one_line(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim")
    good = ws.config_path.read_text()
    proc = up_forever(ws)
    try:
        wait_for(lambda: ws.status_path.exists(), what="the team to be up")
        ws.config_path.write_text(good + "\n[[agents]\nname = 'broken\n")
        wait_for(lambda: "TOML syntax error" in warnings(ws), what="the broken file's line")
        # a new agent together with another model: neither applies
        ws.config_path.write_text(
            good.replace('model = "sim"', 'model = "claude-x"')
            + '\n[[agents]]\nname = "dave"\nrole = "reviewer"\n'
        )
        wait_for(lambda: REFUSED in warnings(ws), what="the refusal")
        assert "[team] changed" in warnings(ws)
        assert status(ws)["dave"]["state"] == "not running"
        task = assign(ws, "bob", "Find every TODO in the project")
        wait_for(lambda: completed(ws, task), what="bob to complete his task on the old config")
    finally:
        if proc.poll() is None:
            out, err = stop(proc, ws)
    assert out.count("TOML syntax error") == 1 and out.count(REFUSED) == 1
    assert not ws.session_log("dave").exists()
    assert "Traceback" not in err


def warnings(ws) -> str:
    import sqlite3

    if not ws.events_db.exists():
        return ""
    with sqlite3.connect(ws.events_db) as conn:
        rows = conn.execute("select detail from agent_events where kind = 'warning'").fetchall()
    return "\n".join(r[0] or "" for r in rows)


def test_an_added_agent_whose_sandbox_cannot_work_is_refused(tmp_path):
    """As at `team up`: sandbox = "bwrap" without a working bubblewrap starts nothing."""
    ws = make_workspace(tmp_path / "ws", "sim")
    env = {"PATH": bin_without_bwrap(tmp_path)}
    proc = up_forever(ws, env)
    try:
        wait_for(lambda: ws.status_path.exists(), what="the team to be up")
        with ws.config_path.open("a") as f:
            f.write('\n[[agents]]\nname = "dave"\nrole = "reviewer"\nsandbox = "bwrap"\n')
        wait_for(lambda: REFUSED in warnings(ws), what="the refusal")
        assert 'sandbox = "bwrap"' in warnings(ws) and "not installed" in warnings(ws)
        assert status(ws)["dave"]["state"] == "not running"
    finally:
        if proc.poll() is None:
            stop(proc, ws)
    assert not ws.session_log("dave").exists()


def test_an_added_agent_with_looser_confinement_waits_for_approve_config(tmp_path):
    """Escape 1 of issue 24 from the person's side: whatever wrote it, an agent added with
    sandbox = "off" is held with one warning until `team approve-config`."""
    ws = make_workspace(tmp_path / "ws", "sim")
    proc = up_forever(ws)
    try:
        wait_for(lambda: ws.status_path.exists(), what="the team to be up")
        with ws.config_path.open("a") as f:
            f.write('\n[[agents]]\nname = "mallory"\nrole = "x"\nsandbox = "off"\n')
        # the team checks team.toml each second and rewrites its status as often: two
        # rewrites after the edit, the edit has been seen
        for _ in range(2):
            seen = ws.status_path.stat().st_mtime_ns
            wait_for(lambda s=seen: ws.status_path.stat().st_mtime_ns != s, what="a rewrite")
        assert state(ws, "mallory") == "not running"
        r = run_team("approve-config", "--dir", str(ws.root))
        assert r.returncode == 0 and "approved team.toml" in r.stdout, r.stderr
        assert 'mallory (sandbox = "off")' in r.stdout
        wait_for(lambda: state(ws, "mallory") in ("idle", "working"), what="mallory to start")
    finally:
        out, _ = stop(proc, ws)
    assert out.count("held, not started") == 1, out
