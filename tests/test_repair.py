"""A session log with an unreadable middle record still resumes into a valid conversation."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from team.agents.session.log import SessionLog
from team.agents.session.repair import LOST_RESULT, repair
from team.compaction.records import AssistantTurn, UserTurn
from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock, problems
from team.llm.base import Usage


def write_log(path, turns: int, calls_per_turn: list[int]) -> None:
    """A realistic log: user text, then assistant turns with calls answered by results."""
    log = SessionLog(path, fsync=False)
    log.append(UserTurn((TextBlock("Task #1: review src/app.py"),), ("m1",)))
    n = 0
    for t in range(turns):
        k = calls_per_turn[t % len(calls_per_turn)]
        uses = [
            ToolUseBlock(f"toolu_{n + i}", "bash", {"command": f"ls {n + i}"}) for i in range(k)
        ]
        n += k
        message = Message("assistant", (TextBlock(f"step {t}"), *uses))
        log.append(AssistantTurn(message, Usage(10, 5)))
        if uses:
            log.append(UserTurn(tuple(ToolResultBlock(u.id, f"out {u.id}", "bash") for u in uses)))
        else:
            log.append(UserTurn((TextBlock(f"mail {t}: keep going"),), (f"m{t + 2}",)))
    log.close()


def texts(messages: list[Message]) -> str:
    return json.dumps([m.to_dict() for m in messages])


def resumable(messages: list[Message]) -> list[str]:
    """What the API would reject, once resume has added a user turn if one is due."""
    probe = list(messages)
    if probe and probe[-1].role == "assistant":
        pending = [u for u in probe[-1].tool_uses()]
        probe.append(
            Message("user", tuple(ToolResultBlock(u.id, "x", u.name) for u in pending))
            if pending
            else Message.user("next")
        )
    return problems(probe)


@settings(max_examples=60, deadline=None)
@given(
    turns=st.integers(2, 8),
    calls=st.lists(st.integers(0, 3), min_size=1, max_size=4),
    damaged=st.data(),
)
def test_any_one_lost_middle_record_is_repaired(tmp_path_factory, turns, calls, damaged):
    path = tmp_path_factory.mktemp("s") / "session.jsonl"
    write_log(path, turns, calls)
    lines = path.read_text().splitlines()
    i = damaged.draw(st.integers(1, len(lines) - 2), label="damaged line")
    lines[i] = '{"t": "assistant", "message": {"role": "assis'  # cut short, then more records
    path.write_text("\n".join(lines) + "\n")

    history = SessionLog(path).load()
    fixed, _ = repair(history.messages)

    assert resumable(fixed) == []
    # nothing readable is lost: every other record's text is still in the conversation
    kept = texts(fixed)
    for n, line in enumerate(path.read_text().splitlines()):
        if n == i:
            continue
        rec = json.loads(line)
        for b in rec.get("blocks", []) + rec.get("message", {}).get("content", []):
            probe = b.get("text") or b.get("content") or b.get("input", {}).get("command")
            assert json.dumps(probe)[1:-1] in kept, (n, b)


def test_a_lost_assistant_turn_turns_its_results_into_text():
    msgs = [
        Message.user("go"),
        # the assistant turn with toolu_1 was lost; its result arrives after the user text
        Message("user", (TextBlock("go"), ToolResultBlock("toolu_1", "file list", "bash"))),
    ]
    fixed, fixes = repair(msgs[1:])
    assert problems(fixed) == []
    assert "file list" in fixed[0].text() and fixes


def test_a_lost_result_is_answered_as_interrupted():
    msgs = [
        Message.user("go"),
        Message.assistant(ToolUseBlock("toolu_1", "bash", {"command": "make"})),
        # the user turn with its result was lost; the next assistant turn follows at once
        Message.assistant("done"),
        Message.user("thanks"),
    ]
    fixed, _ = repair(msgs)
    assert problems(fixed) == []
    [result] = fixed[2].tool_results()
    assert result.tool_use_id == "toolu_1" and result.content == LOST_RESULT and result.is_error
    assert repair(fixed) == (fixed, [])  # a valid conversation is left as it is
