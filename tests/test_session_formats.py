"""Real sessions as they come (issue 26): every format version read as it is, a repair
that keeps the session, the `recorded` strategy, a calibration judged on calls it was
not fitted on, and no traceback for any file. All through the CLI, as a user runs it.

The fixtures are in tests/fixtures/sessions/ (README there: which are public, which are
written by `session_formats` after public logs of that version).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sessionlogs as S
from conftest import run_team
from session_formats import RESULT, Claude

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
ALL = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl"))
CLEAN = [  # no compaction, enough calls to hold half of them out
    "claude-code-1.0.90.jsonl",
    "claude-code-2.1.39.jsonl",
    "codex-0.77.0.jsonl",
    "openhands-output.jsonl",
    "claude-code-2.1.38-public.jsonl",
]
COMPACTED = [
    "claude-code-1.0.90-compacted.jsonl",
    "claude-code-2.1.39-compacted.jsonl",
    "codex-0.118.0-compacted.jsonl",
]


def replay(path: Path, *args: str) -> dict:
    r = run_team("experiment", "--replay", str(path), "--json", *args, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)


def kept_share(out: dict) -> float:
    imp = out["import"]
    return imp["requests_kept"] / imp["requests_recorded"]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_format_version_reads_without_repair(path):
    out = replay(path)
    assert out["import"]["repaired"] == []
    if out["import"]["requests_recorded"]:  # None, or 0 in a log without usage
        assert kept_share(out) >= 0.95
    names = {o["strategy"] for o in out["outcomes"]}
    assert {"recorded", "manual-only", "reference", "hybrid"} <= names


def test_the_text_report_says_kept_of_recorded_and_held_out():
    r = run_team("experiment", "--replay", str(FIXTURES / "claude-code-2.1.39-compacted.jsonl"))
    assert r.returncode == 0, r.stderr
    assert "kept 61 of 62 recorded requests" in r.stdout  # the redo branch is off the path
    assert "held-out calibration: fitted on the first half" in r.stdout
    assert "per-call p90" in r.stdout
    assert "x recorded)" in r.stdout and "x log" in r.stdout
    assert "progress lines (not the conversation)" in r.stdout


@pytest.mark.parametrize("name", ["claude-code-2.1.39-compacted.jsonl", "claude-code-1.0.90.jsonl"])
def test_one_broken_line_in_the_middle_keeps_the_session(tmp_path, name):
    text = (FIXTURES / name).read_text().splitlines(keepends=True)
    log = tmp_path / name
    log.write_text("".join(text))
    clean = replay(log)["import"]["requests_recorded"]
    middle = next(i for i in range(len(text) // 2, len(text)) if '"type": "assistant"' in text[i])
    S.break_line(log, middle + 1)
    r = run_team("experiment", "--replay", str(log))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{log}:{middle + 1}: not JSON" in r.stderr and "--repair drops it" in r.stderr
    out = replay(log, "--repair")
    assert out["import"]["repaired"] == [f"dropped unreadable line {middle + 1}"]
    # the parent chain is bridged over the hole: the conversation before it is kept
    assert out["import"]["requests_kept"] >= 0.95 * clean


def test_many_broken_lines_are_bridged_too(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_text((FIXTURES / "claude-code-2.1.39.jsonl").read_text())
    lines = log.read_text().splitlines(keepends=True)
    broken = [i for i, ln in enumerate(lines) if '"type": "progress"' in ln][::3]
    for i in broken:
        lines[i] = lines[i][: len(lines[i]) // 2] + "\n"
    log.write_text("".join(lines))
    out = replay(log, "--repair")
    assert len(out["import"]["repaired"]) == len(broken) > 10
    assert out["import"]["requests_kept"] >= 0.95 * out["import"]["requests_recorded"]


@pytest.mark.parametrize("name", CLEAN)
def test_held_out_calibration_predicts_clean_sessions(name):
    out = replay(FIXTURES / name)
    held = out["held_out"]
    assert held is not None and held["calls"] >= 2
    assert held["total_error"] <= 0.10
    assert held["p90"] <= 0.20


@pytest.mark.parametrize("name", COMPACTED)
def test_recorded_strategy_reproduces_the_recorded_input(name):
    out = replay(FIXTURES / name)
    log = out["recorded"]["input_tokens_total"]
    row = next(o for o in out["outcomes"] if o["strategy"] == "recorded")
    manual = next(o for o in out["outcomes"] if o["strategy"] == "manual-only")
    assert abs(row["input_tokens_logged"] / log - 1) <= 0.10
    # it compacted where the log did, and not otherwise
    recorded_compactions = out["import"]["kept"]["compactions"]
    assert sum(row["compactions"].values()) == recorded_compactions >= 1
    assert not row["compactions"].get("micro")
    # never compacting reads more than the log did: the figure the others are judged by
    assert manual["input_tokens_total"] > 1.10 * row["input_tokens_total"]


def test_x_log_compares_the_calls_the_log_billed(tmp_path):
    """A log whose replies carry usage only now and then (an OpenHands trajectory, a
    Codex rollout with one token count) is compared with its replay over those calls,
    not over every call against a sum of some."""
    lines = (FIXTURES / "claude-code-2.1.39.jsonl").read_text().splitlines()
    kept, ids = [], []
    for line in lines:
        d = json.loads(line)
        if d.get("type") == "assistant":
            if d["message"]["id"] not in ids:
                ids.append(d["message"]["id"])
            if ids.index(d["message"]["id"]) % 2:  # every other reply, all of its lines
                d["message"].pop("usage", None)
        kept.append(json.dumps(d))
    dropped = len(ids) // 2
    log = tmp_path / "sparse.jsonl"
    log.write_text("\n".join(kept) + "\n")
    out = replay(log)
    assert dropped > 5
    recorded = out["recorded"]["input_tokens_total"]
    row = next(o for o in out["outcomes"] if o["strategy"] == "recorded")
    assert abs(row["input_tokens_logged"] / recorded - 1) <= 0.10
    assert row["input_tokens_total"] > 1.3 * recorded  # every call against some of them
    r = run_team("experiment", "--replay", str(log))
    line = next(ln for ln in r.stdout.splitlines() if "recorded: input tokens" in ln)
    assert f"{row['input_tokens_logged'] / recorded:.2f} x log" in line


def test_openhands_instances_are_sessions_counted():
    out = replay(FIXTURES / "openhands-output.jsonl")
    assert out["format"] == "openhands"
    assert out["import"]["kept"]["sessions (instances)"] == 2
    assert out["import"]["requests_kept"] == out["import"]["requests_recorded"] == 24
    assert set(out["calibration"]) == {"acme__repo-100", "acme__repo-101"}
    traj = replay(FIXTURES / "openhands-trajectory-basic.json")
    assert traj["format"] == "openhands" and traj["recorded"]["calls"] >= 1


JUNK = {
    "binary.jsonl": bytes(range(256)) * 64,
    "empty.jsonl": b"",
    "blank.jsonl": b"\n \n\t\n",
    "numbers.json": b"[1, 2, 3]",
    "null.jsonl": b"null\nnull\n",
    "open-brace.jsonl": b"{\n",
    "half-utf8.jsonl": '{"type": "user", "message": "caf\u00e9"}\n'.encode()[:-4] + b"\n",
    "deep.json": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("name", sorted(JUNK))
def test_no_traceback_for_junk(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(JUNK[name])
    for args in (
        ("experiment", "--replay", str(path)),
        ("import", str(path), "--to", str(tmp_path / "ws")),
    ):
        r = run_team(*args)
        assert r.returncode == 1, r.stdout
        assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert str(path) in r.stderr


def test_odd_lines_of_a_real_format_are_skipped_not_raised(tmp_path):
    log = tmp_path / "s.jsonl"
    lines = (FIXTURES / "claude-code-2.1.39.jsonl").read_text().splitlines()
    base = json.loads(lines[4])
    odd = [
        {**base, "uuid": "odd-1", "message": None},  # a user line without a message
        {**base, "uuid": "odd-2", "message": {"role": "user", "content": None}},
        {**base, "uuid": "odd-3", "message": {"role": "user", "content": [1, "two"]}},
        {**base, "uuid": "odd-4", "type": "brand-new-record", "payload": {}},
        {"type": "assistant"},
        {"type": "system", "subtype": "compact_boundary"},
    ]
    log.write_text("\n".join(lines[:5] + [json.dumps(o) for o in odd] + lines[5:]) + "\n")
    out = replay(log)
    dropped = out["import"]["dropped"]
    assert dropped["lines of unknown type 'brand-new-record' (skipped)"] == 1
    assert out["import"]["requests_kept"] >= 40


def _big_log(path: Path, size: int) -> Path:
    """A long Claude Code 2.1.x log: hook progress between calls and the second copy of
    every result (toolUseResult), as real ones have, compacting every 200 calls."""
    c = Claude("2.1.39")
    c.user("Fix it.")
    pad = "x" * 2000
    written = k = 0
    with path.open("w") as f:
        while written < size:
            a = {
                "type": "tool_use",
                "id": f"toolu_{k:06d}",
                "name": "Read",
                "input": {"file_path": f"/p/m{k}.py"},
            }
            calls = c.reply(f"msg_{k:06d}", [{"type": "text", "text": f"step {k}"}, a])
            for _ in range(12):
                c.last = c.line("progress", c.last, data={"type": "hook_progress", "output": pad})
            block = {"tool_use_id": a["id"], "type": "tool_result", "content": RESULT}
            c.user([block], parent=calls[0], toolUseResult={"file": {"content": pad * 8}})
            for o in c.lines:
                line = json.dumps(o) + "\n"
                written += len(line)
                f.write(line)
            c.lines.clear()
            k += 1
            if k % 200 == 0:
                c.compact("summary " * 200)
    return path


def _import_peak(log: Path, to: Path) -> int:
    """Peak RSS (bytes) of `team import LOG`, from a fresh process whose only child it is."""
    probe = (
        "import resource, subprocess, sys; "
        "r = subprocess.run([sys.executable, '-m', 'team', 'import', sys.argv[1], "
        "'--to', sys.argv[2]], capture_output=True, text=True); "
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.stderr.write(r.stderr)"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe, str(log), str(to)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "Traceback" not in r.stderr
    code, peak_kib = map(int, r.stdout.split())
    assert code == 0, r.stderr
    return peak_kib * 1024


def test_a_50_mb_log_is_read_in_bounded_memory(tmp_path):
    log = _big_log(tmp_path / "big.jsonl", 50_000_000)
    assert log.stat().st_size >= 50_000_000
    small = _import_peak(FIXTURES / "claude-code-2.1.39.jsonl", tmp_path / "small")
    big = _import_peak(log, tmp_path / "big")
    # the progress lines and the second copies are not kept: what the 50 MB cost over a
    # small log is under the file's size (read whole, its text alone was 50 MB and its
    # lines split out another 50; bench/bench_import.py prints both)
    assert big - small < 0.75 * log.stat().st_size, (big, small)


def test_a_short_session_is_not_fitted_on_the_noise_of_close_calls(tmp_path):
    """Six calls, the first three a few hundred characters apart and 400 tokens apart
    (what the API adds around a message is not in the text): a slope through those
    alone puts under 1.5 characters in a token, and the next calls, 20,000 characters
    on, at about twice their input. The fit leans on the usual ratio as far as its calls
    are close."""
    c = Claude("2.1.39")
    c.user("Read the files and compare them.")
    for k in (1, 2):
        use = {"type": "tool_use", "id": f"toolu_{k}", "name": "Read", "input": {"file_path": "a"}}
        c.results(c.reply(f"msg_{k}", [use]), [use["id"]], "x = 1\n" * 33)
        c.context += 680  # tokens the text does not show, about 200 a call
    for k in (3, 4, 5):
        use = {"type": "tool_use", "id": f"toolu_{k}", "name": "Read", "input": {"file_path": "b"}}
        c.results(c.reply(f"msg_{k}", [use]), [use["id"]], "y = compute(x)\n" * 1300)
    c.reply("msg_6", [{"type": "text", "text": "They differ in one line."}])
    out = replay(c.write(tmp_path / "short.jsonl"))
    assert out["held_out"]["calls"] == 3
    assert out["held_out"]["total_error"] <= 0.10
    assert 2.5 <= out["calibration"]["main"]["chars_per_token"] <= 4.5


def test_lines_that_are_json_but_no_record_need_no_repair_and_are_counted(tmp_path):
    """A bare string, number or list on a line is valid JSON: nothing to repair, nothing
    read. A user or assistant line without its message is skipped, and said."""
    lines = (FIXTURES / "claude-code-2.1.39.jsonl").read_text().splitlines()
    odd = ['"an error the logger wrote"', "42", "[1, 2]", '{"type": "assistant"}']
    odd.append('{"type": "user", "message": null}')
    log = tmp_path / "odd.jsonl"
    log.write_text("\n".join(lines[:5] + odd + lines[5:]) + "\n")
    out = replay(log)
    dropped = out["import"]["dropped"]
    assert dropped["lines that are JSON but not a record (skipped)"] == 3
    assert dropped["assistant lines without a message (skipped)"] == 1
    assert dropped["user lines without a message (skipped)"] == 1
    assert out["import"]["repaired"] == []
    clean = replay(FIXTURES / "claude-code-2.1.39.jsonl")
    assert out["import"]["requests_kept"] == clean["import"]["requests_kept"]


def test_a_claude_log_with_no_links_is_read_in_file_order(tmp_path):
    """Converters and hand-made logs leave `parentUuid` null on every line: each line is
    then not a root of its own, the file's order is the conversation."""
    lines = []
    for line in (FIXTURES / "claude-code-1.0.90.jsonl").read_text().splitlines():
        d = json.loads(line)
        if "parentUuid" in d:
            d["parentUuid"] = None
        lines.append(json.dumps(d))
    log = tmp_path / "unlinked.jsonl"
    log.write_text("\n".join(lines) + "\n")
    out = replay(log)
    assert out["import"]["normalised"]["logs without parentUuid links read in file order"] == 1
    assert out["import"]["requests_kept"] >= 0.9 * out["import"]["requests_recorded"]


