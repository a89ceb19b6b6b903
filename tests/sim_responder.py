"""A fake-API responder that thinks like `SimModel`, for end-to-end runs through the SDK.

The server hands it raw request JSON; it reads it back into a `ModelRequest` the way the
simulator expects and answers with the simulator's next step. So an end-to-end run through
the real `anthropic` SDK exercises the same tool use, messaging and compaction as a sim run.

The facts never travel over the wire, so given the workspace the responder rebuilds them
as the loop does (the agent is the one whose system prompt this is, its tasks are on the
board, its new mail is in the newest user message); without one the simulator works
without facts.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from team.agents.words.identity import agent_facts, system_prompt
from team.core.conversation import InboxMail, Message, TextBlock
from team.llm.base import AgentFacts, ModelRequest, ToolSpec
from team.llm.sim import SimModel
from team.tasks import TaskBoard
from team.workspace.places import Workspace

_SIM = SimModel()
_LOCK = threading.Lock()
DELAY = {"s": 0.0}  # seconds per answer, so a test can kill a run in the middle


def _system_text(system: Any) -> str:
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system)
    return system or ""


def facts(ws: Workspace, system: str, messages: list[Message]) -> AgentFacts | None:
    """The facts the loop would have sent with this request (None: not an agent's turn)."""
    config = ws.load_config()
    for cfg in config.agents:
        if system_prompt(agent_facts(cfg, config), cfg.prompt) == system:
            mine = [t for t in TaskBoard(ws.tasks_dir).open_for(cfg.name) if t.status != "blocked"]
            last = messages[-1] if messages and messages[-1].role == "user" else None
            mail = (
                [b.mail for b in last.content if isinstance(b, TextBlock) and b.mail]
                if last
                else []
            )
            return agent_facts(cfg, config, mine, mail)
    return None


def respond(body: dict[str, Any], ws: Workspace | None = None) -> dict[str, Any]:
    system = _system_text(body.get("system"))
    messages = [with_mail(Message.from_dict(msg)) for msg in body["messages"]]
    known = facts(ws, system, messages) if ws is not None else None
    m = re.search(r"You are '([a-z][a-z0-9_-]*)'", system)
    tools = [
        ToolSpec(t["name"], t.get("description", ""), t["input_schema"])
        for t in body.get("tools", [])
    ]
    request = ModelRequest(
        system=system,
        messages=messages,
        tools=tools,
        max_tokens=body["max_tokens"],
        tool_choice="none"
        if not tools or body.get("tool_choice", {}).get("type") == "none"
        else "auto",
        # a summary: no tools (chunked), or the agent's tools with tool_choice none (cached)
        purpose="summary"
        if not tools or body.get("tool_choice", {}).get("type") == "none"
        else "agent",
        agent=known.name if known else m.group(1) if m else "",
        facts=known,
    )
    if DELAY["s"]:
        time.sleep(DELAY["s"])
    response = _SIM.complete(request)
    return {
        "content": [b.to_dict() for b in response.content],
        "stop_reason": response.stop_reason,
    }


# A model behind the wire sees text only: what it reads of an inbox message is the
# envelope the agent loop rendered. This test server plays such a model with the
# simulator, which reads mail as data, so it turns each envelope back into its data.
_ENVELOPE = re.compile(
    r'<message from="([^"\n]*)" type="([^"\n]*)" id="([^"\n]*)"'
    r'(?: task="(\d+)")?(?: approved="(yes|no)")?>\n(.*?)\n</message>',
    re.S,
)


def with_mail(message: Message) -> Message:
    """`message` with every text block that is exactly one rendered envelope as a mail
    block (its data as the loop recorded it)."""
    blocks = []
    for b in message.content:
        m = _ENVELOPE.fullmatch(b.text) if isinstance(b, TextBlock) else None
        if m is not None:
            task = int(m[4]) if m[4] else None
            approved = None if m[5] is None else m[5] == "yes"
            b = TextBlock.of_mail(InboxMail(m[1], m[2], m[3], task, m[6], approved))
        blocks.append(b)
    return Message(message.role, tuple(blocks))
