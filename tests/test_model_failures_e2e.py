"""`team up` against a local Messages API that fails the way the real one does.

Permanent errors stop an agent with a reason, transient ones are waited out (and the
wait gives way to a stop), a prompt too long is compacted away, and replies cut off at
max_tokens or refused are handled instead of run or retried blindly.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import sim_responder
from conftest import run_team, send_mail
from fakeapi import FakeError, FakeMessagesAPI
from teamrun import IDLE_GRACE, assign, events, make_workspace, session_records, wait_for

from team.agents.runtime.control import team_status
from team.mailbox.maildir import MaildirMailbox
from team.tasks import TaskBoard
from team.workspace.config import render_config
from team.workspace.places import Workspace

MODEL = "claude-sonnet-4-5"
pytestmark = pytest.mark.slow


def api_env(api: FakeMessagesAPI) -> dict:
    return {**os.environ, "ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}


def small_team(tmp_path, names=("alice", "bob")) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "team.toml").write_text(render_config("t", MODEL, [(n, "coder") for n in names]))
    return Workspace.at(root)


def agent_of(body: dict) -> str:
    system = json.dumps(body.get("system"))
    m = re.search(r"You are '([a-z][a-z0-9_-]*)'", system)
    return m.group(1) if m else ""


def up(ws: Workspace, api: FakeMessagesAPI, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "team", "up", *args, "--dir", str(ws.root)],
        env=api_env(api),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def send(ws: Workspace, to: str, text: str) -> None:
    send_mail(ws.root, to, text)


def status(ws: Workspace) -> dict:
    r = run_team("status", "--json", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["agents"]


def state(ws: Workspace, agent: str) -> str:
    """What `team status` shows as `agent`'s state, read in process (cheap to poll)."""
    return team_status(ws, ws.load_config())["agents"][agent]["state"]


def test_bad_credentials_stop_the_team_at_once_with_one_line(tmp_path):
    ws = small_team(tmp_path)
    send(ws, "alice", "Please review src/app.py")
    send(ws, "bob", "Please write the changelog")
    with FakeMessagesAPI(failure_rate=1.0, failure_statuses=(401,)) as api:
        proc = up(ws, api)  # no --until-idle: it ends because no agent can work
        out, err = proc.communicate(timeout=60)
        calls = len(api.calls)
    assert proc.returncode == 1, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.match(r"team: error: (alice|bob) failed: Anthropic API error 401 ", err), err
    assert "(and 1 more agents)" in err
    assert calls == 2  # one call each: nothing retries what cannot succeed
    failed = events(ws, "select agent from agent_events where kind='failed' order by agent")
    assert failed == [("alice",), ("bob",)]
    shown = [ln for ln in out.splitlines() if "401" in ln]
    assert len(shown) == 2, out  # each failure shown once, not twice