def test_attachments_are_what_the_model_read(tmp_path):
    """Claude Code 2.1.x keeps what it adds to the next request as `attachment` lines in
    the chain: CLAUDE.md, a file the person mentioned, a prompt typed while the agent
    worked, a hook's context. They are the conversation (user text), not metadata."""
    c = Claude("2.1.39")
    memory = "Always run the tests before you say done.\n" * 30
    c.attachment(
        {
            "type": "nested_memory",
            "path": "/p/CLAUDE.md",
            "content": {"type": "memory", "path": "/p/CLAUDE.md", "content": memory},
        },
        memory,
    )
    c.user("Fix the parser in src/parse.py.")
    big = "def parse(line):\n    return line.split()\n" * 400
    c.attachment(
        {
            "type": "file",
            "filename": "/p/src/parse.py",
            "content": {"type": "text", "file": {"filePath": "/p/src/parse.py", "content": big}},
        },
        big,
    )
    for k in range(12):
        use = {"type": "tool_use", "id": f"toolu_{k}", "name": "Bash", "input": {"command": "ls"}}
        c.results(c.reply(f"msg_{k}", [use]), [f"toolu_{k}"], "src tests\n" * 60)
        if k == 5:
            c.attachment(
                {
                    "type": "queued_command",
                    "prompt": "Also update the docs, please.",
                    "commandMode": "prompt",
                },
                "Also update the docs, please.",
            )
        if k == 8:
            context = "Lint found 3 warnings in src/parse.py.\n" * 50
            c.attachment(
                {"type": "hook_additional_context", "hookName": "lint", "content": [context]},
                context,
            )
        c.attachment({"type": "date_change", "newDate": "2026-01-02"})  # no text for it
    c.reply("msg_end", [{"type": "text", "text": "Fixed, and the docs updated."}])
    log = c.write(tmp_path / "attached.jsonl")
    out = replay(log)
    kept = out["import"]["kept"]
    assert kept["attachments read as user text (queued_command)"] == 1
    assert kept["attachments read as user text (file)"] == 1
    assert kept["attachments read as user text (nested_memory)"] == 1
    assert kept["attachments read as user text (hook_additional_context)"] == 1
    assert out["import"]["dropped"]["attachment lines with no text for the model (date_change)"]
    assert out["import"]["requests_kept"] == out["import"]["requests_recorded"] == 13
    assert out["held_out"]["total_error"] <= 0.02  # the file and the hook's text are counted
    ws = tmp_path / "ws"
    r = run_team("import", str(log), "--to", str(ws))
    assert r.returncode == 0, r.stderr
    session = (ws / ".team" / "agents" / "main" / "session.jsonl").read_text()
    assert "Also update the docs, please." in session


