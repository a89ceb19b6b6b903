"""Format detection: which reader a file needs, from what is in it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from team.sessions import (
    claude_code,
    codex,
    gemini,
    openhands,
    openhands_v1,
    own,
    plain,
    trajectories,
)
from team.sessions.model import ImportReport, LogError, Session
from team.sessions.repair import check
from team.sessions.source import foreign, json_document, json_lines, read_text, stream_lines
from team.workspace.places import Workspace

FORMATS = (
    "claude-code",
    "codex",
    "gemini-cli",
    "openhands",
    "swe-agent",
    "mini-swe-agent",
    "messages-api",
    "team",
)
_NAME = re.compile(r"[^a-z0-9_-]+")


def read_session(path: Path, *, repair: bool = False) -> Session:
    """Read any supported log into a `Session` the API would accept.

    Args:
        path: a log file, or one of our workspaces (a folder with `.team/agents/`).
        repair: fix what the API would reject instead of failing on it.

    Raises:
        LogError: unreadable, not a supported format, or (without `repair`) a
            conversation the API would reject; the message names the file and line.
    """
    report = ImportReport()
    with foreign(path):
        if path.is_dir():
            session = _workspace(path, report)
        elif not path.is_file():
            raise LogError(path, None, "no such file or directory")
        else:
            session = _file(path, repair, report)
        _name_agents(session)
        check(session, repair=repair)
    return session


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(1 << 16)
    except OSError as e:
        raise LogError(path, None, f"cannot read: {e.strerror or e}") from None


def _file(path: Path, repair: bool, report: ImportReport) -> Session:
    start = _head(path)
    if not start.strip():
        raise LogError(path, None, "empty: no records")
    head = start.lstrip()[:1]
    if head in (b"{", b"[") and _one_document(start):
        text = read_text(path)
        if head == b"{":
            return _document(path, text, report)
        doc = json_document(path, text)
        if openhands_v1.is_events(doc):  # before V0: its events have `action` too
            return openhands_v1.read_events(path, doc, report)
        if openhands.is_events(doc):
            return openhands.read_events(path, doc, report)
        if trajectories.is_chat(doc):  # mini-swe-agent's messages alone, OpenAI's form
            return trajectories.read_mini(path, doc, report)
        if isinstance(doc, list) and doc and all(isinstance(m, dict) and "role" in m for m in doc):
            return plain.read(path, {"messages": doc}, report)
        raise LogError(path, None, _unknown())
    return _jsonl(path, stream_lines(path, repair=repair, report=report), report)


def _document(path: Path, text: str, report: ImportReport) -> Session:
    doc = json_document(path, text)
    session = _known_document(path, doc, report)
    if session is not None:
        return session
    if "\n" in text.strip():
        raise LogError(path, None, _unknown())
    # one line: perhaps a JSON Lines log of one record
    return _jsonl(path, json_lines(path, text, repair=False, report=report), report)


def _known_document(path: Path, doc: Any, report: ImportReport) -> Session | None:
    """The session a JSON document of a known format holds, or None."""
    if isinstance(doc, dict) and isinstance(doc.get("loglines"), list):
        lines = _loglines(doc["loglines"], report)
        if lines and claude_code.looks_like(lines):
            return claude_code.read(path, lines, report)
        raise LogError(path, None, _unknown())
    if gemini.looks_like(doc):
        return gemini.read(path, doc, report)
    if openhands_v1.history(doc) is not None:
        return openhands_v1.read_output(path, [(1, doc)], report)
    if openhands.is_output(doc):  # before SWE-agent: both keep a `history`
        return openhands.read_output(path, [(1, doc)], report)
    if trajectories.is_swe_agent(doc):
        return trajectories.read_swe_agent(path, doc, report)
    if trajectories.is_mini(doc):
        return trajectories.read_mini(path, doc, report)
    if plain.looks_like(doc):
        return plain.read(path, doc, report)
    return None


def _jsonl(path: Path, lines: list[tuple[int, dict]], report: ImportReport) -> Session:
    if not lines:
        raise LogError(path, None, "empty: no records")
    if own.looks_like(lines):
        return own.read(path, lines, report)
    if claude_code.looks_like(lines):
        return claude_code.read(path, lines, report)
    if codex.looks_like(lines):
        return codex.read(path, lines, report)
    if gemini.is_lines(lines):
        return gemini.read_lines(path, lines, report)
    if openhands_v1.history(lines[0][1]) is not None:
        return openhands_v1.read_output(path, lines, report)
    if openhands.is_output(lines[0][1]):
        return openhands.read_output(path, lines, report)
    if len(lines) == 1:  # a document written on one long line (json.dump's way)
        session = _known_document(path, lines[0][1], report)
        if session is not None:
            return session
    raise LogError(path, lines[0][0], _unknown())


def _loglines(entries: list[Any], report: ImportReport) -> list[tuple[int, dict]]:
    """Claude Code's lines as simonw/claude-code-transcripts exports them
    (`{"loglines": [...]}`), numbered as lines. The export may leave out the links
    (`uuid`, `parentUuid`): then each line follows the one before it, and a compaction
    summary (`isCompactSummary`) starts a root of its own, as in a 1.0.x log."""
    lines = [(n, o) for n, o in enumerate(entries, 1) if isinstance(o, dict)]
    if len(lines) < len(entries):
        report.dropped["loglines that are not objects"] += len(entries) - len(lines)
    if any(o.get("uuid") for _, o in lines):
        return lines
    linked, parent = [], None
    for n, o in lines:
        uid = f"logline-{n}"
        root = o.get("isCompactSummary") or o.get("type") not in ("user", "assistant", "system")
        linked.append((n, {**o, "uuid": uid, "parentUuid": None if root else parent}))
        parent = uid if not root or o.get("isCompactSummary") else parent
    if linked:
        report.normalised["lines without links, linked in file order"] += len(linked)
    return linked


def _one_document(start: bytes) -> bool:
    """A JSON document rather than JSON Lines (`start` is the file's first 64 KiB): an
    object spread over lines (pretty-printed), or one line of it and nothing more."""
    body = start.lstrip()
    first, sep, rest = body.partition(b"\n")
    first = first.rstrip()
    if not sep and len(start) >= 1 << 16:
        # one long first line, more to come: JSON Lines, whose records are objects, or
        # a list written on one line (a trajectory saved by json.dump)
        return first[:1] == b"["
    if not (first[:1] in (b"{", b"[") and first[-1:] in (b"}", b"]")):
        return True
    return not rest.strip()


def _unknown() -> str:
    return "not a session log this version can read (formats: " + ", ".join(FORMATS) + ")"


def _workspace(path: Path, report: ImportReport) -> Session:
    ws = Workspace.at(path)
    logs = ws.session_logs()
    if not logs:
        raise LogError(path, None, f"no session logs under {ws.agents_root}")
    agents = []
    for log in logs:
        lines = json_lines(log, read_text(log), repair=False, report=report)
        agents.append(own.agent_log(log.parent.name, log, lines, report))
    report.kept["agents"] = len(agents)
    return Session(str(path), own.FORMAT, agents, report)


def _name_agents(session: Session) -> None:
    """Agent names that are folder names here (^[a-z][a-z0-9_-]{0,31}$), all distinct."""
    seen: set[str] = set()
    for i, a in enumerate(session.agents, 1):
        name = _NAME.sub("-", a.name.lower()).strip("-_")[:32] or f"agent-{i}"
        if not name[0].isalpha():
            name = f"a-{name}"[:32]
        if name == "user":
            name = "user-agent"
        base, k = name, 2
        while name in seen:
            name, k = f"{base[:28]}-{k}", k + 1
        seen.add(name)
        a.name = name
