"""The README's "Using it" section, run as written against a sim team.

Each line of its shell block runs through bash in a fresh folder, in order, with the
venv's `team` on PATH; the lines that run until stopped (`team up`, `--follow`) run in
the background until a later line (`team down`) or Ctrl-C stops them. Every command
shown in the section's prose and table must exist with the flags it is shown with. A
wrong example fails here, not for a new user.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
pytestmark = pytest.mark.slow


def using_it() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("\n## Using it\n", 1)[1].split("\n## ", 1)[0]


def shell_lines() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", using_it(), re.S)
    assert block, "the Using it section has no shell block"
    return [ln for ln in block[1].splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def runs_until_stopped(line: str) -> bool:
    words = line.split("#", 1)[0].split()
    return (words[:2] == ["team", "up"] and "--until-idle" not in words) or "--follow" in words


def environment(ws: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # the venv's `team` script
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"], "COLUMNS": "80"}


def wait_for_output(proc: subprocess.Popen, seconds: float) -> str:
    """The first line the process prints, or "" if none within `seconds`."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if sel.select(seconds):
        return proc.stdout.readline()
    return ""


def test_every_line_of_using_it_runs_as_written(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    # the files the examples read, as a user would have them
    (ws / "review-notes.md").write_text("Looks good; one nit in parse.py line 3.\n")
    (ws / "spec.md").write_text("Write a tokenizer\n\nSplit on whitespace; keep quoted strings.\n")
    env = environment(ws)
    background: list[tuple[str, subprocess.Popen]] = []
    lines = shell_lines()
    assert lines[0].startswith("team init") and lines[-1].startswith("team down")
    try:
        for line in lines:
            if runs_until_stopped(line):
                proc = subprocess.Popen(
                    ["bash", "-c", f"exec {line}"],
                    cwd=ws,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                first = wait_for_output(proc, 60)  # a cold start at any load
                if not first and line.startswith("team inbox"):
                    # the team took what was there: a message sent now must show up
                    who = line.split()[2]
                    subprocess.run(["bash", "-c", f"team send {who} ping"], cwd=ws, env=env)
                    first = wait_for_output(proc, 30)
                assert first, f"{line!r} printed nothing"
                background.append((line, proc))
                if "--follow" in line:  # Ctrl-C, as the user would
                    proc.send_signal(signal.SIGINT)
                    out, err = proc.communicate(timeout=30)
                    assert proc.returncode == 0, (line, err)
                    assert "Traceback" not in err, (line, err)
                continue
            r = subprocess.run(
                ["bash", "-c", line], cwd=ws, env=env, capture_output=True, text=True, timeout=120
            )
            assert r.returncode == 0, (line, r.stdout, r.stderr)
            assert r.stderr == "", (line, r.stderr)
        up_line, up = background[0]
        assert up_line.startswith("team up")
        out, err = up.communicate(timeout=60)  # `team down` stopped it
        assert up.returncode == 0, err
        assert "run finished" in out
    finally:
        for _, proc in background:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def shown_commands() -> list[str]:
    """Every `team ...` in the section's prose and table, as shown."""
    return [m for m in re.findall(r"`(team [^`]+)`", using_it())]


def command_path(shown: str) -> list[str]:
    words = []
    for word in shown.split()[1:]:
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        words.append(word)
    return words


def test_every_command_and_flag_shown_exists() -> None:
    shown = shown_commands()
    assert len(shown) > 20
    helps: dict[tuple[str, ...], str] = {}
    for text in shown:
        path = command_path(text)
        while True:  # `team inbox user --ack`: `user` is an argument, not a command
            key = tuple(path)
            if key not in helps:
                r = subprocess.run(
                    [sys.executable, "-m", "team", *path, "--help"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                helps[key] = r.stdout if r.returncode == 0 else ""
            if helps[key].startswith("Usage: team") or not path:
                break
            path.pop()
        assert helps[tuple(path)], f"{text!r}: no such command"
        for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", text):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[tuple(path)]), (
                f"{text!r}: `team {' '.join(path)}` has no {flag}"
            )


def test_the_help_lists_every_command_in_its_group() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "team", "--help"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0
    sections = {}
    for title, body in re.findall(
        r"\n(Run a team|Give it work|Watch it|Study compaction):\n((?:  .*\n?)+)", r.stdout
    ):
        sections[title] = [ln.split()[0] for ln in body.splitlines()]
    assert sections["Run a team"][:5] == ["init", "check", "up", "down", "demo"]
    assert {"assign", "send", "broadcast", "tasks", "approve"} <= set(sections["Give it work"])
    assert sections["Watch it"][:4] == ["status", "inbox", "log", "audit"]
    assert sections["Study compaction"][:5] == [
        "stats",
        "report",
        "transcripts",
        "experiment",
        "import",
    ]
    assert all(len(ln) <= 80 for ln in r.stdout.splitlines())
    assert "<bool>" not in r.stdout and "--no-" not in r.stdout
    # every command says its group (team/cli/base.py `command`): none is left unsorted
    assert "\nCommands:" not in r.stdout
    version = subprocess.run(
        [sys.executable, "-m", "team", "--version"], capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0 and re.fullmatch(r"team \d+\.\d+\.\d+\n", version.stdout)


@pytest.mark.parametrize(
    "command",
    [
        ["init"],
        ["check"],
        ["up"],
        ["down"],
        ["demo"],
        ["assign"],
        ["send"],
        ["broadcast"],
        ["tasks"],
        ["task", "show"],
        ["task", "block"],
        ["goal"],
        ["plans"],
        ["approve"],
        ["reject"],
        ["merge"],
        ["status"],
        ["inbox"],
        ["log"],
        ["audit"],
        ["stats"],
        ["report"],
        ["transcripts"],
        ["transcripts", "show"],
        ["experiment"],
        ["import"],
        ["web"],
    ],
    ids=lambda c: " ".join(c),
)
def test_each_help_reads_well(command: list[str]) -> None:
    """One usage style (`team send [OPTIONS] AGENT [TEXT]`), flags as `--force` with no
    type placeholder, no `--x/--no-x` pairs, 80 columns."""
    r = subprocess.run(
        [sys.executable, "-m", "team", *command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    usage = r.stdout.splitlines()[0]
    assert re.fullmatch(rf"Usage: team {' '.join(command)}( \[OPTIONS\])?( \[?[A-Z]+\]?)*", usage)
    assert all(len(ln) <= 80 for ln in r.stdout.splitlines())
    for bad in ("<bool>", "<str>", "<int>", "BOOLEAN", " / --no-"):
        assert bad not in r.stdout, (bad, r.stdout)
    if command == ["transcripts"]:
        assert "[AGENT]" in r.stdout and "show [OPTIONS] FILE" in r.stdout
