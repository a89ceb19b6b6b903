"""What an agent tells the person in the user inbox when it stops on its own."""

from __future__ import annotations

import logging

from team.agents.intake import Intake
from team.core.events import AgentEvent, EventSink

log = logging.getLogger(__name__)


def budget_spent(name: str, why: str, intake: Intake, sink: EventSink) -> None:
    """The agent's or the team's budget is spent: an event, and a line to the user."""
    sink.emit(AgentEvent(name, "budget", why))
    try:
        intake.tell_user(
            f"{name} stopped taking work: {why}. Raise budget_usd in team.toml "
            "and start the team again to go on."
        )
    except OSError as e:
        log.warning("%s: could not tell the user its budget is spent: %s", name, e)


def refused(name: str, asked: str, intake: Intake, sink: EventSink) -> None:
    """The model refused to answer `asked` (stop_reason refusal): the turn ended there."""
    asked = " ".join(asked.split())[:300]
    sink.emit(AgentEvent(name, "refusal", asked[:200]))
    intake.tell_user(
        f"{name}: the model refused to answer (stop_reason refusal), so I "
        f"stopped this turn. It was answering: {asked or '(nothing)'}. Send me "
        "new instructions to go on."
    )