def test_recorded_micro_compactions_are_replayed_and_counted(tmp_path):
    """Claude Code 2.1.x clears old tool results itself (`microcompact_boundary`, naming
    them): its later calls read less than the log's text. `recorded` clears the same
    results at the same step, and the calibration counts the context as it was sent."""
    c = Claude("2.1.39")
    c.user("Go through every module and list what each one exports.")
    ids = []
    for k in range(40):
        use = {"type": "tool_use", "id": f"toolu_{k:02d}", "name": "Read", "input": {"k": k}}
        c.results(c.reply(f"msg_{k:02d}", [use]), [use["id"]], f"export f{k}\n" * 400)
        ids.append(use["id"])
        if k in (15, 30):  # clear all but the newest three results, as Claude Code does
            c.microcompact([i for i in ids[:-3] if c.sizes.get(i, 0) > 100])
            for i in ids[:-3]:
                c.sizes[i] = 0
    c.reply("msg_end", [{"type": "text", "text": "Done: forty modules listed."}])
    out = replay(c.write(tmp_path / "micro.jsonl"))
    assert out["import"]["kept"]["micro-compactions (results the recorded agent cleared)"] == 2
    log = out["recorded"]["input_tokens_total"]
    row = next(o for o in out["outcomes"] if o["strategy"] == "recorded")
    manual = next(o for o in out["outcomes"] if o["strategy"] == "manual-only")
    assert abs(row["input_tokens_logged"] / log - 1) <= 0.05
    assert manual["input_tokens_logged"] > 1.3 * log  # what not clearing them would read
    assert out["held_out"]["total_error"] <= 0.05


