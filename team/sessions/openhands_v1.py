"""OpenHands V1 (the software-agent-sdk, and OpenHands/benchmarks output built on it).

Every event names its class in `kind`. An `ActionEvent` is one tool call the model
made: the raw call (`tool_call`: id, name, arguments), the parsed `action` (a dict
with its own `kind`), and `llm_response_id`; parallel calls of one reply share that
id, and only the first carries what the model said (`thought`, a list of text parts,
and `reasoning_content`). An `ObservationEvent` (or `AgentErrorEvent`,
`UserRejectObservation`) answers one `tool_call_id`. A `MessageEvent` is plain text
from the user or, without calls, from the agent. `SystemPromptEvent` holds the
system prompt and the tools; `Condensation` is the SDK's own compaction (its summary
replaces the events it forgets).

The same events come as a trajectory (a JSON array), as evaluation output (one
instance a line: `history`, `instruction`, `metrics`) or as a saved state (`history`
with `stats.usage_to_metrics`). Usage is per call in `token_usages`, by `response_id`,
matched to the reply of the same `llm_response_id`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from team.core.conversation import Block, TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.base import Usage
from team.sessions.blocks import name_results, thinking_text, tool_arguments, tool_name
from team.sessions.model import AgentLog, CompactionMark, ImportReport, Session, Turn
from team.sessions.openhands import FORMAT, token_usages
from team.sessions.source import epoch

CONVERSATION = ("ActionEvent", "ObservationEvent", "MessageEvent")
RESULTS = ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation")
# kinds that are not the conversation the model read: counted, not read
OTHER = (
    "CondensationRequest",
    "PauseEvent",
    "ConversationStateUpdateEvent",
    "ConversationErrorEvent",
    "ConversationIterationLimitEvent",
    "TokenEvent",
    "StreamingDeltaEvent",
    "SecurityAnalyzerEvent",
)
NO_TASK = "(the task this session started from is not in the log)"


class Malformed(Exception):
    """An event of a known kind without what that kind must have: skipped, counted."""


def is_events(doc: Any) -> bool:
    """A list of V1 events: most name their `kind`, and some are the conversation."""
    if not isinstance(doc, list) or not doc:
        return False
    kinds = [e.get("kind") for e in doc if isinstance(e, dict)]
    named = sum(isinstance(k, str) for k in kinds)
    return named * 2 >= len(doc) and any(k in CONVERSATION for k in kinds)


def history(doc: Any) -> list[Any] | None:
    """The V1 events of an instance or a saved state (`history`, or `events`), or None."""
    if not isinstance(doc, dict):
        return None
    for key in ("history", "events"):
        events = doc.get(key)
        if is_events(events):
            return events
    return None


def read_events(path: Path, doc: list[Any], report: ImportReport) -> Session:
    agent, recorded = read_agent("main", doc, {}, report)
    report.kept["agents"] = 1
    report.requests_recorded = recorded
    return Session(str(path), FORMAT, [agent], report)


def read_output(
    path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport
) -> Session:
    agents = []
    recorded: int | None = None
    for n, doc in lines:
        events = history(doc)
        if events is None:
            empty = isinstance(doc, dict) and doc.get("history") == []
            what = "instances with no events" if empty else "lines that are not an instance"
            report.dropped[what] += 1
            continue
        name = str(doc.get("instance_id") or f"instance-{n}")
        agent, calls = read_agent(name, events, doc, report)
        for t in agent.turns:
            t.line = t.line or n
        agents.append(agent)
        if calls is not None:
            recorded = (recorded or 0) + calls
    report.kept["sessions (instances)"] += len(agents)
    report.kept["agents"] = len(agents)
    report.requests_recorded = recorded
    return Session(str(path), FORMAT, agents, report)


def usages(doc: dict[str, Any]) -> dict[str, Usage]:
    """Each call's usage by response id: the instance's `metrics` (a `Metrics.get()`),
    or a state's `stats.usage_to_metrics` (one `Metrics` per LLM: agent, condenser)."""
    out = token_usages(doc.get("metrics"))
    stats = doc.get("stats") if isinstance(doc.get("stats"), dict) else {}
    per_llm = stats.get("usage_to_metrics")
    for metrics in per_llm.values() if isinstance(per_llm, dict) else ():
        out.update(token_usages(metrics))
    return out


