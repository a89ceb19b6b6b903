"""What makes a long replay fast must not change what it computes.

Each shortcut of the per-call path (issue 26, "Speed") is checked against the plain
computation it stands for, on the inputs where a shortcut goes wrong: a request that
changes an earlier message, a stale memo after a failure, a line break where a token
scan would otherwise look back.
"""

from __future__ import annotations

import pytest

from team.compaction.micro import MicroCompactor
from team.core import facts
from team.core.conversation import (
    InvalidConversation,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Validator,
    problems,
    validate,
)
from team.llm.sim_cache import CacheCharge, Piece, PromptCache
from team.workspace.config import CompactionConfig


def turn(k: int, result: str = "x" * 300) -> list[Message]:
    use = ToolUseBlock(f"t{k}", "read_file", {"path": f"f{k}.py"})
    return [
        Message("assistant", (TextBlock(f"step {k}"), use)),
        Message("user", (ToolResultBlock(f"t{k}", result, "bash"),)),
    ]


def conversation(n: int) -> list[Message]:
    out = [Message.user("start")]
    for k in range(n):
        out += turn(k)
    return out


def test_a_growing_conversation_is_checked_as_validate_checks_it() -> None:
    v = Validator()
    convo = conversation(0)
    for k in range(30):
        v.validate(convo)
        convo = convo + turn(k)
    v.validate(convo)
    assert problems(convo) == []


def test_a_reused_tool_id_in_the_new_tail_is_caught() -> None:
    v = Validator()
    convo = conversation(5)
    v.validate(convo)
    bad = convo + turn(2)  # t2 is an id of the part already checked
    with pytest.raises(InvalidConversation) as got:
        v.validate(bad)
    with pytest.raises(InvalidConversation) as plain:
        validate(bad)
    assert str(got.value) == str(plain.value)
    assert "tool_use ids must be unique (t2)" in str(got.value)


def test_a_changed_earlier_message_is_checked_whole() -> None:
    v = Validator()
    convo = conversation(5)
    v.validate(convo)
    changed = list(convo)
    changed[1] = Message("assistant", (TextBlock("   "),))  # whitespace, and t0 unanswered
    changed += turn(9)
    with pytest.raises(InvalidConversation) as got:
        v.validate(changed)
    assert str(got.value) == "; ".join(problems(changed))


def test_after_a_refused_request_the_next_is_checked_from_the_start() -> None:
    v = Validator()
    good = conversation(3)
    v.validate(good)
    with pytest.raises(InvalidConversation):
        v.validate([*good, Message("assistant", (TextBlock("no user turn after me"),))])
    # the same prefix again, with a defect in it that a resumed check would skip
    broken = list(good)
    broken[2] = Message("user", (ToolResultBlock("t9", "?", "bash"),))
    with pytest.raises(InvalidConversation, match="unexpected tool_use_id t9"):
        v.validate(broken + turn(7))


def test_a_changed_piece_is_hashed_again_not_taken_from_the_last_request() -> None:
    cache = PromptCache(min_tokens=1)
    a, b, c = Piece("system", 1000), Piece("read a.py", 1000), Piece("result", 1000)
    assert cache.charge([a, b, c], [0, 2]).cache_write_tokens == 3000
    # same length, one character apart: only the system prompt may be read back
    changed = Piece("read b.py", 1000)
    assert cache.charge([a, changed, c], [0, 2]) == CacheCharge(
        input_tokens=0, cache_read_tokens=1000, cache_write_tokens=2000
    )
    # and the first request's prefix is still there to read, whole
    assert cache.charge([a, b, c], [0, 2]).cache_read_tokens == 3000


def test_micro_views_are_the_same_objects_while_nothing_new_is_cleared() -> None:
    micro = MicroCompactor(
        CompactionConfig.model_validate({"keep_recent": 1, "micro_policy": "eager", "threshold": 1})
    )
    convo = conversation(4)
    first = micro.view(convo).view
    again = micro.view(convo).view
    assert [m.chars() for m in first] == [m.chars() for m in again]
    assert all(x is y for x, y in zip(first, again, strict=True))
    cleared = [b for m in first for b in m.content if isinstance(b, ToolResultBlock)]
    assert [b.content for b in cleared][:3] == ["[Previous: used bash]"] * 3
    # one more turn clears one more result: that message's view is new, the rest kept
    grown = micro.view(convo + turn(4)).view
    assert grown[8].content[0].content == "[Previous: used bash]" != first[8].content[0].content
    assert grown[2] is first[2] and grown[6] is first[6]
    micro.reset()  # a new segment forgets its views
    assert micro.view(convo).view[2] is not first[2]


@pytest.mark.parametrize(
    "text",
    [
        "<\nsrc/a.py",  # a tag mark on the line before is not this token's
        "plain words\r\nlib/util.py:12\u2028and team.toml\x85end",
        "no paths here\nat all\n",
        "a" * 5000 + "\n" + "b/" * 3000 + "\nok/c.py",
        '{"file_path": "C:\\\\Users\\\\me\\\\x.py"}\n</status>',
    ],
)
def test_paths_are_found_as_a_whole_text_token_scan_finds_them(text: str) -> None:
    import re

    # the scan before lines were skipped: every token of the whole text
    token = re.compile(r"""[^\s"'`()\[\]{}<>,;|*?!&]+""")
    expected = []
    for m in token.finditer(text):
        start, end = m.span()
        t = m.group()
        if end - start > facts.MAX_PATH or not any(c in t for c in "/.\\"):
            continue
        if start and text[start - 1] == "<":
            continue
        expected += list(facts._token_paths(t))
    assert list(facts.iter_paths(text)) == expected
