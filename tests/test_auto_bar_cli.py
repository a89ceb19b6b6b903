"""A prefix above the threshold is found before it costs anything, a threshold can follow
the model's window, and a paused auto layer shows in `team status` (issue 25). The CLI
in subprocesses where the user meets it."""

from __future__ import annotations

from conftest import run_team, write_team
from test_agent_loop import deliver, runtime, workspace

from team.agents.console.status_table import status_lines
from team.compaction.auto import threshold_for
from team.core.conversation import ToolUseBlock
from team.llm.base import Usage
from team.llm.scripted import ScriptedModel, reply
from team.workspace.config import parse_config


def set_threshold(root, value: str) -> None:
    toml = (root / "team.toml").read_text()
    assert "threshold = 50000\n" in toml
    (root / "team.toml").write_text(toml.replace("threshold = 50000\n", f"threshold = {value}\n"))


def test_a_threshold_may_be_a_share_of_the_models_window():
    cfg = parse_config(
        {
            "team": {"model": "claude-haiku-4-5"},
            "compaction": {"threshold": "80%"},
            "agents": [{"name": "alice", "role": "coder"}],
        }
    )
    assert cfg.compaction.threshold == "80%"
    assert threshold_for(cfg.compaction.threshold, cfg.team.model) == 160_000
    assert threshold_for(50_000, "sim") == 50_000  # the default stays the reference's


def test_a_bad_or_too_large_threshold_is_one_line(tmp_path):
    root = write_team(tmp_path / "a")
    set_threshold(root, "250000")
    for cmd in (["check"], ["up", "--until-idle"]):
        r = run_team(*cmd, "--dir", str(root))
        assert r.returncode == 1 and "Traceback" not in r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1, r.stderr
        assert "compaction.threshold" in lines[0] and "200,000" in lines[0]
    root = write_team(tmp_path / "b")
    set_threshold(root, '"120%"')
    r = run_team("check", "--dir", str(root))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "compaction.threshold" in r.stderr


def test_check_and_up_say_when_a_prefix_is_within_reach_of_the_threshold(tmp_path):
    root = write_team(tmp_path / "ws")
    toml = (root / "team.toml").read_text()
    long_role = "Follow the house rules for every change you make. " * 4_800  # ~60k tokens
    toml = toml.replace('role = "tester"\n', f'role = "tester"\nprompt = "{long_role}"\n', 1)
    (root / "team.toml").write_text(toml)
    r = run_team("check", "--dir", str(root))
    assert r.returncode == 0, r.stderr
    reach = [line for line in r.stdout.splitlines() if "within reach" in line]
    assert len(reach) == 1 and reach[0].startswith("bob: ")
    assert "50,000-token" in reach[0] and "wait until about" in reach[0]
    up = run_team("up", "--until-idle", "--idle-grace", "0.3", "--dir", str(root), timeout=120)
    assert up.returncode == 0, up.stderr
    assert sum("within reach" in line for line in up.stderr.splitlines()) == 1


def billed_as_sent(blocks):
    """A reply whose usage is what its request carried, at 4 characters a token."""

    def answer(request):
        chars = sum(m.chars() for m in request.messages) + len(request.system)
        return reply(*blocks, usage=Usage(input_tokens=chars // 4, output_tokens=10))

    return answer


def test_team_status_says_when_auto_is_paused(tmp_path):
    ws = workspace(tmp_path)
    set_threshold(ws.root, "2000")
    out = "head -c 12000 /dev/zero | tr '\\0' a"
    calls = [
        billed_as_sent([ToolUseBlock(f"toolu_{i}", "bash", {"command": out})]) for i in range(3)
    ]
    # a summary longer than what it replaces: the compaction frees nothing
    model = ScriptedModel(
        calls, summary=reply("## Current work\n" + "y" * 30_000), default=billed_as_sent(["ok"])
    )
    deliver(ws, "alice", "go", sender="user")
    rt = runtime(ws, model)
    agent = rt.build_agent("alice")
    rt.agents["alice"] = agent
    agent.run(until_idle=True)
    st = rt.status()["agents"]["alice"]
    assert st["auto_paused"] and "freed only" in st["auto_paused"]
    assert sum(r.purpose == "summary" for r in model.requests) == 1  # and no second one
    shown = "\n".join(status_lines({"agents": {"alice": st}}, 200))
    assert "alice: auto-compaction paused: a compaction freed only" in shown
