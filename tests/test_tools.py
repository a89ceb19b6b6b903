"""The agents' tools against a real workspace: files, bash, messages and tasks."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from team.agents.tools.toolbox import LOOP_TOOLS, Toolbox, ToolResult, tool_specs
from team.core.events import DeliveryEvent, MemorySink
from team.tasks import TaskBoard
from team.teamwork import Crew
from team.workspace.config import render_config
from team.workspace.places import Workspace

REFERENCE = {
    "bash": ({"command"}, {"command"}),
    "read_file": ({"path", "limit"}, {"path"}),
    "write_file": ({"path", "content"}, {"path", "content"}),
    "edit_file": ({"path", "old_text", "new_text"}, {"path", "old_text", "new_text"}),
    "compact": ({"focus"}, set()),
    "send_message": ({"to", "content", "msg_type"}, {"to", "content"}),
    "broadcast": ({"content"}, {"content"}),
    "read_inbox": (set(), set()),
    "list_tasks": ({"finished"}, set()),  # optional: the reference call still works
    "claim_task": ({"task_id"}, {"task_id"}),
    "complete_task": ({"task_id", "result"}, {"task_id"}),
    "idle": (set(), set()),
}
BOARD_TOOLS = {
    "create_task": ({"subject", "description", "owner", "blocked_by"}, {"subject"}),
    "update_task": ({"task_id", "status", "result", "owner", "blocked_by"}, {"task_id"}),
    "get_task": ({"task_id"}, {"task_id"}),
    "read_result": ({"id", "offset", "limit"}, {"id"}),
}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    text = render_config("t", "sim", [("alice", "coder"), ("bob", "tester"), ("carol", "qa")])
    (root / "team.toml").write_text(text)
    return Workspace.at(root)


@pytest.fixture
def sink() -> MemorySink:
    return MemorySink()


def make_box(ws: Workspace, agent: str = "alice", sink=None, **kw: object) -> Toolbox:
    crew = Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir), sink)
    return Toolbox(crew, agent, **kw)  # type: ignore[arg-type]


@pytest.fixture
def box(ws: Workspace, sink: MemorySink) -> Toolbox:
    return make_box(ws, sink=sink, bash_timeout=10.0)


def ok(result: ToolResult) -> str:
    assert not result.is_error, result.content
    return result.content


def err(result: ToolResult) -> str:
    assert result.is_error, result.content
    assert "\n" not in result.content.strip()  # one clear line
    return result.content


# -- specs --------------------------------------------------------------------------------


def test_specs_match_the_reference_names_and_schemas() -> None:
    specs = {s.name: s for s in tool_specs()}
    assert set(specs) == set(REFERENCE) | set(BOARD_TOOLS)
    for name, (props, required) in {**REFERENCE, **BOARD_TOOLS}.items():
        schema = specs[name].input_schema
        assert schema["type"] == "object"
        assert set(schema["properties"]) == props, name
        assert set(schema["required"]) == required, name
        assert specs[name].description.strip()
        json.dumps(specs[name].to_api())  # what the API gets must be plain JSON
    assert {"compact", "idle", "read_inbox"} == LOOP_TOOLS


def test_plan_tools_only_for_who_uses_them() -> None:
    from team.workspace.config import parse_config

    cfg = parse_config(
        {
            "team": {"lead": "alice"},
            "agents": [
                {"name": "alice", "role": "lead"},
                {"name": "bob", "role": "coder", "plan_approval": True},
                {"name": "carol", "role": "qa"},
            ],
        }
    )
    names = {a: {s.name for s in tool_specs(cfg.agent(a), cfg)} for a in cfg.names()}
    assert "review_plan" in names["alice"] and "submit_plan" not in names["alice"]
    assert "submit_plan" in names["bob"] and "review_plan" not in names["bob"]
    assert not {"submit_plan", "review_plan"} & names["carol"]


def test_run_never_raises_on_bad_calls(box: Toolbox) -> None:
    assert "unknown tool" in err(box.run("rm_rf", {}))
    assert "missing required input 'path'" in err(box.run("read_file", {}))
    assert "must be a string" in err(box.run("write_file", {"path": 3, "content": "x"}))
    assert "must be an integer" in err(box.run("claim_task", {"task_id": "first"}))
    assert "must be an integer" in err(box.run("claim_task", {"task_id": True}))
    assert "JSON object" in err(box.run("bash", ["ls"]))  # type: ignore[arg-type]
    assert "agent loop" in err(box.run("compact", {}))
    assert "no such file" in err(box.run("read_file", {"path": "missing.txt"})).lower()


# -- read_file ----------------------------------------------------------------------------


def test_read_file_relative_and_absolute_inside(ws: Workspace, box: Toolbox) -> None:
    (ws.root / "src").mkdir()
    (ws.root / "src" / "a.py").write_text("print('hi')\n")
    assert ok(box.run("read_file", {"path": "src/a.py"})) == "print('hi')\n"
    assert ok(box.run("read_file", {"path": str(ws.root / "src" / "a.py")})) == "print('hi')\n"


def test_read_file_limit_says_how_much_is_left(ws: Workspace, box: Toolbox) -> None:
    (ws.root / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    out = ok(box.run("read_file", {"path": "big.txt", "limit": 3}))
    assert out.splitlines()[:3] == ["line 1", "line 2", "line 3"]
    assert "line 4" not in out
    assert "97 more" in out


def test_read_file_output_is_capped(ws: Workspace) -> None:
    box = make_box(ws, output_cap=1000)
    (ws.root / "huge.txt").write_text("x" * 99 + "\n" + ("y" * 99 + "\n") * 5000)
    out = ok(box.run("read_file", {"path": "huge.txt"}))
    assert len(out) < 1200
    assert "truncated" in out and "more of 5001 lines" in out


def test_read_file_refuses_paths_outside(ws: Workspace, box: Toolbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    for path in ["../secret.txt", str(secret), "src/../../secret.txt", "/etc/passwd"]:
        assert "path escapes the workspace" in err(box.run("read_file", {"path": path}))


def test_symlink_escapes_are_refused(ws: Workspace, box: Toolbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("original")
    (ws.root / "link").symlink_to(outside)
    (ws.root / "flink").symlink_to(outside / "f.txt")
    for path in ["link/f.txt", "flink"]:
        assert "escapes" in err(box.run("read_file", {"path": path}))
        assert "escapes" in err(box.run("write_file", {"path": path, "content": "pwned"}))
        assert "escapes" in err(
            box.run("edit_file", {"path": path, "old_text": "original", "new_text": "x"})
        )
    assert "escapes" in err(box.run("write_file", {"path": "link/new.txt", "content": "x"}))
    assert (outside / "f.txt").read_text() == "original"
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]


def test_a_symlink_that_stays_inside_is_fine(ws: Workspace, box: Toolbox) -> None:
    (ws.root / "real.txt").write_text("hello")
    (ws.root / "alias.txt").symlink_to(ws.root / "real.txt")
    assert ok(box.run("read_file", {"path": "alias.txt"})) == "hello"
    ok(box.run("edit_file", {"path": "alias.txt", "old_text": "hello", "new_text": "bye"}))
    assert (ws.root / "real.txt").read_text() == "bye"


# -- write_file / edit_file ------------------------------------------------------------


def test_write_file_creates_parents(ws: Workspace, box: Toolbox) -> None:
    ok(box.run("write_file", {"path": "pkg/sub/mod.py", "content": "x = 1\n"}))
    assert (ws.root / "pkg" / "sub" / "mod.py").read_text() == "x = 1\n"
    ok(box.run("write_file", {"path": "pkg/sub/mod.py", "content": "x = 2\n"}))
    assert (ws.root / "pkg" / "sub" / "mod.py").read_text() == "x = 2\n"
    assert sorted(p.name for p in (ws.root / "pkg" / "sub").iterdir()) == ["mod.py"]  # no tmp


def test_nothing_is_written_under_team_or_transcripts(ws: Workspace, box: Toolbox) -> None:
    board = TaskBoard(ws.tasks_dir)
    board.create("real task")
    before = (ws.tasks_dir / "1.json").read_text()
    (ws.root / "sneaky").symlink_to(ws.team_dir, target_is_directory=True)
    (ws.root / "tlink").symlink_to(ws.root / ".transcripts", target_is_directory=True)
    attempts = [
        ".team/tasks/1.json",
        ".team/tasks/2.json",
        ".team/inbox/bob/new/x.json",
        ".transcripts/alice/1.jsonl",
        "src/../.team/team.lock",
        str(ws.team_dir / "status.json"),
        "sneaky/tasks/1.json",
        "tlink/alice/x.jsonl",
        ".team",
    ]
    for path in attempts:
        assert "refusing to write under" in err(
            box.run("write_file", {"path": path, "content": "{}"})
        )
        assert "refusing to write under" in err(
            box.run("edit_file", {"path": path, "old_text": "real", "new_text": "fake"})
        )
    assert (ws.tasks_dir / "1.json").read_text() == before
    assert sorted(p.name for p in ws.tasks_dir.iterdir() if not p.name.startswith(".")) == [
        "1.json"
    ]
    assert not (ws.root / ".transcripts").exists()
    assert not (ws.team_dir / "inbox").exists()
    # reading them is allowed: an agent may look at its own board
    assert "real task" in ok(box.run("read_file", {"path": ".team/tasks/1.json"}))


def test_edit_file_needs_exactly_one_occurrence(ws: Workspace, box: Toolbox) -> None:
    f = ws.root / "m.py"
    f.write_text("a = 1\nb = 1\nc = 2\n")
    assert "not found" in err(
        box.run("edit_file", {"path": "m.py", "old_text": "z", "new_text": "y"})
    )
    out = err(box.run("edit_file", {"path": "m.py", "old_text": "= 1", "new_text": "= 9"}))
    assert "2 times" in out
    assert f.read_text() == "a = 1\nb = 1\nc = 2\n"  # a refused edit changes nothing
    ok(box.run("edit_file", {"path": "m.py", "old_text": "b = 1", "new_text": "b = 5"}))
    assert f.read_text() == "a = 1\nb = 5\nc = 2\n"
    assert "empty" in err(box.run("edit_file", {"path": "m.py", "old_text": "", "new_text": "x"}))
    assert "no such file" in err(
        box.run("edit_file", {"path": "nope.py", "old_text": "a", "new_text": "b"})
    )


def test_edit_keeps_the_file_mode(ws: Workspace, box: Toolbox) -> None:
    script = ws.root / "run.sh"
    script.write_text("#!/bin/sh\necho one\n")
    script.chmod(0o755)
    ok(box.run("edit_file", {"path": "run.sh", "old_text": "one", "new_text": "two"}))
    assert os.access(script, os.X_OK)
    assert "two" in ok(box.run("bash", {"command": "./run.sh"}))


# -- bash ---------------------------------------------------------------------------------


def test_bash_runs_in_the_workspace_and_shows_the_exit_code(ws: Workspace, box: Toolbox) -> None:
    out = ok(box.run("bash", {"command": "pwd; echo oops >&2; exit 3"}))
    assert out.splitlines()[0] == str(ws.root)
    assert "oops" in out  # stderr is captured too
    assert "[exit code 3]" in out
    assert "(no output)" in ok(box.run("bash", {"command": "true"}))


def test_bash_timeout_kills_the_whole_process_group(ws: Workspace) -> None:
    box = make_box(ws, bash_timeout=1.0)
    t0 = time.monotonic()
    # a marker in the command line finds the child from outside, even in a PID namespace
    res = box.run("bash", {"command": "sleep 60.4242 & echo started; sleep 60"})
    assert time.monotonic() - t0 < 8
    assert res.is_error and "timed out after 1s" in res.content
    assert "started" in res.content  # output before the timeout is kept
    deadline = time.monotonic() + 5
    while _running("60.4242") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running("60.4242"), "the background child survived the timeout"


def _running(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if marker.encode() in argv and _alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_bash_does_not_hang_on_a_background_child(ws: Workspace, box: Toolbox) -> None:
    t0 = time.monotonic()
    out = ok(box.run("bash", {"command": "sleep 60 & echo bg"}))
    assert time.monotonic() - t0 < 6
    assert "bg" in out and "[exit code 0]" in out


def test_bash_huge_output_is_capped_with_a_note(ws: Workspace) -> None:
    box = make_box(ws, output_cap=10_000)
    cmd = "echo FIRST; head -c 20000000 /dev/zero | tr '\\0' x; echo; echo LAST"
    out = ok(box.run("bash", {"command": cmd}))
    assert len(out) < 10_300
    assert out.startswith("FIRST")
    assert "LAST" in out  # the tail is kept: that is where errors and summaries are
    assert "output capped" in out and "bytes cut" in out
    assert "[exit code 0]" in out


def test_bash_env_carries_no_api_keys(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    monkeypatch.setenv("TEAM_TEST_HARMLESS", "kept")
    box = make_box(ws)
    out = ok(box.run("bash", {"command": "env"}))
    assert "sk-ant-secret" not in out and "ANTHROPIC_" not in out
    assert "sk-other" not in out and "ghp_x" not in out
    assert "TEAM_TEST_HARMLESS=kept" in out
    assert "PATH=" in out


def test_bash_is_killed_when_the_team_stops(ws: Workspace) -> None:
    stop = threading.Event()
    box = make_box(ws, bash_timeout=60.0, stop=stop)
    threading.Timer(0.5, stop.set).start()
    t0 = time.monotonic()
    res = box.run("bash", {"command": "sleep 60"})
    assert time.monotonic() - t0 < 5
    assert res.is_error and "interrupted" in res.content


def test_bash_works_where_the_kernel_has_no_pidfds(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before Linux 5.3, or under a seccomp filter, the exit is polled instead."""

    def no_pidfd(pid: int, flags: int = 0) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    box = make_box(ws, bash_timeout=1.0, output_cap=200_000)
    assert "[exit code 3]" in ok(box.run("bash", {"command": "echo hi; exit 3"}))
    out = ok(box.run("bash", {"command": "head -c 150000 /dev/zero | tr '\\0' y; echo"}))
    assert out.count("y") == 150000  # every read of a long output is kept, in order
    t0 = time.monotonic()
    assert "bg" in ok(box.run("bash", {"command": "sleep 60 & echo bg"}))
    res = box.run("bash", {"command": "sleep 60"})
    assert res.is_error and "timed out after 1s" in res.content
    assert time.monotonic() - t0 < 10


