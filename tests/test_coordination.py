"""Agents organising themselves: create_task/update_task, unblock and lead notices, plans,
hooks. Through the real Toolbox, the real board and real inboxes; the CLI in a subprocess."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from conftest import add_task, run_team

from team.agents.tools.toolbox import Toolbox, ToolResult
from team.mailbox.maildir import MaildirMailbox
from team.tasks import TaskBoard
from team.teamwork import Crew
from team.workspace.config import parse_config
from team.workspace.places import Workspace

TOML = """\
[team]
name = "t"
model = "sim"
{team_extra}

[[agents]]
name = "alice"
role = "lead"

[[agents]]
name = "bob"
role = "coder"
{bob_extra}

[[agents]]
name = "carol"
role = "tester"
{tail}
"""


def make_ws(
    tmp_path: Path, *, team: str = 'lead = "alice"', bob: str = "", tail: str = ""
) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "team.toml").write_text(TOML.format(team_extra=team, bob_extra=bob, tail=tail))
    return Workspace.at(root)


def box(ws: Workspace, agent: str) -> Toolbox:
    return Toolbox(Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir)), agent, bash_timeout=10)


def ok(r: ToolResult) -> str:
    assert not r.is_error, r.content
    return r.content


def err(r: ToolResult) -> str:
    assert r.is_error, r.content
    return r.content


def mail(ws: Workspace, agent: str) -> list[dict]:
    """Pending messages in `agent`'s inbox, oldest first (read, not taken)."""
    return [
        {"type": m.type, "from": m.sender, "task_id": m.task_id, "content": m.content}
        for m in MaildirMailbox(ws.inbox_dir(agent)).pending()
    ]


# -- create_task / update_task ------------------------------------------------------------


