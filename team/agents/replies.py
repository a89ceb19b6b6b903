"""Answering one reply's tool calls: the loop's own tools here, the rest by the toolbox."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from team.agents.intake import Intake
from team.agents.state import AgentState
from team.agents.tools.input import ToolResult
from team.agents.words import nudges
from team.core.conversation import Block, InboxMail, TextBlock, ToolResultBlock, ToolUseBlock


class Tools(Protocol):
    """Runs the tools the loop does not handle itself (`team.agents.tools.toolbox.Toolbox`)."""

    def run(self, name: str, input: dict[str, Any]) -> ToolResult: ...


@dataclass
class Answers:
    """The user turn that answers a reply, and what the loop must do after recording it."""

    results: list[Block] = field(default_factory=list)
    inbox_ids: list[str] = field(default_factory=list)  # mail that `read_inbox` handed over
    mail: list[InboxMail] = field(default_factory=list)  # that mail, as data (the facts)
    idled: bool = False  # `idle` was called: the turn ends
    compact: bool = False  # `compact` was called: compact once the answers are recorded
    focus: str | None = None


def answer(
    uses: list[ToolUseBlock],
    *,
    cut: str | None,
    intake: Intake,
    toolbox: Tools,
    status: AgentState,
) -> Answers:
    """Run every call of a reply in order. `cut` is the id of a call that the max_tokens
    limit cut off: it is answered with an error, never run, and the model asked to go on."""
    out = Answers()
    for use in uses:
        if use.id == cut:
            out.results.append(ToolResultBlock(use.id, nudges.CUT_CALL, use.name, is_error=True))
        elif use.name == "compact":
            out.compact = True
            out.focus = str(use.input.get("focus") or "") or None
            out.results.append(ToolResultBlock(use.id, nudges.COMPACTING, use.name))
        elif use.name == "read_inbox":
            messages = intake.receive()
            out.inbox_ids += [m.id for m in messages]
            mail = tuple(m.as_mail() for m in messages)
            out.mail += mail
            text = "\n\n".join(m.render() for m in mail) or nudges.NO_MESSAGES
            out.results.append(ToolResultBlock(use.id, text, use.name, mail=mail))
        elif use.name == "idle":
            out.idled = True
            out.results.append(ToolResultBlock(use.id, nudges.GOING_IDLE, use.name))
        else:
            status.current = gist(use)
            try:
                r = toolbox.run(use.name, use.input)
            finally:
                status.current = None
            out.results.append(
                ToolResultBlock(
                    use.id, r.content, use.name, r.is_error, tasks=r.tasks, images=r.images
                )
            )
    if cut:
        out.results.append(TextBlock(nudges.CONTINUE))
    return out


def gist(use: ToolUseBlock, limit: int = 60) -> str:
    """`bash: make test`: the tool and its main input, for `team status`."""
    value = next((v for v in use.input.values() if isinstance(v, str | int)), "")
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{use.name}: {text}" if text else use.name
