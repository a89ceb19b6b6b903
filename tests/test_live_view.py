"""The live view: `team up` on a pseudo-terminal, its output replayed on a small terminal
model, must leave every event line on screen (nothing overwritten) with the table below."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from conftest import run_team, write_team

from team.agents.console.live import LiveFeed, LiveView
from team.core.events import AgentEvent, CompactionEvent, DeliveryEvent

CSI = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])")


def screen(raw: str) -> list[str]:
    """What a terminal shows after `raw` (scrollback included): enough of VT100 for
    rich's Live (cursor up/down, column, erase line; colours and modes ignored)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(raw):
        ch = raw[i]
        m = CSI.match(raw, i) if ch == "\x1b" else None
        if m:
            args, cmd = m.group(1), m.group(2)
            n = int(args) if args.isdigit() else 1
            if cmd == "A":
                row = max(0, row - n)
            elif cmd == "B":
                row += n
            elif cmd == "G":
                col = n - 1
            elif cmd == "K":
                while len(lines) <= row:
                    lines.append([])
                lines[row] = [] if args == "2" else lines[row][:col]
            i = m.end()
            continue
        if ch == "\n":
            row, col = row + 1, 0
        elif ch == "\r":
            col = 0
        elif ch >= " ":
            while len(lines) <= row:
                lines.append([])
            line = lines[row]
            line.extend(" " * (col - len(line) + 1))
            line[col] = ch
            col += 1
        i += 1
    return ["".join(line).rstrip() for line in lines]


def test_feed_lines_stay_above_the_redrawn_table() -> None:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100, height=30)
    feed = LiveFeed()
    status = {"agents": {"alice": {"state": "working", "calls": 1}}}
    events = [
        AgentEvent("alice", "claimed", "#1 Fix the parser"),
        DeliveryEvent("alice", "bob", "m1", "received", "message"),
        CompactionEvent("alice", "auto", "threshold", 52_000, 1_900, 40, 2, "t.jsonl"),
        AgentEvent("alice", "warning", "model call failed (overloaded); retrying in 2s"),
        AgentEvent("alice", "completed", "#1 Fix the parser"),
    ]
    with LiveView(feed, console) as view:
        for k, ev in enumerate(events):
            feed.emit(ev)
            status["agents"]["alice"]["calls"] = k + 2
            view.tick(status)
    shown = screen(buf.getvalue())
    wanted = [
        "claimed: #1 Fix the parser",
        "<- message from bob",
        "compaction auto: 52,000 -> 1,900 tokens",
        "warning: model call failed (overloaded)",
        "completed: #1 Fix the parser",
    ]
    rows = [next(i for i, line in enumerate(shown) if w in line) for w in wanted]
    assert rows == sorted(rows)  # in order, each on its own line
    assert all(sum(w in line for line in shown) == 1 for w in wanted)  # once each
    table = [i for i, line in enumerate(shown) if "alice" in line and "working" in line]
    assert len(table) == 1 and table[0] > rows[-1]  # one table, below the feed
    assert "6" in shown[table[0]]  # the last redraw, not a stale one


def _run_on_pty(
    args: list[str], cwd: Path, timeout: float = 90, size: tuple[int, int] = (40, 120)
) -> str:
    master, slave = pty.openpty()
    rows, cols = size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "team", *args],
        cwd=cwd,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=30)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_team_up_on_a_tty_scrolls_events_above_the_table(tmp_path: Path) -> None:
    write_team(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    return 1  # TODO tidy\n")
    assert (
        run_team(
            "assign", "alice", "Find every TODO in the project", "--dir", str(tmp_path)
        ).returncode
        == 0
    )
    assert (
        run_team("assign", "--any", "Count the lines under src/", "--dir", str(tmp_path)).returncode
        == 0
    )
    raw = _run_on_pty(
        ["up", "--until-idle", "--idle-grace", "0.5", "--dir", str(tmp_path)], tmp_path
    )
    shown = screen(raw)
    text = "\n".join(shown)
    assert "run finished" in text, text[-3000:]
    feed = [line if re.match(r"\d\d:\d\d:\d\d ", line) else "" for line in shown]
    for wanted in (
        "alice        started",
        "<- task from user",
        "claimed: #2",
        "completed: #1",
        "completed: #2",
    ):
        assert sum(wanted in line for line in feed) == 1, (wanted, text[-3000:])
    # the table stays once, under the feed, after every redraw
    headers = [i for i, line in enumerate(shown) if "agent" in line and "compactions" in line]
    assert len(headers) == 1
    last_event = max(i for i, line in enumerate(feed) if "completed: #" in line)
    assert headers[0] > last_event


def test_the_live_table_fits_an_80_by_24_terminal(tmp_path: Path) -> None:
    """On 80 columns the table loses its least needed columns, named under it, rather
    than cutting its headers (`doi…`, `spe`) or dropping the inbox."""
    write_team(tmp_path)
    send = run_team("send", "bob", "Please count the lines of README", "--dir", str(tmp_path))
    assert send.returncode == 0
    raw = _run_on_pty(
        ["up", "--until-idle", "--idle-grace", "0.5", "--dir", str(tmp_path)],
        tmp_path,
        size=(24, 80),
    )
    shown = screen(raw)
    text = "\n".join(shown)
    assert "run finished" in text, text[-3000:]
    [header] = [line for line in shown if line.startswith("agent ")]
    start = shown.index(header)
    table = shown[start : next(i for i, ln in enumerate(shown) if ln.startswith("run finished"))]
    assert all(len(line.rstrip()) <= 80 for line in table), text
    assert header.split()[:4] == ["agent", "state", "doing", "task"], header
    assert "inbox" in header.split() and "…" not in header
    for name in ("alice", "bob"):
        assert any(line.startswith(name + " ") for line in shown)
