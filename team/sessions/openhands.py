"""OpenHands: a trajectory (the event list the UI downloads) and evaluation output.

A trajectory is a JSON array of events. An event is an action (`"action"`: message,
run, read, edit, think, finish, system, recall, ...) or an observation of one
(`"observation"`, with `cause` naming the action). An action the model chose carries
`tool_call_metadata`: the tool call's id and name and the whole `model_response` (its
text, its calls, and, in newer versions, its `usage`); several actions of one response
share its id. The observation of such an action carries the same tool call id: it is
the tool result. The `system` action holds the system prompt; a `recall` observation is
context added to the user's message.

Evaluation output (`output.jsonl`) is one instance per line: `instance_id`, the
`history` (the same events) and `metrics`, whose `token_usages` hold each call's usage
by `response_id`. Each instance is its own session; here each is one agent of the
imported session, named by its instance, and the report counts them.

Older events (the resolver's output) have neither `source` nor tool calls: the model
wrote its action as text and read the observation as the next message. Their side is
inferred (`_side`), each action is read as a call and the observation after it as its
result. OpenHands V1 events (`kind`) are read by `team.sessions.openhands_v1`.

litellm's `prompt_tokens` counts the cached tokens too; they are taken out of the
input here, as the Messages API reports them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from team.core.conversation import Block, TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.base import Usage
from team.sessions.blocks import name_results, tool_arguments, tool_name
from team.sessions.model import AgentLog, ImportReport, Session, Turn
from team.sessions.source import as_int, epoch

FORMAT = "openhands"


def _is_event(e: Any) -> bool:
    return isinstance(e, dict) and ("action" in e or "observation" in e)


def is_events(doc: Any) -> bool:
    """A trajectory: a list of events, most of them actions or observations."""
    return isinstance(doc, list) and bool(doc) and sum(map(_is_event, doc)) * 2 >= len(doc)


def is_output(doc: Any) -> bool:
    """One evaluation-output instance: a `history` of events, with `metrics` or an id."""
    if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
        return False
    events = _flat(doc["history"])
    return ("metrics" in doc or "instance_id" in doc) and (not events or is_events(events))


def read_events(path: Path, doc: list[Any], report: ImportReport) -> Session:
    agent = _agent("main", doc, {}, report)
    report.kept["agents"] = 1
    report.requests_recorded = len(_response_ids(doc))
    return Session(str(path), FORMAT, [agent], report)


def read_output(
    path: Path, lines: list[tuple[int, dict[str, Any]]], report: ImportReport
) -> Session:
    agents = []
    recorded = 0
    for n, doc in lines:
        if not is_output(doc):
            report.dropped["lines that are not an instance"] += 1
            continue
        history = _flat(doc["history"])
        usages = token_usages(doc.get("metrics"))
        recorded += len(usages) or len(_response_ids(history))
        name = str(doc.get("instance_id") or f"instance-{n}")
        agent = _agent(name, history, usages, report)
        for t in agent.turns:
            t.line = t.line or n
        agents.append(agent)
    report.kept["sessions (instances)"] += len(agents)
    report.kept["agents"] = len(agents)
    report.requests_recorded = recorded or None  # None: it records no request at all
    return Session(str(path), FORMAT, agents, report)


def _flat(history: list[Any]) -> list[Any]:
    """Older output keeps `[action, observation]` pairs; newer a flat list."""
    out: list[Any] = []
    for e in history:
        out.extend(e if isinstance(e, list) else [e])
    return out


def token_usages(metrics: Any) -> dict[str, Usage]:
    """Each call's usage in a `metrics` dict, by its `response_id`."""
    if not isinstance(metrics, dict):
        return {}
    out = {}
    for i, u in enumerate(metrics.get("token_usages") or []):
        if isinstance(u, dict):
            out[str(u.get("response_id") or f"#{i}")] = _usage(
                u, as_int(u.get("cache_read_tokens")), as_int(u.get("cache_write_tokens"))
            )
    return out