def test_a_codex_count_after_the_calls_output_bills_the_reply(tmp_path):
    """Some rollouts write a call's output before its token_count (and a rate-limit
    notice as a token_count of zeros): the count is the reply's, the zeros no request."""
    lines = [json.loads(x) for x in (FIXTURES / "codex-0.77.0.jsonl").read_text().splitlines()]
    out = []
    for d in lines:
        p = d.get("payload") or {}
        is_output = p.get("type") == "function_call_output"
        if is_output and out and (out[-1].get("payload") or {}).get("type") == "token_count":
            out.insert(len(out) - 1, d)  # the output before the count
            continue
        out.append(d)
    zeros = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
    out.insert(
        5,
        {
            "timestamp": out[4]["timestamp"],
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {"total_token_usage": zeros, "last_token_usage": zeros},
            },
        },
    )
    log = tmp_path / "rollout.jsonl"
    log.write_text("".join(json.dumps(d) + "\n" for d in out))
    clean = replay(FIXTURES / "codex-0.77.0.jsonl")
    got = replay(log)
    assert got["import"]["requests_recorded"] == clean["import"]["requests_recorded"]
    assert got["import"]["requests_kept"] == got["import"]["requests_recorded"]
    assert got["held_out"]["total_error"] <= 0.10


def test_a_strategy_that_never_compacts_meets_the_recorded_models_window(tmp_path):
    """The log compacted at 170k tokens of a 200k window. Replayed with micro and auto
    off, the context would pass the window: the API refuses that request, and the agent
    compacts and sends it again, as a live one would. `recorded` never gets near it."""
    c = Claude("2.1.39")
    c.user("Port every module to the new API.")
    for k in range(34):  # results under the 30,000-character cap: replayed whole
        if k == 21:
            c.compact("Summary: modules 0-20 ported; next: 21 on. " + "detail " * 200)
            c.user("Continue.")
        use = {"type": "tool_use", "id": f"toolu_{k:02d}", "name": "Read", "input": {"k": k}}
        c.results(c.reply(f"msg_{k:02d}", [use]), [use["id"]], f"line {k} of the module\n" * 1200)
    c.reply("msg_end", [{"type": "text", "text": "All ported."}])
    out = replay(c.write(tmp_path / "long.jsonl"))
    rows = {o["strategy"]: o for o in out["outcomes"]}
    assert 150_000 < out["recorded"]["peak_context"] < 200_000
    manual = rows["manual-only"]
    assert manual["compactions"]["auto"] == 1  # "prompt is too long", then again
    assert manual["peak_context"] <= 200_000 + 1_000  # its input, and a reply's output
    # every reply was replayed (else the replay fails), and one request was refused
    assert manual["agent_calls"] == rows["recorded"]["agent_calls"] + 1
    assert rows["recorded"]["compactions"]["auto"] == 1
    assert (
        abs(rows["recorded"]["input_tokens_logged"] / out["recorded"]["input_tokens_total"] - 1)
        <= 0.05
    )


