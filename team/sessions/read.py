"""Format detection: which reader a file needs, from what is in it."""

from __future__ import annotations

import re
from pathlib import Path

from team.sessions import claude_code, codex, gemini, own, plain, trajectories
from team.sessions.model import ImportReport, LogError, Session
from team.sessions.repair import check
from team.sessions.source import json_document, json_lines, read_text
from team.workspace.places import Workspace

FORMATS = (
    "claude-code",
    "codex",
    "gemini-cli",
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
    if path.is_dir():
        session = _workspace(path, report)
    elif not path.is_file():
        raise LogError(path, None, "no such file or directory")
    else:
        session = _file(path, read_text(path), repair, report)
    _name_agents(session)
    check(session, repair=repair)
    return session


def _file(path: Path, text: str, repair: bool, report: ImportReport) -> Session:
    head = text.lstrip()[:1]
    if head == "{" and _one_document(text):
        doc = json_document(path, text)
        if gemini.looks_like(doc):
            return gemini.read(path, doc, report)
        if trajectories.is_swe_agent(doc):
            return trajectories.read_swe_agent(path, doc, report)
        if trajectories.is_mini(doc):
            return trajectories.read_mini(path, doc, report)
        if plain.looks_like(doc):
            return plain.read(path, doc, report)
        if "\n" in text.strip():
            raise LogError(path, None, _unknown())
        # one line: perhaps a JSON Lines log of one record
    elif head == "[":
        doc = json_document(path, text)
        if isinstance(doc, list) and doc and all(isinstance(m, dict) and "role" in m for m in doc):
            return plain.read(path, {"messages": doc}, report)
        raise LogError(path, None, _unknown())
    lines = json_lines(path, text, repair=repair, report=report)
    if not lines:
        raise LogError(path, None, "empty: no records")
    if own.looks_like(lines):
        return own.read(path, lines, report)
    if claude_code.looks_like(lines):
        return claude_code.read(path, lines, report)
    if codex.looks_like(lines):
        return codex.read(path, lines, report)
    raise LogError(path, lines[0][0], _unknown())


def _one_document(text: str) -> bool:
    """A JSON document rather than JSON Lines: more than one line of one object."""
    first = text.lstrip().split("\n", 1)[0].rstrip()
    if not (first.startswith("{") and first.endswith("}")):
        return True  # an object spread over lines (pretty-printed)
    rest = text.lstrip()[len(first) :].strip()
    return not rest


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