def _response_ids(events: list[Any]) -> set[str]:
    ids = set()
    for e in events:
        meta = e.get("tool_call_metadata") if isinstance(e, dict) and "action" in e else None
        resp = meta.get("model_response") if isinstance(meta, dict) else None
        if isinstance(resp, dict) and resp.get("id"):
            ids.add(str(resp["id"]))
    return ids


def _usage(u: dict[str, Any], cache_read: int, cache_write: int) -> Usage:
    prompt = as_int(u.get("prompt_tokens"))
    return Usage(
        input_tokens=max(0, prompt - cache_read - cache_write),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        output_tokens=as_int(u.get("completion_tokens")),
    )


def _response_usage(resp: dict[str, Any]) -> Usage | None:
    u = resp.get("usage")
    if not isinstance(u, dict):
        return None
    details = u.get("prompt_tokens_details")
    cached = as_int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    read = as_int(u.get("cache_read_input_tokens")) or cached
    return _usage(u, read, as_int(u.get("cache_creation_input_tokens")))


def _text(e: dict[str, Any]) -> str:
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    for value in (args.get("content"), args.get("thought"), e.get("message"), e.get("content")):
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _agent(
    name: str, events: list[Any], usages: dict[str, Usage], report: ImportReport
) -> AgentLog:
    agent = AgentLog(name)
    open_reply: str | None = None  # the model response id of the last assistant turn
    opened: str | None = None  # a call read from an action of a log before `source`
    for i, e in enumerate(events, 1):
        if not isinstance(e, dict):
            report.dropped["events that are not objects"] += 1
            continue
        when = epoch(e.get("timestamp"))
        meta = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else {}
        if "action" in e:
            kind = e.get("action")
            if kind == "system":
                agent.system += _text(e)
                continue
            side = e.get("source") if "source" in e else _side(e, agent)
            if side != "agent" or kind == "recall":
                text = _text(e) if kind != "recall" else ""
                if text:
                    _user(agent, [TextBlock(text)], i, when)
                else:
                    report.dropped[f"{kind} actions"] += 1
                continue
            if "source" not in e and not meta and kind != "message":
                # before `source` and function calling, the model wrote its action as text
                # and read the observation as the next message: read as a call and result
                thought = e.get("thought") or _text({"args": e.get("args")})
                blocks = [TextBlock(thought)] if isinstance(thought, str) and thought else []
                opened = f"oh-{i}"
                blocks.append(ToolUseBlock(opened, tool_name(str(kind), report.renamed), _args(e)))
                agent.turns.append(Turn("assistant", blocks, i, when))
                open_reply = None
                continue
            resp = (
                meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
            )
            rid = str(resp.get("id") or "")
            blocks: list[Block] = []
            if not (rid and rid == open_reply):
                said = _said(resp) or (_text(e) if not meta else "")
                if said:
                    blocks.append(TextBlock(said))
            if meta.get("tool_call_id"):
                blocks.append(_call(e, meta, resp, report))
            if not blocks:
                report.dropped[f"{kind} actions with nothing said"] += 1
                continue
            if rid and rid == open_reply and agent.turns and agent.turns[-1].role == "assistant":
                agent.turns[-1].blocks.extend(blocks)
                continue
            if rid and rid == open_reply:  # a result came between calls of one response
                prev = next(t for t in reversed(agent.turns) if t.role == "assistant")
                prev.blocks.extend(blocks)
                continue
            usage = usages.get(rid) if rid else None
            if usage is None and resp:
                usage = _response_usage(resp)
            agent.turns.append(Turn("assistant", blocks, i, when, usage, rid))
            open_reply = rid or None
        elif "observation" in e:
            kind = e.get("observation")
            if meta.get("tool_call_id"):
                content = e.get("content")
                text = content if isinstance(content, str) else json.dumps(content)
                _user(agent, [ToolResultBlock(str(meta["tool_call_id"]), text)], i, when)
            elif "source" not in e and opened:
                content = e.get("content")
                text = content if isinstance(content, str) else json.dumps(content)
                _user(agent, [ToolResultBlock(opened, text)], i, when)
                opened = None
            elif kind == "recall" and _text(e):
                _user(agent, [TextBlock(_text(e))], i, when)
            else:
                report.dropped[f"{kind} observations"] += 1
    for t in agent.turns:
        if t.role == "user":
            t.blocks = [b for b in t.blocks if isinstance(b, ToolResultBlock)] + [
                b for b in t.blocks if not isinstance(b, ToolResultBlock)
            ]
    name_results(agent.turns)
    agent.model = next(
        (
            str(e["tool_call_metadata"]["model_response"].get("model") or "")
            for e in events
            if isinstance(e, dict)
            and isinstance(e.get("tool_call_metadata"), dict)
            and isinstance(e["tool_call_metadata"].get("model_response"), dict)
        ),
        "",
    )
    report.kept["replies"] += len(agent.replies())
    return agent