def test_lead_splits_work_with_dependencies_and_owners_hear_in_order(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    lead, bob, carol = box(ws, "alice"), box(ws, "bob"), box(ws, "carol")
    assert "created task #1 (for bob)" in ok(
        lead.run(
            "create_task", {"subject": "write parse()", "owner": "bob", "description": "in p.py"}
        )
    )
    out = ok(
        lead.run("create_task", {"subject": "test parse()", "owner": "carol", "blocked_by": [1]})
    )
    assert "blocked by #1" in out
    assert [m["task_id"] for m in mail(ws, "bob")] == [1]
    assert "in p.py" in mail(ws, "bob")[0]["content"]
    assert mail(ws, "carol") == []  # blocked: told once it can start
    tasks = json.loads(ok(carol.run("list_tasks", {})))
    assert [(t["id"], t["status"], t["blocked_by"]) for t in tasks] == [
        (1, "pending", []),
        (2, "blocked", [1]),
    ]
    assert "blocked by #1" in err(carol.run("claim_task", {"task_id": 2}))
    ok(bob.run("claim_task", {"task_id": 1}))
    out = ok(bob.run("complete_task", {"task_id": 1, "result": "parse() handles empty input"}))
    assert "unblocked #2" in out
    [told] = mail(ws, "carol")
    assert (told["type"], told["task_id"], told["from"]) == ("task", 2, "bob")
    assert "unblocked" in told["content"]
    [done] = mail(ws, "alice")  # the lead hears of the completion, with the result
    assert done["type"] == "notice" and "bob completed task #1" in done["content"]
    assert "parse() handles empty input" in done["content"] and "Unblocked: #2" in done["content"]
    ok(carol.run("claim_task", {"task_id": 2}))


def test_create_task_refuses_unknown_owner_and_unknown_blocker(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    lead = box(ws, "alice")
    assert "unknown teammate 'dave'" in err(
        lead.run("create_task", {"subject": "x", "owner": "dave"})
    )
    assert "no task #4" in err(lead.run("create_task", {"subject": "x", "blocked_by": [4]}))
    assert "must be a list" in err(
        lead.run("create_task", {"subject": "x", "blocked_by": {"a": 1}})
    )
    assert TaskBoard(ws.tasks_dir).list() == []


def test_update_task_fails_hands_over_and_refuses_cycles(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    lead, bob = box(ws, "alice"), box(ws, "bob")
    ok(lead.run("create_task", {"subject": "a", "owner": "bob"}))
    ok(lead.run("create_task", {"subject": "b", "blocked_by": [1]}))
    assert "cycle" in err(lead.run("update_task", {"task_id": 1, "blocked_by": [2]}))
    ok(bob.run("update_task", {"task_id": 1, "status": "in_progress"}))
    assert "status completed or failed" in err(
        bob.run("update_task", {"task_id": 1, "result": "x"})
    )
    assert "derived" in err(bob.run("update_task", {"task_id": 1, "status": "blocked"}))
    ok(bob.run("update_task", {"task_id": 1, "status": "failed", "result": "no access to the db"}))
    notes = [m for m in mail(ws, "alice") if m["type"] == "notice"]
    assert "bob failed task #1" in notes[-1]["content"]
    assert (
        "no access to the db" in notes[-1]["content"]
        and "Waiting on it: #2" in notes[-1]["content"]
    )
    board = TaskBoard(ws.tasks_dir)
    assert board.get(1).status == "failed" and board.get(2).status == "blocked"
    # carol may not take over bob's task; the lead may hand it to her
    board.reopen(1)
    assert "not yours to change" in err(
        box(ws, "carol").run("update_task", {"task_id": 1, "owner": "carol"})
    )
    assert "handed to carol" in ok(lead.run("update_task", {"task_id": 1, "owner": "carol"}))
    assert board.get(1).owner == "carol"
    assert "reassigned to carol" in mail(ws, "bob")[-1]["content"]
    assert mail(ws, "carol")[-1]["task_id"] == 1


def test_clearing_what_a_task_waits_on_delivers_it_and_a_same_owner_hand_over_tells_nobody(
    tmp_path: Path,
) -> None:
    ws = make_ws(tmp_path)
    lead = box(ws, "alice")
    ok(lead.run("create_task", {"subject": "a"}))
    ok(lead.run("create_task", {"subject": "b", "owner": "bob", "blocked_by": [1]}))
    assert mail(ws, "bob") == []  # blocked: bob hears of it when it unblocks
    ok(lead.run("update_task", {"task_id": 2, "blocked_by": []}))
    [told] = mail(ws, "bob")  # unblocked by hand, not by a completion: told all the same
    assert (told["type"], told["task_id"], told["from"]) == ("task", 2, "alice")
    assert "bob has it already" in ok(lead.run("update_task", {"task_id": 2, "owner": "bob"}))
    assert len(mail(ws, "bob")) == 1  # nothing changed, nobody told
    assert "tasks are for agents, not 'user'" in err(
        lead.run("update_task", {"task_id": 2, "owner": "user"})
    )


def test_without_a_lead_nobody_is_notified(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, team="")
    bob = box(ws, "bob")
    ok(bob.run("create_task", {"subject": "mine"}))
    ok(bob.run("claim_task", {"task_id": 1}))
    ok(bob.run("complete_task", {"task_id": 1}))
    assert all(mail(ws, a) == [] for a in ("alice", "bob", "carol"))
    r = run_team("goal", "ship it", "--dir", str(ws.root))
    assert r.returncode == 1 and "no lead" in r.stderr and len(r.stderr.splitlines()) == 1


def test_lead_must_be_an_agent() -> None:
    from team.workspace.config import ConfigError

    with pytest.raises(ConfigError, match=r"team\.lead: 'zed' is not an agent"):
        parse_config({"team": {"lead": "zed"}, "agents": [{"name": "a", "role": "r"}]})


def test_goal_reaches_the_lead(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    r = run_team("goal", "Ship the parser", "--dir", str(ws.root))
    assert (r.returncode, r.stdout.strip()) == (0, "goal sent to alice (the lead)"), r.stderr
    [m] = mail(ws, "alice")
    assert (m["type"], m["from"], m["content"]) == ("goal", "user", "Ship the parser")


# -- plan approval ---------------------------------------------------------------------------


def test_plan_approval_through_the_cli(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, team="", bob="plan_approval = true")
    board = TaskBoard(ws.tasks_dir)
    bob = box(ws, "bob")
    board.create("rewrite the parser", owner="bob")
    assert "submit_plan" in ok(bob.run("claim_task", {"task_id": 1}))
    refused = err(bob.run("write_file", {"path": "p.py", "content": "x"}))
    assert "approved plan" in refused and not (ws.root / "p.py").exists()
    assert "approved plan" in err(bob.run("complete_task", {"task_id": 1}))
    out = ok(bob.run("submit_plan", {"task_id": 1, "plan": "1. read p.py\n2. rewrite it"}))
    assert "sent to user" in out  # no lead: the person reviews
    r = run_team("plans", "--dir", str(ws.root))
    assert r.returncode == 0 and "#1 rewrite the parser (bob, plan submitted)" in r.stdout
    assert "2. rewrite it" in r.stdout
    r = run_team("reject", "1", "--why", "keep the old API", "--dir", str(ws.root))
    assert (r.returncode, r.stdout.strip()) == (0, "plan for task #1 rejected; bob is told")
    [answer] = [m for m in mail(ws, "bob") if m["type"] == "plan_response"]
    assert "rejected: keep the old API" in answer["content"] and answer["from"] == "user"
    assert "approved plan" in err(
        bob.run("edit_file", {"path": "p.py", "old_text": "a", "new_text": "b"})
    )
    ok(bob.run("submit_plan", {"task_id": 1, "plan": "1. rewrite, same API"}))
    r = run_team("approve", "1", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    assert "approved" in [m for m in mail(ws, "bob") if m["type"] == "plan_response"][-1]["content"]
    ok(bob.run("write_file", {"path": "p.py", "content": "x"}))
    ok(bob.run("complete_task", {"task_id": 1, "result": "rewritten"}))
    assert run_team("plans", "--dir", str(ws.root)).stdout.strip() == "no plans waiting for review"


def test_plan_review_bad_input_is_one_line(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, team="", bob="plan_approval = true")
    TaskBoard(ws.tasks_dir).create("x", owner="bob")
    for args in (("approve", "1"), ("approve", "7"), ("reject", "1", "--why", " ")):
        r = run_team(*args, "--dir", str(ws.root))
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    assert TaskBoard(ws.tasks_dir).get(1).plan_state is None
    assert mail(ws, "bob") == []


def test_the_lead_reviews_plans_with_its_tool(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, bob="plan_approval = true")
    lead, bob = box(ws, "alice"), box(ws, "bob")
    ok(lead.run("create_task", {"subject": "migrate", "owner": "bob"}))
    ok(bob.run("claim_task", {"task_id": 1}))
    assert "sent to alice" in ok(bob.run("submit_plan", {"task_id": 1, "plan": "drop the table"}))
    [req] = [m for m in mail(ws, "alice") if m["type"] == "plan_request"]
    assert "drop the table" in req["content"] and "review_plan" in req["content"]
    assert "only the lead" in err(
        box(ws, "carol").run("review_plan", {"task_id": 1, "approve": True})
    )
    assert "needs feedback" not in ok(
        lead.run("review_plan", {"task_id": 1, "approve": False, "feedback": "back it up first"})
    )
    [answer] = [m for m in mail(ws, "bob") if m["type"] == "plan_response"]
    assert "back it up first" in answer["content"]


# -- hooks -------------------------------------------------------------------------------------


def test_a_task_completed_hook_that_rejects(tmp_path: Path) -> None:
    # a hook writes where an agent's command may (it runs in the team's sandbox)
    (tmp_path / "ws").mkdir()
    hook = tmp_path / "ws" / "hook.py"
    hook.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "open(sys.argv[1], 'a').write(json.dumps(event) + '\\n')\n"
        "if 'tests pass' not in (event['task']['result'] or ''):\n"
        "    print('run the tests first and say so in the result', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    seen = tmp_path / "ws" / "seen.jsonl"
    # python3 as a person would write it: the sandbox's private /tmp hides a venv kept there
    cmd = shlex.join(["python3", str(hook), str(seen)])  # a clone's path may have spaces
    ws = make_ws(tmp_path, tail=f'\n[hooks]\ntask_completed = "{cmd}"\n')
    bob = box(ws, "bob")
    TaskBoard(ws.tasks_dir).create("fix the bug", owner="bob")
    ok(bob.run("claim_task", {"task_id": 1}))
    out = err(bob.run("complete_task", {"task_id": 1, "result": "fixed"}))
    assert "refused" in out and "run the tests first and say so in the result" in out
    assert TaskBoard(ws.tasks_dir).get(1).status == "in_progress"
    assert mail(ws, "alice") == []  # nothing completed: the lead hears nothing
    ok(bob.run("complete_task", {"task_id": 1, "result": "fixed; tests pass"}))
    assert TaskBoard(ws.tasks_dir).get(1).status == "completed"
    events = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [e["hook_event_name"] for e in events] == ["task_completed"] * 2
    assert events[0]["agent"] == "bob" and events[0]["task"]["id"] == 1
    assert events[0]["task"]["subject"] == "fix the bug" and events[0]["team"] == "t"


def test_a_broken_hook_does_not_stall_the_team(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, tail='\n[hooks]\ntask_completed = "exit 1"\ntimeout = 5\n')
    bob = box(ws, "bob")
    TaskBoard(ws.tasks_dir).create("x", owner="bob")
    ok(bob.run("claim_task", {"task_id": 1}))
    ok(bob.run("complete_task", {"task_id": 1}))  # exit 1 is the hook's failure, not a veto


def test_hooks_run_with_json_and_time_out() -> None:
    from team.hooks import run_hook

    v = run_hook(
        "teammate_idle",
        "cat >/dev/null; echo keep going >&2; exit 2",
        {"agent": "bob"},
        cwd=Path("/"),
        timeout=10,
    )
    assert (v.refused, v.reason) == (True, "keep going")
    assert not run_hook("teammate_idle", "sleep 30", {}, cwd=Path("/"), timeout=0.5).refused
    assert not run_hook("teammate_idle", "true", {}, cwd=Path("/"), timeout=10).refused
    assert not run_hook("teammate_idle", None, {}, cwd=Path("/"), timeout=10).refused


def test_a_running_team_tells_the_lead_and_honours_teammate_idle(tmp_path: Path) -> None:
    out = tmp_path / "ws"  # a hook writes where an agent's command may
    out.mkdir()
    hook = tmp_path / "idle_hook.sh"
    marker = out / "kept"
    # keep bob working once, then let him go idle
    hook.write_text(
        "event=$(cat)\n"  # agents go idle at once: each hook reads its own stdin
        f'echo "$event" >> {out}/idle_events.jsonl\n'
        'case "$event" in *\'"agent": "bob"\'*) ;; *) exit 0;; esac\n'
        f"[ -e {marker} ] && exit 0\n"
        f'touch {marker}; echo "write the changelog too" >&2; exit 2\n'
    )
    ws = make_ws(tmp_path, tail=f'\n[hooks]\nteammate_idle = "sh {hook}"\n')
    add_task(ws.root, "Count the lines of team.toml", owner="bob")
    r = run_team(
        "up",
        "--until-idle",
        "--idle-grace",
        "0.5",
        "--timeout",
        "120",
        "--dir",
        str(ws.root),
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert TaskBoard(ws.tasks_dir).get(1).status == "completed"
    lead_mail = [m.content for m in MaildirMailbox(ws.inbox_dir("alice")).processed()]
    assert any(c.startswith("bob completed task #1") for c in lead_mail), lead_mail
    assert any(c.startswith("bob is idle") for c in lead_mail), lead_mail
    bob_log = ws.session_log("bob").read_text()
    assert "Keep working (teammate_idle hook): write the changelog too" in bob_log
    events = [json.loads(ln) for ln in (out / "idle_events.jsonl").read_text().splitlines()]
    assert {e["hook_event_name"] for e in events} == {"teammate_idle"}
    assert "bob" in {e["agent"] for e in events} and all("open_tasks" in e for e in events)


def test_the_sim_lead_splits_a_goal_into_tasks_that_wait_on_each_other(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    (ws.root / "src").mkdir()
    (ws.root / "src" / "pricing.py").write_text("def price(q, u):\n    return q * u  # TODO\n")
    assert (
        run_team("goal", "Add bulk discounts to src/pricing.py", "--dir", str(ws.root)).returncode
        == 0
    )
    r = run_team(
        "up",
        "--until-idle",
        "--idle-grace",
        "0.5",
        "--timeout",
        "120",
        "--dir",
        str(ws.root),
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    tasks = TaskBoard(ws.tasks_dir).list()
    assert len(tasks) == 4 and all(t.created_by == "alice" for t in tasks)
    assert [t.blocked_by for t in tasks] == [[], [1], [1], [2, 3]]
    assert {t.owner for t in tasks} <= {"bob", "carol"}
    assert all(t.status == "completed" for t in tasks), [(t.id, t.status) for t in tasks]
    done = {t.id: t for t in tasks}
    for t in tasks:  # nobody started before what it waits on was done
        for b in t.blocked_by:
            assert done[b].completed_at <= t.completed_at
    user_mail = MaildirMailbox(ws.inbox_dir("user")).pending()
    [report] = [m for m in user_mail if m.sender == "alice" and m.type == "message"]
    assert "#1, #2, #3, #4" in report.content


def test_a_running_agent_waits_for_its_plan_and_revises_it_after_a_rejection(
    tmp_path: Path,
) -> None:
    import os
    import subprocess
    import time

    ws = make_ws(tmp_path, team="", bob="plan_approval = true")
    add_task(ws.root, "Count the lines of team.toml", owner="bob")
    board = TaskBoard(ws.tasks_dir)

    def wait_for(pred, what: str) -> None:
        deadline = time.monotonic() + 90
        while not pred():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.1)

    proc = subprocess.Popen(
        [sys.executable, "-m", "team", "up", "--dir", str(ws.root)],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: board.get(1).plan_state == "submitted", "the first plan")
        assert not (ws.root / "notes").exists()  # nothing written while the plan waits
        r = run_team("reject", "1", "--why", "say which file you count", "--dir", str(ws.root))
        assert r.returncode == 0, r.stderr
        wait_for(
            lambda: (
                board.get(1).plan_state == "submitted" and "Revised" in (board.get(1).plan or "")
            ),
            "the revised plan",
        )
        assert "say which file you count" in board.get(1).plan
        assert board.get(1).status == "in_progress"
        assert run_team("approve", "1", "--dir", str(ws.root)).returncode == 0
        wait_for(lambda: board.get(1).status == "completed", "the task to be completed")
        assert board.get(1).plan_state == "approved"
    finally:
        run_team("down", "--dir", str(ws.root))
        proc.communicate(timeout=60)
    assert proc.returncode == 0