def read_agent(
    name: str, events: list[Any], doc: dict[str, Any], report: ImportReport
) -> tuple[AgentLog, int | None]:
    """One agent from its events, and the calls with usage the log records (None if
    it records no usage at all); a condenser's call is its compaction, not a request
    the conversation could keep."""
    calls = usages(doc)
    condensed: set[str] = set()  # the condenser's calls: compactions here, not replies
    agent = AgentLog(name)
    replies: dict[str, Turn] = {}  # response id -> its reply, for parallel calls
    for i, e in enumerate(events, 1):
        if not isinstance(e, dict):
            report.dropped["events that are not objects"] += 1
            continue
        kind = e.get("kind")
        try:
            _event(agent, e, i, replies, calls, condensed, report)
        except (Malformed, TypeError, ValueError, AttributeError, KeyError):
            report.dropped[f"malformed {kind} events (skipped)"] += 1
    _task(agent, doc, report)
    name_results(agent.turns)
    agent.model = _model(doc)
    report.kept["replies"] += len(agent.replies())
    recorded = [rid for rid in calls if rid not in condensed]
    return agent, (len(recorded) if calls else None)


def _event(
    agent: AgentLog,
    e: dict[str, Any],
    i: int,
    replies: dict[str, Turn],
    calls: dict[str, Usage],
    condensed: set[str],
    report: ImportReport,
) -> None:
    kind = e.get("kind")
    when = epoch(e.get("timestamp"))
    if kind == "ActionEvent":
        _action(agent, e, i, when, replies, calls, report)
    elif kind in RESULTS:
        _result(agent, e, i, when, kind)
    elif kind == "MessageEvent":
        _message(agent, e, i, when, calls, report)
    elif kind == "SystemPromptEvent":
        prompt = e.get("system_prompt")
        agent.system += _parts([prompt, e.get("dynamic_context")])
        tools = e.get("tools")
        agent.tools_chars += len(json.dumps(tools)) if isinstance(tools, list) else 0
    elif kind in ("Condensation", "CondensationSummaryEvent"):
        condensed.add(str(e.get("llm_response_id") or ""))
        summary = e.get("summary")
        summary = summary if isinstance(summary, str) else ""
        last = agent.compactions[-1] if agent.compactions else None
        if kind == "CondensationSummaryEvent" and last and last.before == len(agent.turns):
            return  # the summary of the condensation just recorded
        agent.compactions.append(
            CompactionMark(len(agent.turns), "auto", None, len(summary), i, summary)
        )
        report.kept["compactions"] += 1
    elif kind in OTHER:
        report.dropped[f"{kind} events (not the conversation)"] += 1
    else:
        report.dropped[f"events of unknown kind {kind!r} (skipped)"] += 1


def _action(
    agent: AgentLog,
    e: dict[str, Any],
    i: int,
    when: float | None,
    replies: dict[str, Turn],
    calls: dict[str, Usage],
    report: ImportReport,
) -> None:
    raw = e.get("tool_call") if isinstance(e.get("tool_call"), dict) else {}
    call_id = e.get("tool_call_id") or raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise Malformed
    action = e.get("action") if isinstance(e.get("action"), dict) else {}
    args = (
        tool_arguments(raw["arguments"])
        if "arguments" in raw
        else {k: v for k, v in action.items() if k != "kind"}
    )
    name = str(raw.get("name") or e.get("tool_name") or action.get("kind") or "")
    call = ToolUseBlock(call_id, tool_name(name, report.renamed), args)
    rid = str(e.get("llm_response_id") or "")
    if rid and rid in replies:  # a parallel call of a reply already read
        replies[rid].blocks.append(call)
        return
    blocks = [*_said(e, report), call]
    turn = Turn("assistant", blocks, i, when, calls.get(rid), rid)
    agent.turns.append(turn)
    if rid:
        replies[rid] = turn


def _said(e: dict[str, Any], report: ImportReport) -> list[Block]:
    """What the model wrote besides its calls: its reasoning, then its text."""
    out: list[Block] = []
    reasoning = e.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning.strip():
        out.append(TextBlock(thinking_text(reasoning, report.kept) or ""))
    for b in e.get("thinking_blocks") or []:
        if isinstance(b, dict) and isinstance(b.get("thinking"), str):
            text = thinking_text(b["thinking"], report.kept)
            if text:
                out.append(TextBlock(text))
    text = _parts(e.get("thought"))
    if text.strip():
        out.append(TextBlock(text))
    return out


