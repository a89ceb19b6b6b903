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


# Every name in team.toml follows the agent-name rule: a name may become a folder, a key
# or a prefix, so `../../x` must never get that far (issue 24, 10).
BAD_NAMES = [
    ('[team]\nname = "../../x"\n' + GOOD_AGENTS, "team.name: invalid team name '../../x'"),
    ('[team]\nname = "Big Team"\n' + GOOD_AGENTS, "team.name: invalid team name"),
    ('[team]\nname = ""\n' + GOOD_AGENTS, "team.name: invalid team name"),
    ('[team]\nlead = "../bob"\n' + GOOD_AGENTS, "team.lead: invalid agent name"),
    (
        GOOD_AGENTS + '[mcp_servers."../up"]\ncommand = "x"\n',
        "mcp_servers: invalid MCP server name '../up'",
    ),
]

# Limits with a maximum: the one line names the file, the key and the largest value taken.
TOO_BIG = [
    ("[limits]\nfile_mb = 99999999999\n", "limits.file_mb: at most 1,048,576, got 99999999999"),
    ("[limits]\nmemory_mb = 99999999999\n", "limits.memory_mb: at most 1,048,576"),
    ("[limits]\ncpu_s = 10000000\n", "limits.cpu_s: at most 86,400"),
    ("[limits]\nprocesses = 10000000\n", "limits.processes: at most 65,536"),
    ("[limits]\noutput_mb = 100000\n", "limits.output_mb: at most 4,096"),
    ("[team]\nmax_tokens = 10000000\n", "team.max_tokens: at most 128,000"),
    ("[team]\nbudget_usd = 1e12\n", "team.budget_usd: at most 1,000,000"),
    ("[team]\nlease_seconds = 1e9\n", "team.lease_seconds: at most 3,600"),
    ("[hooks]\ntimeout = 1e9\n", "hooks.timeout: at most 86,400"),
    ("[compaction]\nthreshold = 99999999999\n", "compaction.threshold: at most 2,000,000 tokens"),
    ("[compaction]\nresult_cap = 99999999999\n", "compaction.result_cap: at most 10,000,000"),
    ("[compaction]\nkeep_recent = 99999999999\n", "compaction.keep_recent: at most 10,000"),
]


@pytest.mark.parametrize("text, expected", BAD_NAMES + [(t + GOOD_AGENTS, e) for t, e in TOO_BIG])
def test_names_and_limits_out_of_bounds_are_one_line(tmp_path, text, expected):
    (tmp_path / "team.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        Workspace.at(tmp_path).load_config()
    assert "\n" not in str(e.value)
    assert str(e.value).startswith(f"{tmp_path / 'team.toml'}: ") and expected in str(e.value)


def test_a_team_named_up_the_tree_is_refused_by_the_cli_and_nothing_is_written(tmp_path):
    (tmp_path / "team.toml").write_text('[team]\nname = "../../x"\n' + GOOD_AGENTS)
    for args in (["check"], ["up", "--until-idle"]):
        r = run_team(*args, "--dir", str(tmp_path))
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert r.stderr.strip().count("\n") == 0 and "invalid team name" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.toml"]
    r = run_team("init", "--name", "../../x", "--dir", str(tmp_path / "new"))
    assert r.returncode == 1 and "invalid team name" in r.stderr
    assert not (tmp_path / "new" / "team.toml").exists()


def test_limits_at_their_maximum_are_taken(tmp_path):
    text = (
        "[limits]\nfile_mb = 1048576\nmemory_mb = 1048576\ncpu_s = 86400\n"
        '[team]\nname = "my-team_2"\nmax_tokens = 128000\n' + GOOD_AGENTS
    )
    (tmp_path / "team.toml").write_text(text)
    cfg = Workspace.at(tmp_path).load_config()
    assert cfg.limits.file_mb == 1_048_576 and cfg.team.name == "my-team_2"
