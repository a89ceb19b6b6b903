"""Long input and long mail at the CLI: stdin and --file, truncation, labels, senders,
the status inbox count and the archive of processed mail. Subprocesses, real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_team, send_mail, write_team

from team.mailbox.maildir import MaildirMailbox

BIG = 200_000


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_team(tmp_path)


def team(ws: Path, *args: str, input: str | None = None):
    return run_team(*args, "--dir", str(ws), input=input)


def inbox(ws: Path, agent: str, *flags: str) -> list[dict]:
    done = team(ws, "inbox", agent, "--json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def big_text(n: int = BIG) -> str:
    line = "The quick brown fox jumps over the lazy dog. "
    return "Big spec\n" + (line * (n // len(line) + 1))[:n]


def test_send_reads_200kb_from_stdin_and_from_a_file(ws: Path) -> None:
    text = big_text()
    piped = team(ws, "send", "alice", "-", input=text)
    assert piped.returncode == 0, piped.stderr
    spec = ws / "spec.txt"
    spec.write_text(text + "second")
    filed = team(ws, "send", "alice", "--file", str(spec))
    assert filed.returncode == 0, filed.stderr
    assert [m["content"] for m in inbox(ws, "alice")] == [text, text + "second"]


def test_broadcast_reads_stdin(ws: Path) -> None:
    assert team(ws, "broadcast", "-", input="all hands\n").returncode == 0
    assert [m["content"] for m in inbox(ws, "bob")] == ["all hands\n"]


def test_assign_from_a_file_keeps_the_whole_text_and_a_short_subject(ws: Path) -> None:
    spec = ws / "task.md"
    spec.write_text(big_text())
    done = team(ws, "assign", "alice", "--file", str(spec))
    assert done.returncode == 0, done.stderr
    [task] = json.loads(team(ws, "tasks", "--json").stdout)
    body = spec.read_text().removeprefix("Big spec\n").strip()
    assert task["subject"] == "Big spec" and task["description"] == body
    [msg] = inbox(ws, "alice")
    assert msg["content"] == "Big spec\n\n" + body and msg["task_id"] == task["id"]
    opened = team(ws, "assign", "--any", "-", input="one line task")
    assert opened.returncode == 0, opened.stderr
    tasks = json.loads(team(ws, "tasks", "--json").stdout)
    assert tasks[1]["subject"] == "one line task" and tasks[1]["owner"] is None


@pytest.mark.parametrize(
    "args, expected",
    [
        (("send", "alice", "--file", "missing.txt"), "missing.txt: cannot read"),
        (("send", "alice", "--file", "binary.bin"), "not UTF-8"),
        (("send", "alice", "hi", "--from", "nobody"), "unknown sender 'nobody'"),
    ],
    ids=["missing-file", "binary", "unknown-sender"],
)
def test_bad_input_is_one_line(ws: Path, args: tuple[str, ...], expected: str) -> None:
    (ws / "binary.bin").write_bytes(b"\xff\xfe\x00bad")
    done = run_team(*args, "--dir", str(ws), cwd=ws)
    assert done.returncode == 1, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr
    assert MaildirMailbox(ws / ".team" / "inbox" / "alice").pending() == []


@pytest.mark.parametrize(
    "args, expected",
    [
        (("send", "alice", "hi", "--file", "spec.txt"), "not both"),
        (("send", "alice"), "missing TEXT"),
        (("assign", "alice"), "missing TEXT"),
        (("broadcast",), "missing TEXT"),
        (("assign", "--any", "alice", "do it"), "not both"),
        (("send",), "Missing argument 'AGENT'"),
        (
            ("send", "alice", "hi", "--form", "bob"),
            "No such option '--form'. Did you mean '--from'?",
        ),
        (("task", "show", "x"), "'x' is not a valid integer"),
    ],
    ids=[
        "both",
        "no-text",
        "assign-no-text",
        "broadcast",
        "any-and-agent",
        "no-agent",
        "typo",
        "not-an-id",
    ],
)
def test_usage_errors_exit_2_with_the_usage_line(
    ws: Path, args: tuple[str, ...], expected: str
) -> None:
    """A command typed wrong (rather than a bad file or name) exits 2, as every usage
    error does, and says how to get help; nothing is sent or added."""
    (ws / "spec.txt").write_text("x")
    done = run_team(*args, "--dir", str(ws), cwd=ws)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"Usage: team {args[0]}"), done.stderr
    assert expected in done.stderr.strip().splitlines()[-1], done.stderr
    assert MaildirMailbox(ws / ".team" / "inbox" / "alice").pending() == []
    assert not (ws / ".team" / "tasks").exists() or not list((ws / ".team" / "tasks").iterdir())


def test_inbox_truncates_long_messages_unless_full(ws: Path) -> None:
    text = "x" * 1_000_000 + "THE END"
    assert team(ws, "send", "alice", "-", input=text).returncode == 0
    short = team(ws, "inbox", "alice")
    assert short.returncode == 0
    assert len(short.stdout) < 5_000 and "THE END" not in short.stdout
    assert "998,007 more characters; --full shows the whole message" in short.stdout
    full = team(ws, "inbox", "alice", "--full")
    assert "THE END" in full.stdout and len(full.stdout) > 1_000_000


def test_task_messages_are_labelled_once(ws: Path) -> None:
    assert team(ws, "assign", "alice", "Fix the parser").returncode == 0
    out = team(ws, "inbox", "alice").stdout
    assert "(task #1)" in out and "task task" not in out


def test_status_inbox_counts_messages_not_stray_files(ws: Path) -> None:
    assert team(ws, "send", "alice", "one").returncode == 0
    new = ws / ".team" / "inbox" / "alice" / "new"
    (new / "notes.txt").write_text("not a message")
    (new / "core").write_bytes(b"\x00")
    status = json.loads(team(ws, "status", "--json").stdout)
    assert status["agents"]["alice"]["pending"] == 1


def test_processed_mail_leaves_cur_and_inbox_all_still_shows_it(ws: Path) -> None:
    for i in range(5):
        send_mail(ws, "user", f"report {i}", sender="alice")
    acked = team(ws, "inbox", "user", "--ack")
    assert acked.returncode == 0 and "report 4" in acked.stdout
    box = ws / ".team" / "inbox" / "user"
    assert list((box / "cur").iterdir()) == [] and list((box / "new").iterdir()) == []
    listed = inbox(ws, "user", "--all")
    assert [m["content"] for m in listed] == [f"report {i}" for i in range(5)]
    assert all(m["status"] == "done" for m in listed)
    assert inbox(ws, "user") == []


def test_mail_marked_done_by_an_older_version_is_archived_and_still_listed(ws: Path) -> None:
    send_mail(ws, "user", "old report", sender="alice")
    box = ws / ".team" / "inbox" / "user"
    [f] = list((box / "new").iterdir())
    (box / "cur").mkdir(exist_ok=True)
    f.rename(box / "cur" / (f.name + ":2,S"))  # how processed mail used to be kept
    assert [m["status"] for m in inbox(ws, "user", "--all")] == ["done"]
    send_mail(ws, "user", "new report", sender="bob")
    acked = team(ws, "inbox", "user", "--ack")
    assert "new report" in acked.stdout and "old report" not in acked.stdout
    assert list((box / "cur").iterdir()) == []
    assert [m["content"] for m in inbox(ws, "user", "--all")] == ["old report", "new report"]
