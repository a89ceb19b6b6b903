"""`team init` writes a team.toml that reads back as given, whatever the values hold."""

import tomllib

from conftest import run_team

NASTY_ROLES = [
    'co"der',
    "back\\slash",
    '"""; [agents] # not a comment',
    "line\nbreak",
    "tab\there",
    "émoji 🚀 ünïcode",
    "'single' and \"double\"",
]


def test_init_round_trips_nasty_roles(tmp_path):
    # one agent per role, all in one `--agents` (none of them holds a comma)
    agents = [(f"a{i}", role) for i, role in enumerate(NASTY_ROLES)] + [("b", "tester")]
    spec = ",".join(f"{name}:{role}" for name, role in agents)
    r = run_team("init", "--agents", spec, "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    data = tomllib.loads((tmp_path / "team.toml").read_text())
    assert [(a["name"], a["role"]) for a in data["agents"]] == agents
    check = run_team("check", "--dir", str(tmp_path))
    assert check.returncode == 0, check.stderr
    assert "b (tester)" in check.stdout and f"a0 ({NASTY_ROLES[0]})" in check.stdout


def test_init_round_trips_team_name_and_model(tmp_path):
    name, model = "our-team_2", 'claude-"x" \\ [team]'
    r = run_team("init", "--name", name, "--model", model, "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    data = tomllib.loads((tmp_path / "team.toml").read_text())
    assert data["team"]["name"] == name and data["team"]["model"] == model


def test_init_refuses_a_team_name_that_breaks_the_name_rule(tmp_path):
    # a team name becomes a key prefix on Redis: the agent-name rule, not any string
    r = run_team("init", "--name", 'it\'s "ours" \\ [team]', "--dir", str(tmp_path))
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "invalid team name" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "team.toml").exists()


def test_init_refuses_a_bad_agent_name_in_one_line_and_writes_nothing(tmp_path):
    r = run_team("init", "--agents", 'Bad"Name:coder', "--dir", str(tmp_path))
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "invalid agent name" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "team.toml").exists()
