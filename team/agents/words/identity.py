"""Who an agent is: its facts, and the prose written from them for the model.

The system prompt and the identity block re-injected after a compaction are both
rendered here from one `AgentFacts`, and the same facts travel with every request
(`ModelRequest.facts`), so a model that is code never parses this wording back: change
`WORDING` and nothing else needs to know (docs/design.md, "What the model sees").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from team.core.conversation import InboxMail
from team.llm.base import AgentFacts
from team.workspace.config import AgentConfig, TeamConfig

TOOL_GUIDE = """\
Your tools: bash, read_file, write_file and edit_file work inside the team's workspace \
(paths are relative to it). send_message and broadcast reach teammates' inboxes; messages \
to you arrive as <message> blocks. list_tasks, claim_task and complete_task use the shared \
task board: claim before you start, complete when done, with a one-line result. compact \
summarises your conversation when it grows long (pass a focus to keep what matters). \
Call idle, or simply end your turn, when you have nothing left to do."""


@dataclass(frozen=True)
class Wording:
    """The templates of the identity prose: the one place its wording lives."""

    who: str = "You are '{name}', role: {role}, team: {team}."
    mate: str = "{name} ({role})"
    teammates: str = "Teammates: {mates}"
    task: str = "#{id} {subject}"
    block: str = "<identity>{who} {teammates}. Open tasks: {tasks}</identity>"
    none: str = "none"


WORDING = Wording()


def agent_facts(
    agent: AgentConfig,
    team: TeamConfig,
    open_tasks: Iterable = (),
    new_mail: Iterable[InboxMail] = (),
) -> AgentFacts:
    """The facts of `agent`; `open_tasks` are board tasks (anything with id and subject)."""
    return AgentFacts(
        name=agent.name,
        role=agent.role,
        team=team.team.name,
        teammates=tuple((a.name, a.role) for a in team.agents if a.name != agent.name),
        tasks=tuple((t.id, t.subject) for t in open_tasks),
        new_mail=tuple(new_mail),
    )


def who(facts: AgentFacts) -> str:
    return WORDING.who.format(name=facts.name, role=facts.role, team=facts.team)


def teammates_line(facts: AgentFacts) -> str:
    mates = [WORDING.mate.format(name=n, role=r) for n, r in facts.teammates]
    return WORDING.teammates.format(mates=", ".join(mates) if mates else WORDING.none)


def system_prompt(facts: AgentFacts, prompt: str = "") -> str:
    """Stable for the whole run (so the provider can cache it): nothing here changes.

    Args:
        facts: the agent's identity (its tasks are not part of the system prompt).
        prompt: the agent's own instructions from team.toml.
    """
    parts = [who(facts), teammates_line(facts) + ".", TOOL_GUIDE]
    if prompt.strip():
        parts.append(prompt.strip())
    return "\n\n".join(parts)


def identity_block(facts: AgentFacts) -> str:
    """The block that begins every new context after a compaction (docs/design.md, "Compaction")."""
    tasks = "; ".join(WORDING.task.format(id=t, subject=s) for t, s in facts.tasks)
    return WORDING.block.format(
        who=who(facts), teammates=teammates_line(facts), tasks=tasks or WORDING.none
    )