def test_unknown_model_fails_one_agent_and_status_says_why(tmp_path):
    ws = small_team(tmp_path)

    def respond(body):
        if agent_of(body) == "alice":
            raise FakeError(404, f"model: {body['model']}")
        return sim_responder.respond(body, ws)

    with FakeMessagesAPI(respond) as api:
        proc = up(ws, api)
        try:
            wait_for(lambda: ws.status_path.exists(), timeout=180, what="the team to start")
            send(ws, "alice", "Please review src/app.py")
            send(ws, "bob", "Hello")
            wait_for(lambda: state(ws, "alice").startswith("failed"), what="alice to fail")
            st = status(ws)
            assert st["alice"]["state"] == (
                f"failed: Anthropic API error 404 not_found_error: model: {MODEL} "
                + st["alice"]["state"].split(f"model: {MODEL} ", 1)[1]
            )
            assert "[request " in st["alice"]["state"]
            wait_for(lambda: state(ws, "bob") == "idle", what="bob to answer")
            assert run_team("down", "--dir", str(ws.root)).returncode == 0
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        alice_calls = sum(agent_of(c.body or {}) == "alice" for c in api.calls)
    assert alice_calls == 1
    assert proc.returncode == 1 and err.startswith("team: error: alice failed: ") and "404" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_overloaded_api_is_waited_out_and_a_stop_does_not_wait(tmp_path):
    ws = small_team(tmp_path, names=("alice",))
    with FakeMessagesAPI(
        lambda body: sim_responder.respond(body, ws), retry_after_ms=120_000
    ) as api:
        api.fail_next(529)  # the server asks for two minutes' patience
        proc = up(ws, api)
        try:
            wait_for(lambda: ws.status_path.exists(), timeout=180, what="the team to start")
            send(ws, "alice", "Please review src/app.py")
            wait_for(lambda: state(ws, "alice").startswith("waiting"), what="a backoff")
            alice = status(ws)["alice"]
            m = re.fullmatch(r"waiting: overloaded \(529\), retry in (\d+)s", alice["state"])
            assert m and 30 <= int(m[1]) <= 120, alice
            assert "529" in alice["error"]
            asked = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
            took = time.monotonic() - asked
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    assert took < 30, f"the stop waited out the backoff ({took:.1f}s)"
    answers = MaildirMailbox(ws.inbox_dir("user")).pending()
    assert [m.type for m in answers] == ["shutdown_response"]
    assert len([ln for ln in out.splitlines() if "529" in ln]) == 1, out  # the warning, once


def test_a_repeated_transient_error_is_one_warning_and_a_status_that_counts(tmp_path):
    """Four 529s in a row: one warning line (not one per retry), the status line counts
    the failures while they last, and one `recovered` event ends them."""
    ws = small_team(tmp_path, names=("alice",))
    with FakeMessagesAPI(lambda body: sim_responder.respond(body, ws), retry_after_ms=700) as api:
        api.fail_next(529, 529, 529, 529)
        proc = up(ws, api, "--until-idle", "--idle-grace", "0.3", "--timeout", "120")
        try:
            wait_for(lambda: ws.status_path.exists(), timeout=180, what="the team to start")
            send(ws, "alice", "Please review src/app.py")
            seen: set[str] = set()

            def counted() -> bool:
                seen.add(state(ws, "alice"))
                return any(", 3 failed, retry in" in s for s in seen)

            wait_for(counted, what="the status to count the retries")
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    warnings = [ln for ln in out.splitlines() if "529" in ln]
    assert len(warnings) == 1, out
    assert "team status shows the retries" in warnings[0]
    kinds = events(ws, "SELECT kind, detail FROM agent_events WHERE agent = 'alice'")
    assert [d for k, d in kinds if k == "recovered"] == ["model call ok after 4 failed"]
    assert len([k for k, _ in kinds if k == "warning"]) == 1


def test_a_prompt_too_long_is_compacted_and_the_work_goes_on(tmp_path):
    ws = make_workspace(tmp_path / "ws", MODEL, threshold=200_000)  # the window: auto never fires
    assign(ws, "alice", "Review src/inventory.py and list its functions")
    with FakeMessagesAPI(lambda body: sim_responder.respond(body, ws), context_window=3000) as api:
        proc = up(ws, api, "--until-idle", "--idle-grace", IDLE_GRACE)
        out, err = proc.communicate(timeout=180)
        too_long = [c for c in api.calls if "prompt is too long" in c.error]
    assert proc.returncode == 0, err
    assert too_long, "the window was never reached: the test proves nothing"
    done = events(
        ws,
        "select count(*) from compactions where agent='alice' and trigger='prompt_too_long' "
        "and success",
    )
    assert done[0][0] >= 1
    assert events(ws, "select count(*) from agent_events where kind in ('failed', 'crashed')") == [
        (0,)
    ]
    assert "1 of 1 completed" in out


