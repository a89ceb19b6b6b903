"""Tables fitted to the terminal: columns go by priority, one may be cut, rows stack;
a value the user types next is never cut. Through the real commands where they print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import write_team
from hypothesis import given
from hypothesis import strategies as st

from team.agents.console.columns import REQUIRED, Column, fit
from team.agents.console.status_table import status_lines
from team.core.conversation import Message

COLS = (
    Column("name", keep=REQUIRED),
    Column("note", keep=500, flex=True, least=8),
    Column("size", keep=100, right=True),
    Column("path", keep=REQUIRED),
)


def test_a_wide_table_loses_its_least_needed_column_first() -> None:
    rows = [["alice", "a long note about what happened", "1,234", ".transcripts/alice/0001.jsonl"]]
    whole = fit(COLS, rows, None)
    assert whole.dropped == [] and "what happened" in whole.lines[2]
    narrow = fit(COLS, rows, 50)
    assert narrow.dropped == ["size"]
    assert all(len(ln) <= 50 for ln in narrow.lines)
    assert narrow.lines[2].endswith(".transcripts/alice/0001.jsonl")
    assert "…" in narrow.lines[2]  # the note was cut to fit, the path was not


def test_when_even_the_required_columns_do_not_fit_rows_are_stacked() -> None:
    path = "/very/long/workspace/.transcripts/alice/0001-20261201T101010Z-auto.jsonl"
    out = fit(COLS, [["alice", "note", "1", path]], 40)
    assert out.lines == ["alice", "  note: note", "  size: 1", f"  path: {path}"]


@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.text(max_size=90), st.integers(0, 10**9)),
        min_size=1,
        max_size=5,
    ),
    st.integers(20, 120),
)
def test_a_fitted_table_is_never_wider_than_asked_and_keeps_required_cells_whole(
    rows, width
) -> None:
    cells = [[n, note, f"{size:,}", f"p/{size}"] for n, note, size in rows]
    out = fit(COLS, cells, width)
    text = "\n".join(out.lines)
    for name, _, size in rows:  # whole, in a column or stacked
        assert " ".join(name.split()) in text and f"p/{size}" in text
    if not any(ln.startswith("  path: ") for ln in out.lines):
        assert all(len(ln) <= width for ln in out.lines)


def status(n: int = 3) -> dict:
    agents = {
        f"agent{i}": {
            "state": "waiting: overloaded (529), 3 failed, retry in 28s",
            "current": "bash: pytest -q tests/test_parser.py -k 'not slow' --maxfail=1",
            "task": 12,
            "context_tokens": 123_456,
            "compactions_by_layer": {"auto": 3, "manual": 0, "micro": 41},
            "calls": 1234,
            "pending": 7,
            "spent_usd": 12.3456,
            "budget_usd": 100.0,
            "branch": f"team/agent{i}",
            "changes": 3,
            "error": "model call failed: overloaded (529) " + "detail " * 30,
        }
        for i in range(n)
    }
    return {"team": "t", "running": True, "agents": agents, "team_spend": {"spent_usd": 37.0}}


def test_status_fits_80_columns_and_says_what_it_left_out() -> None:
    lines = status_lines(status(), 80, "team 't': up")
    assert all(len(ln) <= 80 for ln in lines), "\n".join(lines)
    header = lines[1].split()
    assert header[:4] == ["agent", "state", "doing", "task"] and "inbox" in header
    note = next(ln for ln in lines if ln.startswith("not shown: "))
    assert "team status --wide" in note
    dropped = note.removeprefix("not shown: ").split(" (")[0].split(", ")
    assert set(dropped).isdisjoint(header)
    wide = status_lines(status(), None)
    assert {"calls", "branch", "uncommitted", "spent"} <= set(wide[0].split())
    assert "retry in 28s" in wide[2] and "--maxfail=1" in wide[2]


def team(*args: str, cwd: Path, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "team", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_status_command_fits_and_wide_shows_everything(tmp_path: Path) -> None:
    write_team(tmp_path, agents="alice:coder,bob:tester")
    r = team("status", cwd=tmp_path, columns=60)
    assert r.returncode == 0, r.stderr
    assert all(len(ln) <= 60 for ln in r.stdout.splitlines()), r.stdout
    assert "--wide" in r.stdout
    wide = team("status", "--wide", cwd=tmp_path, columns=60)
    assert "spent" in wide.stdout.splitlines()[1] and "--wide" not in wide.stdout


def test_transcripts_paths_are_never_cut(tmp_path: Path) -> None:
    write_team(tmp_path)
    folder = tmp_path / ".transcripts" / "alice"
    folder.mkdir(parents=True)
    name = "0001-20261201T101010Z-auto.jsonl"
    (folder / name).write_text(json.dumps(Message.user("hi").to_dict()) + "\n")
    for columns in (80, 50, 30):
        r = team("transcripts", cwd=tmp_path, columns=columns)
        assert r.returncode == 0, r.stderr
        assert f".transcripts/alice/{name}" in r.stdout, (columns, r.stdout)
        shown = team("transcripts", "show", f".transcripts/alice/{name}", cwd=tmp_path)
        assert shown.returncode == 0 and "hi" in shown.stdout, shown.stderr
    # a file of another shape is a line saying so, not a traceback
    (folder / name).write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    shown = team("transcripts", "show", f".transcripts/alice/{name}", cwd=tmp_path)
    assert shown.returncode == 0 and "line 1 is not a message" in shown.stdout, shown.stderr


def test_tasks_fit_and_ids_stay(tmp_path: Path) -> None:
    from conftest import add_task

    write_team(tmp_path)
    for i in range(3):
        add_task(tmp_path, f"Refactor module number {i} " + "with care " * 10, owner="alice")
    r = team("tasks", cwd=tmp_path, columns=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(ln) <= 60 for ln in lines), r.stdout
    assert [ln.split()[0] for ln in lines[2:5]] == ["#1", "#2", "#3"]
    assert all("Refactor module" in ln and ln.count("…") == 1 for ln in lines[2:5])
