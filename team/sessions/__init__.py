"""Other agents' session logs, read into one neutral form (see `team.sessions.model`).

`read_session(path)` detects the format by content, never by file name: Claude Code,
OpenAI Codex CLI, Gemini CLI, SWE-agent, mini-swe-agent, a plain Messages-API JSON, and
our own session logs and workspaces.
"""

from team.sessions.model import (
    AgentLog,
    CompactionMark,
    ImportReport,
    LogError,
    Session,
    Turn,
)
from team.sessions.read import read_session

__all__ = [
    "AgentLog",
    "CompactionMark",
    "ImportReport",
    "LogError",
    "Session",
    "Turn",
    "read_session",
]