def test_a_reply_cut_off_mid_tool_call_is_not_run_and_the_agent_continues(tmp_path):
    ws = small_team(tmp_path, names=("alice",))
    seen: list[dict] = []

    def respond(body):
        seen.append(body)
        if len(seen) == 1:  # the write_file call was cut off: its content never arrived
            return {
                "content": [
                    {"type": "text", "text": "Writing the notes now."},
                    {"type": "tool_use", "name": "write_file", "input": {"path": "notes.md"}},
                ],
                "stop_reason": "max_tokens",
            }
        if len(seen) == 2:  # its text was cut off: asked to continue, it goes on
            return {
                "content": [{"type": "text", "text": "So the plan"}],
                "stop_reason": "max_tokens",
            }
        return {"content": [{"type": "text", "text": "is done."}], "stop_reason": "end_turn"}

    send(ws, "alice", "Please write notes.md")
    with FakeMessagesAPI(respond) as api:
        proc = up(ws, api, "--until-idle", "--idle-grace", IDLE_GRACE)
        _, err = proc.communicate(timeout=60)
        rejected = api.rejections
    assert proc.returncode == 0, err
    assert rejected == []
    assert not (ws.root / "notes.md").exists()  # the cut call was not run
    second = seen[1]["messages"][-1]["content"]
    result = next(b for b in second if b["type"] == "tool_result")
    assert result["is_error"] and "cut off at the max_tokens limit" in json.dumps(result)
    assert any(b["type"] == "text" and "Continue" in b["text"] for b in second)
    third = seen[2]["messages"][-1]["content"]
    assert [b["text"] for b in third if b["type"] == "text"][-1].startswith("Your last reply")
    assert len(seen) == 3


def test_a_refusal_is_recorded_and_reported_to_the_user(tmp_path):
    ws = small_team(tmp_path, names=("alice",))
    send(ws, "alice", "Please do the questionable thing")

    def respond(body):
        return {"content": [], "stop_reason": "refusal"}

    with FakeMessagesAPI(respond) as api:
        proc = up(ws, api, "--until-idle", "--idle-grace", IDLE_GRACE)
        _, err = proc.communicate(timeout=60)
        calls = len(api.calls)
    assert proc.returncode == 0, err
    assert calls == 1  # not retried, not reminded into a loop
    [report] = [m for m in MaildirMailbox(ws.inbox_dir("user")).pending() if m.type == "message"]
    assert report.sender == "alice" and "refused" in report.content
    assert "questionable thing" in report.content
    assert events(ws, "select count(*) from agent_events where kind='refusal'") == [(1,)]
    assert any(r.get("event") == "refusal" for r in session_records(ws, "alice"))


def test_a_damaged_session_log_is_repaired_once_and_the_task_gets_done(tmp_path):
    ws = make_workspace(tmp_path / "ws", "sim", threshold=200_000)
    assign(ws, "alice", "Review src/inventory.py and list its functions")
    r = run_team(
        "up", "--until-idle", "--idle-grace", IDLE_GRACE, "--dir", str(ws.root), timeout=120
    )
    assert r.returncode == 0, r.stderr
    # damage a middle record: an assistant turn whose calls the next record answers
    path = ws.session_log("alice")
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    segment = max((n for n, rec in enumerate(records) if rec["t"] == "compaction"), default=0)
    i = next(
        n
        for n in range(segment + 1, len(records) - 2)
        if records[n]["t"] == "assistant"
        and any(b["type"] == "tool_use" for b in records[n]["message"]["content"])
        and records[n + 1]["t"] == "user"
    )
    lines[i] = lines[i][: len(lines[i]) // 2]  # half a record, then the rest of the log
    path.write_text("\n".join(lines) + "\n")
    assign(ws, "alice", "Find every TODO in the project")
    r = run_team(
        "up", "--until-idle", "--idle-grace", IDLE_GRACE, "--dir", str(ws.root), timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert [t.status for t in TaskBoard(ws.tasks_dir).list()] == ["completed", "completed"]
    kinds = events(ws, "select kind, count(*) from agent_events where agent='alice' group by 1")
    assert dict(kinds).get("repaired") == 1 and "crashed" not in dict(kinds)
    [warning] = [ln for ln in r.stdout.splitlines() if "unreadable" in ln]
    assert "skipped 1 unreadable records" in warning and " 0 repairs" not in warning
