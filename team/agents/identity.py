"""Who an agent is: the system prompt, and the identity block re-injected after compaction."""

from __future__ import annotations

from collections.abc import Iterable

from team.config import AgentConfig, TeamConfig

TOOL_GUIDE = """\
Your tools: bash, read_file, write_file and edit_file work inside the team's workspace \
(paths are relative to it). send_message and broadcast reach teammates' inboxes; messages \
to you arrive as <message> blocks. list_tasks, claim_task and complete_task use the shared \
task board: claim before you start, complete when done, with a one-line result. compact \
summarises your conversation when it grows long (pass a focus to keep what matters). \
Call idle, or simply end your turn, when you have nothing left to do."""


def who(agent: AgentConfig, team: TeamConfig) -> str:
    return f"You are '{agent.name}', role: {agent.role}, team: {team.team.name}."


def teammates_line(agent: AgentConfig, team: TeamConfig) -> str:
    mates = [f"{a.name} ({a.role})" for a in team.agents if a.name != agent.name]
    return "Teammates: " + (", ".join(mates) if mates else "none")


def system_prompt(agent: AgentConfig, team: TeamConfig) -> str:
    """Stable for the whole run (so the provider can cache it): nothing here changes."""
    parts = [who(agent, team), teammates_line(agent, team) + ".", TOOL_GUIDE]
    if agent.prompt.strip():
        parts.append(agent.prompt.strip())
    return "\n\n".join(parts)


def identity_block(agent: AgentConfig, team: TeamConfig, open_tasks: Iterable) -> str:
    """The block that begins every new context after a compaction (docs/design.md, "Compaction")."""
    tasks = "; ".join(f"#{t.id} {t.subject}" for t in open_tasks) or "none"
    return (
        f"<identity>{who(agent, team)} {teammates_line(agent, team)}. "
        f"Open tasks: {tasks}</identity>"
    )