def test_a_record_no_reader_expected_is_one_line_and_a_kept_traceback(tmp_path):
    """A shape nobody has seen (an agent's thought nested 400 lists deep) that the code
    reading it trips on: one line naming the file and where the traceback was kept."""
    doc = json.loads((FIXTURES / "openhands-v1-state.json").read_text())
    events = doc["history"] if isinstance(doc, dict) else doc
    first = next(e for e in events if e.get("thought"))
    nested: object = [{"type": "text", "text": "deep"}]
    for _ in range(400):
        nested = [nested]
    first["thought"] = nested
    log = tmp_path / "deep.json"
    log.write_text(json.dumps(doc))
    for args in (("experiment", "--replay", str(log)), ("import", str(log), "--to", "ws")):
        r = run_team(*args, cwd=tmp_path)
        assert r.returncode == 1
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert "a record this version cannot read" in r.stderr
        kept = Path(r.stderr.rsplit("the traceback is in ", 1)[1].strip())
        assert "Traceback" in kept.read_text() and str(log) in kept.read_text()
        kept.unlink()


def test_a_lone_surrogate_is_replaced_as_it_is_read(tmp_path):
    """A tool output cut inside an emoji leaves "\\ud83d" in the JSON: valid JSON, but no
    UTF-8 file can hold it. It becomes U+FFFD; a whole pair is the emoji it was."""
    lines = (FIXTURES / "claude-code-2.1.39.jsonl").read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if '"tool_result"' in ln)
    lines[k] = lines[k].replace(
        '"content": "', '"content": "cut \\ud83d here, whole \\ud83d\\ude00 ', 1
    )
    assert "\\ud83d here" in lines[k]
    log = tmp_path / "surrogate.jsonl"
    log.write_text("\n".join(lines) + "\n")
    replay(log)
    r = run_team("import", str(log), "--to", str(tmp_path / "ws"))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "ws" / ".team" / "agents" / "main" / "session.jsonl").read_text()
    assert "cut \ufffd here, whole \U0001f600" in text


def test_a_block_in_the_other_roles_turn_is_dropped_and_counted(tmp_path):
    lines = [
        json.loads(x) for x in (FIXTURES / "claude-code-2.1.39.jsonl").read_text().splitlines()
    ]
    user = next(
        d for d in lines if d.get("type") == "user" and isinstance(d["message"]["content"], list)
    )
    user["message"]["content"].append(
        {"type": "tool_use", "id": "toolu_odd", "name": "Bash", "input": {}}
    )
    log = tmp_path / "odd.jsonl"
    log.write_text("".join(json.dumps(d) + "\n" for d in lines))
    out = replay(log)
    assert out["import"]["normalised"]["blocks in the other role's turn dropped"] == 1