def _side(e: dict[str, Any], agent: AgentLog) -> str:
    """Who took an action, in OpenHands logs from before events had a `source`: the
    agent, but for the message that opens the log, and a message that neither came
    from the model (no `tool_call_metadata`, no `llm_metrics`) nor waits for an answer
    (the agent's own messages do: it asks and waits)."""
    if e.get("action") != "message" or e.get("tool_call_metadata") or e.get("llm_metrics"):
        return "agent"
    args = e.get("args") if isinstance(e.get("args"), dict) else e
    return "agent" if agent.turns and args.get("wait_for_response") is True else "user"


# what an action records besides what the model asked for
_NOT_ARGS = frozenset(
    {
        "action", "thought", "action_risk", "security_risk", "is_confirmed",
        "confirmation_state", "id", "timestamp", "source", "message", "cause", "timeout",
        "hidden", "blocking", "keep_prompt", "kernel_init_code", "wait_for_response",
        "images_urls", "image_urls", "llm_metrics", "tool_call_metadata", "args",
    }
)  # fmt: skip


def _args(e: dict[str, Any]) -> dict[str, Any]:
    fields = {**e, **(e["args"] if isinstance(e.get("args"), dict) else {})}
    return {k: v for k, v in fields.items() if k not in _NOT_ARGS}


def _user(agent: AgentLog, blocks: list[Block], line: int, when: float | None) -> None:
    last = agent.turns[-1] if agent.turns else None
    if last is not None and last.role == "user":
        last.blocks.extend(blocks)
    else:
        agent.turns.append(Turn("user", blocks, line, when))


def _message(resp: dict[str, Any]) -> dict[str, Any]:
    """The model's message in a litellm response, or {} when it is not there."""
    choices = resp.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    msg = first.get("message") if isinstance(first, dict) else None
    return msg if isinstance(msg, dict) else {}


def _said(resp: dict[str, Any]) -> str:
    msg = _message(resp)
    if isinstance(msg.get("content"), str):
        return msg["content"] if msg["content"].strip() else ""
    return ""


def _call(
    e: dict[str, Any], meta: dict[str, Any], resp: dict[str, Any], report: ImportReport
) -> ToolUseBlock:
    call_id = str(meta["tool_call_id"])
    name = str(meta.get("function_name") or e.get("action") or "")
    args: dict[str, Any] | None = None
    calls = _message(resp).get("tool_calls")
    for c in calls if isinstance(calls, list) else []:
        fn = c.get("function") if isinstance(c, dict) and c.get("id") == call_id else None
        if isinstance(fn, dict):
            args = tool_arguments(fn.get("arguments"))
    if args is None:
        raw = e.get("args") if isinstance(e.get("args"), dict) else {}
        args = {k: v for k, v in raw.items() if k != "thought"}
    return ToolUseBlock(call_id, tool_name(name, report.renamed), args)
