"""Paths and task ids in real text (team.core.facts), and linear work on huge single tokens."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from team.compaction.retention import retention
from team.core.facts import MAX_PATH, iter_paths, paths, task_ids


def test_tags_and_switches_are_not_paths_and_windows_paths_are():
    text = r"</status> secedit /cfg x.cfg C:\Users\me\notes.txt"
    assert paths(text) == {"x.cfg", r"C:\Users\me\notes.txt"}


def test_json_escaped_windows_path_is_one_path():
    text = r'{"file_path": "C:\\Users\\me\\notes.txt"}\n{"path": "D:/data/x.csv"}'
    assert paths(text) == {r"C:\Users\me\notes.txt", "D:/data/x.csv"}


def test_paths_in_shell_commands_options_urls_and_tags():
    text = (
        "cd /tmp/work && grep -rn foo src/ --include=*.py --out=build/a.o path=team.toml "
        "see https://example.com/a/b.html <file>lib/b.py</file> at a.py:12:3 (1/2, "
        "2024/01/02) dir /s /q and /etc/passwd; slash command /compact"
    )
    assert paths(text) == {
        "/tmp/work",
        "src",
        "build/a.o",
        "team.toml",
        "lib/b.py",
        "a.py",
        "/etc/passwd",
    }


def test_mentions_keep_order_and_repeats():
    assert list(iter_paths("a.py then ./src/b.py. then a.py:3")) == ["a.py", "src/b.py", "a.py"]


def test_task_ids_only_where_a_task_is_named():
    assert task_ids("issue #701") == set()
    assert task_ids("PR #3 fixes it&#39;s bug") == set()
    assert task_ids("[task #12 from user] Task #5, task id 8, task: 9") == {12, 5, 8, 9}
    assert task_ids('claim_task {"task_id": "3"} task_id=4 <message task="6">') == {3, 4, 6}
    assert task_ids("Open tasks: #12 fix parser; #7 review</identity> #99") == {12, 7}
    summary = "## Pending tasks\n- #1: parser\n- #2: docs\n\n## Files\n- #3 is an issue"
    assert task_ids(summary) == {1, 2}
    assert task_ids("task 007") == {7}


def test_a_summary_keeping_a_windows_path_retains_it():
    before = r"type C:\Users\me\notes.txt"
    assert retention(before, r"edited C:\Users\me\notes.txt", []).paths == 1.0
    assert retention(before, "edited notes", []).paths == 0.0


def test_tokens_beyond_path_max_are_skipped_and_within_it_kept():
    # The contract that keeps every later rule bounded: no token longer than MAX_PATH is
    # looked at again after the single tokenising pass.
    ok = "d/" + "a" * (MAX_PATH - 2)
    assert paths(f"x {ok} y") == {ok}
    assert paths(f"x {ok}a y") == set()


# The shapes that make backtracking regexes quadratic: long runs of word characters,
# of dots and slashes, of escapes, of spaces after "task", of digits after "#".
_HUGE = textwrap.dedent(
    r"""
    import sys
    from team.compaction.retention import facts
    n = int(sys.argv[1])
    shapes = ["a" * n, "a." * (n // 2), "a/" * (n // 2), "\\n" * (n // 2), "C:\\" + "a" * n,
              "task" + " " * n + "x", "#" + "1" * n + "a", "tasks:" + " #1" * (n // 3),
              "<" + "a" * n, "x=" * (n // 2), "a:" * (n // 2)]
    for s in shapes:
        found = facts("see src/a.py " + s + " then task 3", ["bob"])
        assert "src/a.py" in found["paths"] and "3" in found["task_ids"], (s[:20], found)
    print("ok")
    """
)


def test_multi_megabyte_single_tokens_are_scanned_linearly():
    # 2 MB per shape. The quadratic path regex took minutes on 100 kB and never finished
    # on 10 MB; a linear scan does all eleven shapes in seconds. The timeout only guards
    # the suite against a stall: it is far above any plausible linear run on a busy box.
    run = subprocess.run(
        [sys.executable, "-c", _HUGE, str(2_000_000)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "ok"