def test_bash_waits_for_a_command_that_closed_its_output(ws: Workspace, box: Toolbox) -> None:
    t0 = time.monotonic()
    out = ok(box.run("bash", {"command": "echo early; exec >&- 2>&-; sleep 0.5; exit 4"}))
    assert "early" in out and "[exit code 4]" in out  # the exit, not the end of the output
    assert time.monotonic() - t0 >= 0.5


def test_a_background_child_flooding_after_the_shell_exits_is_killed(tmp_path: Path) -> None:
    from team.agents.tools.shell import _run

    t0 = time.monotonic()
    res = _run(["bash", "-c", "(yes & ); exit 0"], tmp_path, 30, 1000, 1 << 20, None, None)
    assert res.output_limit == 1 << 20 and res.exit_code is None
    assert "[killed: printed more than the 1 MiB output limit]" in res.render(30)
    assert time.monotonic() - t0 < 10  # not the 30 s timeout


def test_a_failure_while_watching_a_command_kills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unconfined (no sandbox, so no cgroup whose cleanup would kill it anyway)."""
    from team.agents.tools import shell

    def broken(self: object, chunk: bytes) -> None:
        raise MemoryError

    monkeypatch.setattr(shell._Capture, "feed", broken)
    with pytest.raises(MemoryError):  # the toolbox turns it into an "internal error"
        shell.run_command("echo go; exec sleep 60.4343", tmp_path, timeout=30, output_cap=100)
    deadline = time.monotonic() + 5
    while _running("60.4343") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running("60.4343"), "the command kept running after its tool call failed"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as dead: it is only waiting for its parent to reap it
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


# -- messages -------------------------------------------------------------------------------


def _inbox(ws: Workspace, agent: str) -> list[dict]:
    new = ws.inbox_dir(agent) / "new"
    return [json.loads(p.read_text()) for p in sorted(new.glob("*"))] if new.exists() else []


def test_send_message_lands_in_the_recipients_inbox(
    ws: Workspace, box: Toolbox, sink: MemorySink
) -> None:
    out = ok(box.run("send_message", {"to": "bob", "content": "tests pass?"}))
    assert out.startswith("sent to bob")
    [msg] = _inbox(ws, "bob")
    assert (msg["from"], msg["to"], msg["type"], msg["content"]) == (
        "alice",
        "bob",
        "message",
        "tests pass?",
    )
    assert msg["id"] in out
    assert [e.kind for e in sink.of(DeliveryEvent)] == ["sent"]


def test_send_message_errors(ws: Workspace, box: Toolbox) -> None:
    assert "yourself" in err(box.run("send_message", {"to": "alice", "content": "hi"}))
    out = err(box.run("send_message", {"to": "dave", "content": "hi"}))
    assert "dave" in out and "bob" in out  # names the team, so the model can fix it
    assert "msg_type" in err(
        box.run("send_message", {"to": "bob", "content": "hi", "msg_type": "gossip"})
    )
    assert not ws.inbox_dir("dave").exists()  # never a silently created inbox
    assert not ws.inbox_dir("alice").exists()


def test_broadcast_reaches_everyone_but_the_sender(ws: Workspace, box: Toolbox) -> None:
    out = ok(box.run("broadcast", {"content": "standup"}))
    assert "bob" in out and "carol" in out
    for agent in ("bob", "carol"):
        [msg] = _inbox(ws, agent)
        assert (msg["from"], msg["type"], msg["content"]) == ("alice", "broadcast", "standup")
    assert _inbox(ws, "alice") == []


# -- tasks ----------------------------------------------------------------------------------


def test_task_tools(ws: Workspace, box: Toolbox) -> None:
    board = TaskBoard(ws.tasks_dir)
    board.create("open job")
    board.create("bob's job", owner="bob")
    listed = json.loads(ok(box.run("list_tasks", {})))
    assert [(t["id"], t["subject"], t["status"], t["owner"]) for t in listed] == [
        (1, "open job", "pending", None),
        (2, "bob's job", "pending", "bob"),
    ]
    assert "claimed task #1" in ok(box.run("claim_task", {"task_id": 1}))
    assert "owned by bob" in err(box.run("claim_task", {"task_id": 2}))
    assert "no task #9" in err(box.run("claim_task", {"task_id": 9}))
    assert "owned by bob" in err(box.run("complete_task", {"task_id": "2"}))
    assert "completed task #1" in ok(box.run("complete_task", {"task_id": "1", "result": "ok"}))
    assert board.get(1).status == "completed" and board.get(1).result == "ok"


def test_list_tasks_on_an_empty_board(box: Toolbox) -> None:
    assert json.loads(ok(box.run("list_tasks", {}))) == []
