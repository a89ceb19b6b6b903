"""What the Messages API would reject in a recorded conversation, made acceptable.

Every agent's log holds some of this as its normal format (Claude Code writes empty text
blocks, a reply split over lines, a call interrupted before its result), so it is fixed
whether or not `--repair` was given (`--repair` is for lines that are not JSON, see
`team.sessions.source`). Each fix is the smallest that keeps what was said, counted in
the report (`normalised`):
- empty text blocks are dropped, and turns left empty;
- two turns of one role in a row are merged into one (results first in a user turn);
- a tool result whose call is not in the reply just before is dropped;
- a call without a result gets one saying no result was recorded;
- replies before the first user turn are dropped;
- a call id used before in the conversation gets a new one, and so does the result
  that answers it (the API takes an id once; SWE-agent's replayed demonstrations
  repeat them).
A log that ends on a reply whose calls have no results yet (a session still running or
cut off) is left alone: a replay stops there anyway.
"""

from __future__ import annotations

from dataclasses import replace

from team.core.conversation import TextBlock, ToolResultBlock, ToolUseBlock
from team.sessions.model import AgentLog, LogError, Session, Turn

NO_RESULT = "(no result was recorded for this call)"


def check(session: Session, *, repair: bool = False) -> None:
    """Make every agent's turns a conversation the API accepts, counting each fix.

    Raises:
        LogError: no agent has a model reply left to replay.
    """
    for agent in session.agents:
        _agent(session, agent, repair)
    session.agents = [a for a in session.agents if a.turns]
    replies = [t for a in session.agents for t in a.replies()]
    # a log that counts its calls but keeps no usage for each (SWE-agent's api_calls):
    # every reply read is one of the requests it counts
    recorded = session.report.requests_recorded or None  # 0: it bills no reply, records none
    session.report.requests_recorded = recorded
    kept = sum(1 for t in replies if t.usage is not None) or (len(replies) if recorded else 0)
    session.report.requests_kept = min(kept, recorded) if recorded is not None else kept
    if not any(a.replies() for a in session.agents):
        raise LogError(session.source, None, "no model replies in this log, nothing to replay")


def _problem(session: Session, agent: AgentLog, turn: Turn, what: str, repair: bool) -> None:
    session.report.normalised[what] += 1


def _agent(session: Session, agent: AgentLog, repair: bool) -> None:
    turns: list[Turn] = []
    position: list[int] = []  # each recorded turn's index in the repaired list
    for t in agent.turns:
        position.append(len(turns))
        empty = [b for b in t.blocks if isinstance(b, TextBlock) and not b.text.strip()]
        if empty:
            _problem(session, agent, t, "empty text blocks dropped", repair)
            t.blocks = [b for b in t.blocks if b not in empty]
        wrong = ToolResultBlock if t.role == "assistant" else ToolUseBlock
        if any(isinstance(b, wrong) for b in t.blocks):  # a call in a user turn, ...
            _problem(session, agent, t, "blocks in the other role's turn dropped", repair)
            t.blocks = [b for b in t.blocks if not isinstance(b, wrong)]
        if not t.blocks:
            if t.role == "assistant" and t.usage is not None and turns:
                continue  # a reply with nothing in it but usage: nothing to replay
            continue
        if not turns and t.role == "assistant":
            _problem(session, agent, t, "replies before the first user turn dropped", repair)
            continue
        if turns and turns[-1].role == t.role:
            _problem(session, agent, t, f"{t.role} turns in a row merged", repair)
            _merge(turns[-1], t)
            continue
        turns.append(t)
    _unique_ids(session, turns)
    for i, t in enumerate(turns):
        if t.role != "user":
            continue
        prev = turns[i - 1] if i else None
        calls = [b.id for b in prev.blocks if isinstance(b, ToolUseBlock)] if prev else []
        answered = []
        kept = []
        for b in t.blocks:
            if isinstance(b, ToolResultBlock):
                if b.tool_use_id not in calls or b.tool_use_id in answered:
                    _problem(session, agent, t, "results without their call dropped", repair)
                    continue
                answered.append(b.tool_use_id)
            kept.append(b)
        missing = [c for c in calls if c not in answered]
        if missing:
            _problem(session, agent, t, "calls without a result given one", repair)
            names = {b.id: b.name for b in prev.blocks if isinstance(b, ToolUseBlock)}
            filled = [ToolResultBlock(c, NO_RESULT, names[c], is_error=True) for c in missing]
            kept = filled + kept
        kept = [b for b in kept if isinstance(b, ToolResultBlock)] + [
            b for b in kept if not isinstance(b, ToolResultBlock)
        ]
        t.blocks = kept or [TextBlock("(empty)")]
    # a reply whose calls are answered by nothing because the log ends: left as is
    agent.turns = turns
    # what happened before a recorded turn now happens before where that turn went
    agent.compactions = [_moved(c, position, len(turns)) for c in agent.compactions]
    agent.micro_clears = [_moved(c, position, len(turns)) for c in agent.micro_clears]


def _moved(mark, position: list[int], end: int):
    return replace(mark, before=position[mark.before] if mark.before < len(position) else end)


def _unique_ids(session: Session, turns: list[Turn]) -> None:
    """Each call id once in the conversation: a repeated one gets a new id, and the
    result after it that names the recorded id is given the new one, in call order."""
    seen: set[str] = set()
    for i, t in enumerate(turns):
        if t.role != "assistant":
            continue
        now: dict[str, list[str]] = {}  # recorded id -> the ids its calls here have now
        blocks = []
        for b in t.blocks:
            if isinstance(b, ToolUseBlock):
                recorded = b.id
                if b.id in seen:
                    b = replace(b, id=_fresh(b.id, seen))
                    session.report.normalised["repeated tool call ids made unique"] += 1
                now.setdefault(recorded, []).append(b.id)
                seen.add(b.id)
            blocks.append(b)
        if all(ids == [old] for old, ids in now.items()):
            continue
        t.blocks = blocks
        answer = turns[i + 1] if i + 1 < len(turns) else None
        if answer is None or answer.role != "user":
            continue
        out = []
        for b in answer.blocks:
            if isinstance(b, ToolResultBlock) and now.get(b.tool_use_id):
                b = replace(b, tool_use_id=now[b.tool_use_id].pop(0))
            out.append(b)
        answer.blocks = out


def _fresh(old: str, seen: set[str]) -> str:
    k = 2
    while f"{old or 'call'}-{k}" in seen:
        k += 1
    return f"{old or 'call'}-{k}"


def _merge(into: Turn, other: Turn) -> None:
    blocks = into.blocks + other.blocks
    if into.role == "user":
        blocks = [b for b in blocks if isinstance(b, ToolResultBlock)] + [
            b for b in blocks if not isinstance(b, ToolResultBlock)
        ]
    into.blocks = blocks
    if other.usage is not None:
        into.usage = other.usage if into.usage is None else into.usage + other.usage
