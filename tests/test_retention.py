"""Retention: the share of task ids, teammate names and file paths a summary keeps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from team.compaction.retention import Retention, facts, retention

TEAM = ["alice", "bob", "carol"]

SEGMENT = """\
user: [task #12 from user] Fix the failing parser test in src/parser.py.
assistant: tool_use read_file {"path": "tests/test_parser.py"}
user: tool_result: def test_empty(): ...
user: [message from bob] I changed team.toml, please also look at task 7.
assistant: tool_use claim_task {"task_id": 7}
"""


def test_facts_finds_each_kind():
    found = facts(SEGMENT, TEAM)
    assert found["task_ids"] == {"12", "7"}
    assert found["names"] == {"bob"}
    assert found["paths"] == {"src/parser.py", "tests/test_parser.py", "team.toml"}


def test_summary_that_keeps_every_fact_scores_one():
    summary = (
        "<identity>You are 'alice'. Open tasks: #12 fix parser, #7 review</identity>\n"
        "Working on task 12 in src/parser.py (test in tests/test_parser.py). "
        "Bob edited team.toml and asked about task 7."
    )
    r = retention(SEGMENT, summary, TEAM)
    assert r == Retention(task_ids=1.0, names=1.0, paths=1.0, overall=1.0)


def test_summary_that_drops_a_task_id_scores_below_one():
    summary = (
        "Working on task 12 in src/parser.py (test in tests/test_parser.py). Bob edited team.toml."
    )
    r = retention(SEGMENT, summary, TEAM)
    assert r.task_ids == 0.5
    assert r.names == 1.0 and r.paths == 1.0
    assert r.overall is not None and r.overall < 1.0
    assert r.overall == 5 / 6  # one of six facts lost


def test_kinds_absent_before_are_none_not_one():
    r = retention("nothing concrete here", "also nothing", TEAM)
    assert r == Retention(task_ids=None, names=None, paths=None, overall=None)
    r = retention("ask carol", "", TEAM)
    assert r.names == 0.0 and r.task_ids is None and r.paths is None and r.overall == 0.0


def test_task_id_spellings_are_the_same_fact():
    before = 'claim_task {"task_id": 3}; task_id=4; Task #5; task: 6; tasks 8; tasks: #9, #10'
    assert facts(before, [])["task_ids"] == {"3", "4", "5", "6", "8", "9", "10"}
    assert retention("task 007", "Task #7", []).task_ids == 1.0


def test_names_are_whole_words_and_ignore_case():
    assert facts("Alice met bobby and bob_2", TEAM)["names"] == {"alice"}
    assert facts("ask Carol.", TEAM)["names"] == {"carol"}


def test_paths_are_normalised_and_dotted_words_are_not_paths():
    text = (
        "edit ./src/app.py. then main.py:12, see https://example.com/docs/x, "
        "e.g. os.path.join or 3.14 on 2024/01/02; dir docs/ and "
        '"line\\nlib/util.py"'
    )
    assert facts(text, [])["paths"] == {"src/app.py", "main.py", "docs", "lib/util.py"}
    assert retention("./src/app.py", "src/app.py.", []).paths == 1.0


def test_html_entities_are_not_task_ids():
    assert facts("it&#39;s fine", [])["task_ids"] == set()


# Pieces that make facts (and near-misses) more often than random characters would.
_piece = st.sampled_from(
    [*"abcotsk#/._-:\"' \n0123456789\\", "task ", "task_id", "alice", "Bob", ".py", "&"]
)
_text = st.lists(_piece, max_size=40).map("".join)


@settings(max_examples=200, deadline=None)
@given(_text, _text)
def test_appending_never_loses_a_fact(before, extra):
    # Whatever the summary adds, keeping the whole segment keeps every fact in it.
    r = retention(before, before + " " + extra, TEAM)
    for share in (r.task_ids, r.names, r.paths, r.overall):
        assert share is None or share == 1.0


@settings(max_examples=200, deadline=None)
@given(_text, _text)
def test_shares_are_proportions(before, after):
    r = retention(before, after, TEAM)
    for share in (r.task_ids, r.names, r.paths, r.overall):
        assert share is None or 0.0 <= share <= 1.0
    assert (r.overall is None) == all(s is None for s in (r.task_ids, r.names, r.paths))