def _result(agent: AgentLog, e: dict[str, Any], i: int, when: float | None, kind: str) -> None:
    call_id = e.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise Malformed
    if kind == "AgentErrorEvent":
        text, error = str(e.get("error") or ""), True
    elif kind == "UserRejectObservation":
        text, error = f"Action rejected: {e.get('rejection_reason') or ''}", True
    else:
        obs = e.get("observation")
        if not isinstance(obs, dict):
            raise Malformed
        text, error = _observed(obs)
        extra = _parts(e.get("extended_content"))
        text = f"{text}\n{extra}" if extra else text
    _user(agent, ToolResultBlock(call_id, text, str(e.get("tool_name") or ""), error), i, when)


def _observed(obs: dict[str, Any]) -> tuple[str, bool]:
    """An observation's text as the model read it (`content` parts in newer SDKs,
    `output` or a finish `message` in older ones) and whether it is an error."""
    error = obs.get("error")
    failed = bool(obs.get("is_error")) or (isinstance(error, str) and bool(error))
    for key in ("content", "output", "message"):
        value = obs.get(key)
        text = value if isinstance(value, str) else _parts(value)
        if text:
            return (f"{text}\n{error}" if failed and isinstance(error, str) else text), failed
    if isinstance(error, str) and error:
        return error, True
    return json.dumps({k: v for k, v in obs.items() if k != "kind"}), failed


def _message(
    agent: AgentLog,
    e: dict[str, Any],
    i: int,
    when: float | None,
    calls: dict[str, Usage],
    report: ImportReport,
) -> None:
    msg = e.get("llm_message")
    if not isinstance(msg, dict):
        raise Malformed
    text = _parts([*(_list(msg.get("content"))), *_list(e.get("extended_content"))])
    side = e.get("source") or ("agent" if msg.get("role") == "assistant" else "user")
    if side != "agent":
        if not text.strip():
            report.dropped["empty user messages"] += 1
            return
        _user(agent, TextBlock(text), i, when)
        return
    blocks = _said({**msg, "thought": None}, report)
    if text.strip():
        blocks.append(TextBlock(text))
    if not blocks:
        report.dropped["agent messages with nothing said"] += 1
        return
    rid = str(e.get("llm_response_id") or "")
    agent.turns.append(Turn("assistant", blocks, i, when, calls.get(rid), rid))


def _user(agent: AgentLog, block: Block, line: int, when: float | None) -> None:
    last = agent.turns[-1] if agent.turns else None
    if last is not None and last.role == "user":
        # results before text, as the API wants them
        at = sum(isinstance(b, ToolResultBlock) for b in last.blocks)
        last.blocks.insert(at if isinstance(block, ToolResultBlock) else len(last.blocks), block)
    else:
        agent.turns.append(Turn("user", [block], line, when))


def _task(agent: AgentLog, doc: dict[str, Any], report: ImportReport) -> None:
    """Evaluation output keeps the task in `instruction`, not among the events: without
    a user turn before the first reply, the replay would have nothing to answer."""
    if not agent.turns or agent.turns[0].role == "user":
        return
    task = doc.get("instruction")
    if isinstance(task, str) and task.strip():
        report.kept["tasks from the instance's instruction"] += 1
    else:
        task = NO_TASK
        report.normalised["a task not in the log, given a placeholder"] += 1
    agent.turns.insert(0, Turn("user", [TextBlock(task)], agent.turns[0].line))
    agent.compactions = [
        CompactionMark(c.before + 1, c.trigger, c.pre_tokens, c.summary_chars, c.line, c.summary)
        for c in agent.compactions
    ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value is not None else []


def _parts(value: Any) -> str:
    """Text of a `TextContent`, a list of them, or plain text; images are left out."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value["text"] if isinstance(value.get("text"), str) else ""
    if isinstance(value, list):
        return "\n".join(t for t in map(_parts, value) if t)
    return ""


def _model(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    llm = meta.get("llm") if isinstance(meta.get("llm"), dict) else {}
    return str(llm.get("model") or "")
