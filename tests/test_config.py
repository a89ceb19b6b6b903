import pytest
from conftest import run_team

from team.workspace.config import CompactionConfig, ConfigError, parse_config, render_config
from team.workspace.places import Workspace

GOOD_AGENTS = '[[agents]]\nname = "alice"\nrole = "coder"\n'

CASES = [
    ('[team]\nname = "x"\ncolour = "red"\n' + GOOD_AGENTS, "team.colour: unknown key"),
    ('[team]\nmax_tokens = "lots"\n' + GOOD_AGENTS, "team.max_tokens:"),
    (GOOD_AGENTS + GOOD_AGENTS, "agents[1].name: duplicate agent name 'alice'"),
    ('[[agents]]\nname = "Alice Smith"\nrole = "coder"\n', "agents[0].name: invalid agent name"),
    ("[compaction]\nthreshold = 0\n" + GOOD_AGENTS, "compaction.threshold:"),
    ("[compaction]\nthreshold = -5\n" + GOOD_AGENTS, "compaction.threshold:"),
    ('[team]\nname = "x\n' + GOOD_AGENTS, "TOML syntax error"),
    ('[team]\nname = "x"\n', "agents: required key is missing"),
    (GOOD_AGENTS + "[agents.compaction]\nthreshold = 0\n", "agents[0].compaction.threshold:"),
    (
        GOOD_AGENTS + "[agents.compaction]\nkeep_everything = true\n",
        "agents[0].compaction.keep_everything: unknown key",
    ),
    # a typo'd table is named, with the table it most likely meant (not only the
    # `agents: required key is missing` it causes)
    (
        '[[agent]]\nname = "alice"\nrole = "coder"\n',
        "unknown table [[agent]] (did you mean [[agents]]?)",
    ),
    (
        "[compactoin]\nthreshold = 5\n" + GOOD_AGENTS,
        "unknown table [compactoin] (did you mean [compaction]?)",
    ),
    (
        "[hooks]\n[[agents]]\nname = 'a'\nrole = 'c'\n[sandbox]\nmode = 1\n",
        "unknown table [sandbox]",
    ),
    ('[team]\nmodle = "sim"\n' + GOOD_AGENTS, "team.modle: unknown key (did you mean model?)"),
    (
        GOOD_AGENTS + "[agents.compaction]\nthreshhold = 5\n",
        "agents[0].compaction.threshhold: unknown key (did you mean threshold?)",
    ),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_each_bad_file_gives_one_clear_line(tmp_path, text, expected):
    # the line every command prints for it (the CLI's part is checked just below)
    (tmp_path / "team.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        Workspace.at(tmp_path).load_config()
    assert "\n" not in str(e.value)
    assert "team.toml" in str(e.value) and expected in str(e.value)


def test_a_bad_file_is_one_line_on_stderr_and_exit_1(tmp_path):
    text, expected = CASES[0]
    (tmp_path / "team.toml").write_text(text)
    r = run_team("check", "--dir", str(tmp_path))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("team: error: ") and "team.toml" in lines[0]
    assert expected in lines[0]
    assert "Traceback" not in r.stderr + r.stdout


def test_syntax_error_names_the_line(tmp_path):
    (tmp_path / "team.toml").write_text('[team]\nname = "ok"\nmodel = = "sim"\n' + GOOD_AGENTS)
    r = run_team("check", "--dir", str(tmp_path))
    assert r.returncode == 1 and "line 3" in r.stderr


def test_missing_file(tmp_path):
    r = run_team("status", "--dir", str(tmp_path))
    assert r.returncode == 1
    assert "team.toml: no such file" in r.stderr and "team init" in r.stderr


def test_per_agent_overrides_apply_to_that_agent_only():
    cfg = parse_config(
        {
            "compaction": {"threshold": 1000, "keep_recent": 5},
            "agents": [
                {"name": "a", "role": "r", "compaction": {"threshold": 99}},
                {"name": "b", "role": "r"},
            ],
        }
    )
    assert cfg.compaction_for("a") == CompactionConfig(threshold=99, keep_recent=5)
    assert cfg.compaction_for("b").threshold == 1000


def test_defaults_are_the_reference_numbers():
    c = CompactionConfig()
    assert (c.threshold, c.keep_recent, c.preserve_tools, c.min_chars) == (
        50000,
        3,
        ["read_file"],
        100,
    )


def test_init_writes_a_file_check_accepts(tmp_path):
    r = run_team("init", "--agents", "ann:coder,ben:tester", "--dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    r = run_team("check", "--dir", str(tmp_path))
    assert r.returncode == 0 and "ann (coder)" in r.stdout


def test_render_refuses_bad_names():
    with pytest.raises(ConfigError):
        render_config("t", "sim", [("Bad Name", "x")])


def test_the_workspace_reads_its_own_paths_back(tmp_path):
    ws = Workspace.at(tmp_path)
    for name in ("bob", "alice"):
        ws.session_log(name).parent.mkdir(parents=True)
        ws.session_log(name).write_text("")
    ws.agent_dir("carol").mkdir()  # an agent folder without a log
    assert ws.session_logs() == [ws.session_log("alice"), ws.session_log("bob")]
    assert Workspace.of_agent_file(ws.session_log("bob")) == (ws, "bob")
    assert Workspace.of_agent_file(tmp_path / "agents" / "bob" / "session.jsonl") is None
    assert Workspace.of_agent_file(tmp_path / "session.jsonl") is None
    assert Workspace.transcript_agent(ws.transcripts_dir("alice") / "1-x-auto.jsonl") == "alice"
    assert Workspace.transcript_agent(tmp_path / "alice" / "1-x-auto.jsonl") is None
    assert ws.transcripts_root in ws.protected and ws.team_dir in ws.protected
