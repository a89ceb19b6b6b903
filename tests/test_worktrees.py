"""A workspace per agent: git worktrees, confined tools, `team merge`, `team status`.

Real git repositories in tmp folders, the real Toolbox, the CLI in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import add_task, run_team

from team.agents.tools.toolbox import Toolbox, ToolResult
from team.tasks import TaskBoard
from team.teamwork import Crew
from team.workspace import worktrees
from team.workspace.places import Workspace

TOML = """\
[team]
name = "wt"
model = "sim"
isolation = "worktree"
sandbox = "off"

[[agents]]
name = "alice"
role = "coder"

[[agents]]
name = "bob"
role = "coder"
"""


def git(cwd: Path, *args: str) -> str:
    r = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "team.toml").write_text(TOML)
    (root / "app.py").write_text("def greet():\n    return 'hello'\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "start")
    return Workspace.at(root)


def ok(r: ToolResult) -> str:
    assert not r.is_error, r.content
    return r.content


def agent_box(ws: Workspace, agent: str) -> Toolbox:
    root = worktrees.ensure(ws, agent)
    return Toolbox(
        Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir)), agent, root=root, bash_timeout=20
    )


def test_two_agents_edit_one_file_both_changes_survive_and_merge_reports_the_conflict(
    ws: Workspace,
) -> None:
    board = TaskBoard(ws.tasks_dir)
    alice, bob = agent_box(ws, "alice"), agent_box(ws, "bob")
    assert alice.root == ws.team_dir / "worktrees" / "alice"
    for box, word in ((alice, "hi"), (bob, "howdy")):
        task = board.create(f"greet with {word}", owner=box.agent)
        ok(box.run("claim_task", {"task_id": task.id}))
        ok(box.run("edit_file", {"path": "app.py", "old_text": "'hello'", "new_text": f"'{word}'"}))
        assert ok(box.run("bash", {"command": "pwd"})).strip().startswith(str(box.root))
        out = ok(box.run("complete_task", {"task_id": task.id, "result": "done"}))
        assert f"on team/{box.agent}" in out  # the worktree was committed
    # each edit stayed in its own worktree; the main checkout is untouched
    assert "'hello'" in (ws.root / "app.py").read_text()
    assert "'hi'" in (alice.root / "app.py").read_text()
    assert "'howdy'" in (bob.root / "app.py").read_text()
    status = json.loads(run_team("status", "--json", "--dir", str(ws.root)).stdout)
    assert status["agents"]["alice"]["branch"] == "team/alice"
    assert status["agents"]["alice"]["changes"] == 0 and status["agents"]["alice"]["ahead"] == 1

    r = run_team("merge", "alice", "--dir", str(ws.root))
    assert r.returncode == 0, r.stderr
    assert "merged team/alice" in r.stdout
    assert "'hi'" in (ws.root / "app.py").read_text()
    head = git(ws.root, "rev-parse", "HEAD")

    r = run_team("merge", "bob", "--dir", str(ws.root))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "conflicts in app.py" in r.stderr and "nothing changed" in r.stderr
    # nothing lost: main has alice's change and no half merge; bob's is on his branch
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert git(ws.root, "status", "--porcelain", "--untracked-files=no") == ""
    assert "'hi'" in (ws.root / "app.py").read_text()
    assert "'howdy'" in git(ws.root, "show", "team/bob:app.py")


def test_file_tools_stay_in_the_agents_worktree(ws: Workspace) -> None:
    alice = agent_box(ws, "alice")
    r = alice.run("read_file", {"path": "../bob/app.py"})
    assert r.is_error and "escapes" in r.content
    r = alice.run("write_file", {"path": str(ws.root / "app.py"), "content": "x"})
    assert r.is_error
    assert "'hello'" in (ws.root / "app.py").read_text()
    ok(alice.run("write_file", {"path": "new.txt", "content": "mine"}))
    assert (alice.root / "new.txt").exists() and not (ws.root / "new.txt").exists()


def test_merge_refuses_dirty_worktrees_and_changes_nothing(ws: Workspace) -> None:
    alice = agent_box(ws, "alice")
    ok(alice.run("write_file", {"path": "half.txt", "content": "work in progress"}))
    head = git(ws.root, "rev-parse", "HEAD")
    r = run_team("merge", "alice", "--dir", str(ws.root))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "uncommitted" in r.stderr
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert (alice.root / "half.txt").read_text() == "work in progress"
    worktrees.commit_all(alice.root, "alice", "wip")
    (ws.root / "app.py").write_text("local edit\n")  # the main checkout is dirty now
    r = run_team("merge", "alice", "--dir", str(ws.root))
    assert r.returncode == 1 and "uncommitted" in r.stderr and len(r.stderr.splitlines()) == 1
    assert (ws.root / "app.py").read_text() == "local edit\n"
    for bad in ("carol", "bob"):  # unknown agent; an agent that never worked
        r = run_team("merge", bad, "--dir", str(ws.root))
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_worktree_mode_outside_git_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "team.toml").write_text(TOML)
    r = run_team("up", "--until-idle", "--dir", str(tmp_path))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "git repository" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.toml"]
    r = run_team("merge", "alice", "--dir", str(tmp_path))
    assert r.returncode == 1 and "git repository" in r.stderr


def test_a_team_in_worktrees_runs_and_commits_its_work(ws: Workspace) -> None:
    for agent in ("alice", "bob"):
        add_task(ws.root, "Look at app.py", owner=agent)
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
    assert all(t.status == "completed" for t in TaskBoard(ws.tasks_dir).list())
    for agent in ("alice", "bob"):
        log = git(ws.root, "log", "--format=%an %s", f"main..team/{agent}")
        assert log.startswith(f"{agent} {agent}: task #"), log
    assert git(ws.root, "status", "--porcelain") == ""  # .team/ is excluded, main untouched
