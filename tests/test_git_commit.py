"""`git_commit`, the git path the team runs for an agent in the shared workspace, whose
`.git` is read-only to the agent's own commands (real git, real bubblewrap).

An agent commits through the tool; a hook planted before the team started never runs,
one the agent tries to plant is refused; hostile messages and paths (options, `..`, a
symlink out, `.git` itself) are refused or taken literally; each call is audited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_team
from fakeapi import FakeMessagesAPI, ScriptedResponder
from teamrun import assign, check_every_task_completed, start_up
from test_sandbox_e2e import one_agent_workspace, tool_results, tool_use

from team.agents.tools.toolbox import Toolbox, ToolResult, tool_specs
from team.core.events import AuditEvent, MemorySink
from team.sandbox.bwrap import detect
from team.tasks import TaskBoard
from team.teamwork import Crew
from team.workspace.config import render_config
from team.workspace.places import Workspace


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def repo(root: Path, sandbox: str = "bwrap", isolation: str = "") -> Workspace:
    root.mkdir(parents=True)
    text = render_config("t", "sim", [("alice", "coder"), ("bob", "tester")])
    extra = f'sandbox = "{sandbox}"\n' + (f'isolation = "{isolation}"\n' if isolation else "")
    (root / "team.toml").write_text(text.replace("[team]\n", f"[team]\n{extra}", 1))
    git(root, "init", "-q")
    git(root, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty",
        "-m", "start")  # fmt: skip
    return Workspace.at(root)


def plant_hook(root: Path, tmp: Path) -> Path:
    """A pre-commit hook that would leave a mark outside the workspace."""
    mark = tmp / "hook-ran"
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {mark}\n")
    hook.chmod(0o755)
    return mark


def box_for(ws: Workspace, sink: MemorySink) -> Toolbox:
    crew = Crew(ws, ws.load_config(), TaskBoard(ws.tasks_dir), sink)
    return Toolbox(crew, "alice", bash_timeout=30.0)


def commit_tool(box: Toolbox, **inp: object) -> ToolResult:
    return box.run("git_commit", dict(inp))


def test_offered_in_the_shared_workspace_with_the_sandbox_only(tmp_path: Path) -> None:
    for sandbox, isolation, offered in (
        ("bwrap", "", True),
        ("auto", "", True),
        ("off", "", False),
        ("bwrap", "worktree", False),  # a worktree agent commits with its own git
    ):
        ws = repo(tmp_path / f"{sandbox}-{isolation or 'shared'}", sandbox, isolation)
        cfg = ws.load_config()
        names = {s.name for s in tool_specs(cfg.agent("alice"), cfg)}
        assert ("git_commit" in names) is offered, (sandbox, isolation)
        if not offered:
            got = box_for(ws, MemorySink()).run("git_commit", {"message": "x"})
            assert got.is_error and "unknown tool" in got.content


def test_commits_as_the_agent_and_a_planted_hook_never_runs(tmp_path: Path) -> None:
    assert detect().usable, "needs a working bubblewrap (scripts/test installs it)"
    ws = repo(tmp_path / "ws")
    mark = plant_hook(ws.root, tmp_path)
    sink = MemorySink()
    box = box_for(ws, sink)
    (ws.root / "a.txt").write_text("one\n")
    (ws.root / "src").mkdir()
    (ws.root / "src" / "b.py").write_text("x = 1\n")
    (ws.root / "other.txt").write_text("not asked for\n")
    # the agent's own commit cannot write .git
    own = box.run("bash", {"command": "git add a.txt && git commit -m mine"})
    assert "Read-only file system" in own.content or "Permission denied" in own.content
    got = commit_tool(box, message="--amend first\n\nbody", paths=["a.txt", "src"])
    assert not got.is_error, got.content
    assert not mark.exists(), "the planted pre-commit hook ran"
    assert git(ws.root, "log", "-1", "--format=%an <%ae>|%cn|%s") == (
        "alice <alice@team.invalid>|alice|--amend first\n"
    )  # the message is a message, never an option
    assert git(ws.root, "show", "--name-only", "--format=", "HEAD").split() == [
        "a.txt",
        "src/b.py",
    ]
    assert git(ws.root, "rev-list", "--count", "HEAD") == "2\n"  # a new commit, not amended
    # without paths: every tracked file that changed, nothing untracked
    (ws.root / "a.txt").write_text("two\n")
    assert not commit_tool(box, message="second").is_error
    assert git(ws.root, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]
    assert "other.txt" in git(ws.root, "status", "--porcelain")
    # nothing to commit: git's own words, an error the model can read
    again = commit_tool(box, message="third")
    assert again.is_error and "nothing" in again.content
    rows = [e for e in sink.events if isinstance(e, AuditEvent) and e.tool == "git_commit"]
    assert [r.outcome for r in rows] == ["started", "ok", "started", "ok", "started", "failed"]
    assert rows[1].target == "--amend first -- a.txt src" and rows[1].sandbox == "bwrap"


def test_hostile_paths_and_messages_are_refused(tmp_path: Path) -> None:
    ws = repo(tmp_path / "ws")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host file\n")
    (ws.root / "out").symlink_to(outside)
    (ws.root / "x.txt").write_text("x\n")
    nested = ws.root / "lib" / "vendored"  # a repository of the agent's own, with its config
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "f.txt").write_text("f\n")
    sink = MemorySink()
    box = box_for(ws, sink)
    head = git(ws.root, "rev-parse", "HEAD")
    pwned = tmp_path / "pwned"
    for paths, why in (
        ([f"--exec=touch {pwned}"], "did not match"),  # a literal path after `--`
        (["-c", "core.hooksPath=/tmp"], "did not match"),
        (["../outside/secret.txt"], "'..' is not allowed"),
        (["out/secret.txt"], "is a symlink"),
        (["out"], "is a symlink"),
        ([str(outside / "secret.txt")], "relative to the workspace root"),
        ([".git/hooks/pre-commit"], ".git is off limits"),
        ([".team/inbox"], ".team is off limits"),
        ([":(top)x.txt"], "did not match"),  # no pathspec magic
        (["lib"], "holds an embedded git repository"),
        (["lib/vendored"], "is an embedded git repository"),
        (["lib/vendored/f.txt"], "is an embedded git repository"),
        (["x.txt\n--amend"], "bad path"),
        ("x.txt", "must be a list"),
    ):
        got = commit_tool(box, message="m", paths=paths)
        assert got.is_error, (paths, got.content)
        assert why in got.content, (paths, got.content)
    for message, why in (("", "non-empty"), ("a\0b", "NUL"), (7, "non-empty")):
        got = commit_tool(box, message=message)
        assert got.is_error and why in got.content, got.content
    assert git(ws.root, "rev-parse", "HEAD") == head  # nothing was committed
    assert not pwned.exists()
    assert "secret" not in git(ws.root, "ls-files")
    refused = [e for e in sink.events if isinstance(e, AuditEvent) and e.outcome == "refused"]
    assert len(refused) >= 6  # each refusal audited, before git ran


def test_git_gets_no_key_and_no_config_of_the_host(tmp_path: Path, monkeypatch) -> None:
    """The environment git runs in: a fake git on PATH records it."""
    ws = repo(tmp_path / "ws")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "env.txt"
    real = shutil.which("git")
    spy = f'#!/bin/sh\nenv >> {seen}\necho "$@" >> {seen}\nexec {real} "$@"\n'
    (bin_dir / "git").write_text(spy)
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    (ws.root / "a.txt").write_text("a\n")
    got = commit_tool(box_for(ws, MemorySink()), message="m", paths=["a.txt"])
    assert not got.is_error, got.content
    text = seen.read_text()
    assert "sk-test-not-real" not in text and "ANTHROPIC" not in text
    assert "GIT_DIR=" not in text and "GIT_CONFIG_NOSYSTEM=1" in text
    assert "core.hooksPath=/dev/null" in text and "core.fsmonitor=false" in text


@pytest.mark.slow
def test_an_agent_commits_through_team_up_and_no_hook_runs(tmp_path: Path) -> None:
    """Through a real `team up` with bubblewrap: the agent's bash cannot commit or plant a
    hook; git_commit commits its file; the hook planted before the start never runs;
    `team audit` lists the commit."""
    assert detect().usable, "needs a working bubblewrap (scripts/test installs it)"
    ws = one_agent_workspace(tmp_path / "ws", 'sandbox = "bwrap"')
    git(ws.root, "init", "-q")
    mark = plant_hook(ws.root, tmp_path)
    script = ScriptedResponder(
        [
            tool_use("claim", ("claim_task", {"task_id": 1})),
            tool_use(
                "try",
                ("write_file", {"path": "notes.md", "content": "# notes\n"}),
                ("bash", {"command": f"echo 'touch {mark}' > .git/hooks/post-commit"}),
                ("bash", {"command": "git add notes.md; git commit -qm mine; echo rc=$?"}),
                ("git_commit", {"message": "Add notes", "paths": ["notes.md"]}),
                ("git_commit", {"message": "escape", "paths": ["../x"]}),
            ),
            tool_use("done", ("complete_task", {"task_id": 1, "result": "committed"})),
            "Done.",
        ],
        then="Nothing more to do.",
    )
    with FakeMessagesAPI(script) as api:
        assign(ws, "alice", "Write and commit notes")
        env = {"ANTHROPIC_API_KEY": "sk-test-not-real", "ANTHROPIC_BASE_URL": api.url}
        proc = start_up(ws, env, "--timeout", "120")
        _, err = proc.communicate(timeout=180)
        results = tool_results(api)
        tools = {t["name"] for t in api.requests[0]["tools"]}
    assert proc.returncode == 0, err
    check_every_task_completed(ws)
    assert "git_commit" in tools
    assert "Read-only file system" in results["toolu_try1"]
    assert "rc=0" not in results["toolu_try2"]
    assert "Add notes" in results["toolu_try3"], results["toolu_try3"]
    assert "'..' is not allowed" in results["toolu_try4"]
    assert not mark.exists(), "a hook ran"
    assert git(ws.root, "log", "--format=%an|%s") == "alice|Add notes\n"
    rows = json.loads(run_team("audit", "--json", "--dir", str(ws.root)).stdout)
    commits = [r for r in rows if r["tool"] == "git_commit"]
    assert [r["outcome"] for r in commits] == ["ok", "refused"], commits
