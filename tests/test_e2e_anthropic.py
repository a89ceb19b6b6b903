"""End to end through the real `anthropic` SDK against a local, strict Messages API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
import sim_responder
from conftest import run_team
from fakeapi import FakeMessagesAPI
from teamrun import (
    assign,
    check_every_task_completed,
    check_identity_after_every_compaction,
    check_messages_exactly_once,
    check_transcripts_hold_full_text,
    events,
    make_workspace,
    session_records,
    start_up,
    wait_for,
)

from team.agents.runtime.lock import TeamLock
from team.core.conversation import Message, to_api
from team.tasks import TaskBoard

NAMES = ["alice", "bob", "carol"]
MODEL = "claude-sonnet-4-5"

pytestmark = pytest.mark.slow


def api_env(api: FakeMessagesAPI) -> dict:
    return {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}


def tool_results_sent(api: FakeMessagesAPI) -> list[str]:
    return [
        b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
        for req in api.requests
        for m in req["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


class HeldResponder:
    """The simulator's answers, held after the first `n` calls until `release()`, so work
    sent "while the team is up" lands before the team can finish, however busy the
    machine (mail that arrives after a team stopped waits for the next `team up`)."""

    def __init__(self, n: int = 5) -> None:
        self.n = n
        self.calls = 0
        self._lock = threading.Lock()
        self._open = threading.Event()
        self.ws = None  # the team it answers for (see sim_responder.facts)

    def __call__(self, body: dict) -> dict:
        with self._lock:
            self.calls += 1
            held = self.calls > self.n
        if held:
            self._open.wait(60)
        return sim_responder.respond(body, self.ws)

    def release(self) -> None:
        self._open.set()


def run_full_team(tmp_path, api, held: HeldResponder):
    ws = make_workspace(tmp_path / "ws", MODEL)
    held.ws = ws
    assign(ws, "alice", "Review src/inventory.py and list its functions")
    assign(ws, "bob", "Check tests/test_inventory.py covers every function")
    assign(ws, "--any", "Count the lines of every Python file under src/")
    proc = start_up(ws, api_env(api))
    wait_for(lambda: held.calls >= held.n, what="the team to start calling the model")
    # work that arrives while the team is up
    assign(ws, "carol", "Read docs/notes.md and summarise the open questions")
    assign(ws, "--any", "Find every TODO in the project")
    r = run_team("send", "bob", "Please also look at src/pricing.py", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    held.release()
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    return ws, out, err


def test_a_three_agent_team_through_the_sdk(tmp_path):
    held = HeldResponder()
    with FakeMessagesAPI(held) as api:
        ws, out, err = run_full_team(tmp_path, api, held)
        assert api.rejections == [], [c.error for c in api.rejections]
        assert "Traceback" not in err
        sent = tool_results_sent(api)
    assert any(s.startswith("[Previous: used ") for s in sent), "micro never placed a placeholder"
    check_every_task_completed(ws)
    assert check_messages_exactly_once(ws, NAMES) >= 6
    assert check_identity_after_every_compaction(ws, NAMES) >= 1
    assert check_transcripts_hold_full_text(ws, NAMES) >= 1
    layers = dict(events(ws, "select layer, count(*) from compactions where success group by 1"))
    assert (
        layers.get("micro", 0) >= 1 and layers.get("auto", 0) >= 1 and layers.get("manual", 0) >= 1
    )
    # every agent sent a cache breakpoint and got cache reads back from the server
    reads = events(ws, "select sum(cache_read_tokens) from model_calls where purpose='agent'")
    assert reads[0][0] > 0
    assert "tasks:" in out and "completed" in out


def test_the_team_finishes_when_a_fifth_of_calls_fail(tmp_path):
    held = HeldResponder()
    with FakeMessagesAPI(held, failure_rate=0.2, seed=7) as api:
        ws, _, _ = run_full_team(tmp_path, api, held)
        injected = sum(1 for c in api.calls if c.injected)
        assert api.rejections == [] or all(c.injected for c in api.rejections)
    assert injected >= 10
    check_every_task_completed(ws)
    check_messages_exactly_once(ws, NAMES)
    assert events(ws, "select count(*) from agent_events where kind='crashed'") == [(0,)]


def test_kill_9_in_the_middle_then_resume(tmp_path):
    sim_responder.DELAY["s"] = 0.02
    try:
        ws = make_workspace(tmp_path / "ws", MODEL)
        with FakeMessagesAPI(lambda body: sim_responder.respond(body, ws)) as api:
            for owner, subject in [
                ("alice", "Review src/inventory.py and list its functions"),
                ("bob", "Check tests/test_inventory.py covers every function"),
                ("carol", "Read docs/notes.md and summarise the open questions"),
                ("--any", "Find every TODO in the project"),
            ]:
                assign(ws, owner, subject)
            proc = start_up(ws, api_env(api))
            wait_for(lambda: len(api.requests) >= 25, what="the run to get going")
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=10)
            assert not TaskBoard(ws.tasks_dir).all_done(), "the kill landed after the work"
            before = {n: session_records(ws, n) for n in NAMES}
            calls_before = len(api.requests)
            r = run_team(
                "send", "alice", "One more thing: check src/pricing.py", "--dir", str(ws.root)
            )
            assert r.returncode == 0
            proc = start_up(ws, api_env(api))
            _, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err
            assert api.rejections == [], [c.error for c in api.rejections]
            after_requests = api.requests[calls_before:]
    finally:
        sim_responder.DELAY["s"] = 0.0
    check_every_task_completed(ws)
    check_messages_exactly_once(ws, NAMES)
    for name in NAMES:
        old = before[name]
        new = session_records(ws, name)
        assert new[: len(old)] == old, f"{name}'s log was rewritten"
        if any(r["t"] == "assistant" for r in old) and not any(
            r["t"] == "compaction" for r in new[len(old) :]
        ):
            # it continued its conversation: the first request after the restart carries
            # the context the log held at the kill, which is the segment after its last
            # compaction (the log may end in one: then that context is the compaction's
            # first message, and what it said before is in the transcript)
            cut = max((i for i, r in enumerate(old) if r["t"] == "compaction"), default=-1)
            segment = old[cut + 1 :]
            mine = [
                q
                for q in after_requests
                if f"You are '{name}'" in json.dumps(q.get("system")) and q.get("tools")
            ]
            assert mine, f"{name} made no call after the restart"
            sent = mine[0]["messages"]
            said = [r["message"] for r in segment if r["t"] == "assistant"]
            if said:
                assert any(m["role"] == "assistant" and _same(m, said[-1]) for m in sent)
            else:
                first = old[cut]["first"]
                assert sent[0]["role"] == first["role"] == "user"
                assert _blocks(sent[0])[: len(_blocks(first))] == _blocks(_as_sent(first))


def _blocks(msg: dict) -> list[dict]:
    content = msg["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return [{k: v for k, v in b.items() if k not in ("cache_control", "name")} for b in content]


def _as_sent(stored: dict) -> dict:
    """A stored message as the API is sent it (its blocks' private data left out)."""
    return to_api([Message.from_dict(stored)])[0]


def _same(api_msg: dict, stored: dict) -> bool:
    return _blocks(api_msg) == _blocks(_as_sent(stored))


def test_no_api_key_points_at_the_sim(tmp_path):
    ws = make_workspace(tmp_path / "ws", MODEL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    r = subprocess.run(
        [sys.executable, "-m", "team", "up", "--dir", str(ws.root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1
    assert "ANTHROPIC_API_KEY" in r.stderr and "--model sim" in r.stderr
    assert not TeamLock(ws.lock_path).is_held()
