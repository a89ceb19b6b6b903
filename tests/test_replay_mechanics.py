"""What makes a long replay fast must not change what it computes.

Each shortcut of the per-call path (issue 26, "Speed") is checked against the plain
computation it stands for, on the inputs where a shortcut goes wrong: a request that
changes an earlier message, a stale memo after a failure, a line break where a token
scan would otherwise look back.
"""

from __future__ import annotations

import random
from itertools import accumulate

import pytest

from team.compaction.clip import Clipper, clip_messages
from team.compaction.micro import CallCost, MicroCompactor
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
from team.core.prefix import RunningTotals
from team.llm.base import chars_to_tokens
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


def walk_candidates(messages: list[Message], cfg: CompactionConfig) -> list[ToolResultBlock]:
    """The rule read off the whole segment: results the model has answered after, not
    among the `keep_recent` newest, not of a preserved tool, not small."""
    answered = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    results = [
        (i, b)
        for i, m in enumerate(messages)
        if m.role == "user"
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    if cfg.keep_recent:
        results = results[: -cfg.keep_recent]
    return [
        b
        for i, b in results
        if i < answered and b.name not in cfg.preserve_tools and b.chars() > cfg.min_chars
    ]


def walk_next_clear(messages: list[Message], cfg: CompactionConfig, cleared: frozenset[str]):
    for i, m in enumerate(messages):
        for j, b in enumerate(m.content):
            if (
                m.role == "user"
                and isinstance(b, ToolResultBlock)
                and b.tool_use_id not in cleared
                and b.name not in cfg.preserve_tools
                and b.chars() > cfg.min_chars
            ):
                return i, j
    return None


def walk_view(messages: list[Message], cleared: frozenset[str]) -> list[Message]:
    return [
        Message(
            m.role,
            tuple(
                ToolResultBlock(b.tool_use_id, f"[Previous: used {b.name}]", b.name, b.is_error)
                if isinstance(b, ToolResultBlock) and b.tool_use_id in cleared
                else b
                for b in m.content
            ),
        )
        for m in messages
    ]


def mixed_turn(k: int) -> list[Message]:
    """A turn of three results: one micro may clear, one preserved, one too small."""
    uses = [ToolUseBlock(f"{x}{k}", tool, {}) for x, tool in (("b", "bash"), ("r", "read_file"))]
    uses.append(ToolUseBlock(f"s{k}", "grep", {}))
    return [
        Message("assistant", (TextBlock(f"step {k}"), *uses)),
        Message(
            "user",
            (
                ToolResultBlock(f"b{k}", "b" * (200 + k), "bash"),
                ToolResultBlock(f"r{k}", "r" * 400, "read_file"),
                ToolResultBlock(f"s{k}", "tiny", "grep"),
            ),
        ),
    ]


def test_micro_read_incrementally_decides_as_the_walk_of_the_whole_segment() -> None:
    cfg = CompactionConfig.model_validate({"micro_policy": "eager", "threshold": 1})
    assert cfg.keep_recent == 3 and cfg.preserve_tools == ["read_file"]
    micro = MicroCompactor(cfg)

    def step(convo: list[Message]) -> None:
        before = micro.cleared
        want_new = [b for b in walk_candidates(convo, cfg) if b.tool_use_id not in before]
        call = CallCost(context_tokens=10_000, sent_messages=max(0, len(convo) - 2))
        out = micro.view(convo, call)
        assert micro.candidates(convo) == walk_candidates(convo, cfg)
        assert micro.cleared - before == {b.tool_use_id for b in want_new}
        assert out.newly_cleared == len(want_new)
        assert out.view == walk_view(convo, micro.cleared)
        assert micro.current(convo) == out.view
        assert micro.next_clear(convo) == walk_next_clear(convo, cfg, micro.cleared)
        if want_new:  # what the clear makes the provider write again, summed plainly
            i, j = out.oldest_cleared
            end = min(call.sent_messages, len(convo))
            chars = sum(b.chars() for b in convo[i].content[j:]) if i < end else 0
            chars += sum(m.chars() for m in convo[i + 1 : end])
            cleared_tokens = sum(chars_to_tokens(b.chars()) for b in want_new)
            assert out.rewrite_tokens == max(0, chars_to_tokens(chars) - cleared_tokens)

    convo = [Message.user("start")]
    for k in range(8):
        convo = convo + mixed_turn(k)
        step(convo)
        step(convo)  # asked twice with nothing new: nothing more is cleared
    assert micro.cleared == {f"b{k}" for k in range(7)}  # the newest three results kept
    # an earlier message changes (the list edited in place): a preserved result becomes
    # a bash one micro may clear, a cleared one is replaced by a result not yet seen
    convo[4] = Message("user", (ToolResultBlock("r1", "x" * 500, "bash"),))
    convo[2] = Message("user", (ToolResultBlock("n0", "y" * 500, "bash"),))
    step(convo)
    assert {"r1", "n0"} <= micro.cleared
    # the same length again, one message swapped for an equal-looking but new one
    convo = [*convo[:6], Message("user", (ToolResultBlock("z2", "z" * 300, "bash"),)), *convo[7:]]
    step(convo)
    # a compaction: a new segment that starts from a summary and the newest turns
    micro.reset()
    convo = [Message.user("summary"), *convo[-4:]]
    step(convo)
    for k in range(8, 12):
        convo = convo + mixed_turn(k)
        step(convo)
    assert "b10" in micro.cleared and "b11" not in micro.cleared and "r10" not in micro.cleared


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


def test_a_piece_with_the_same_text_but_other_tokens_is_counted_anew() -> None:
    cache = PromptCache(min_tokens=1)
    a, b = Piece("system", 1000), Piece("result", 1000)
    assert cache.charge([a, b], [1]).cache_write_tokens == 2000
    # the same texts re-tokenised (a replay's ratio changed): the totals follow the tokens
    charge = cache.charge([Piece("system", 1500), Piece("result", 500)], [1])
    assert charge == CacheCharge(input_tokens=0, cache_read_tokens=2000, cache_write_tokens=0)
    charge = cache.charge([Piece("system", 1500), Piece("result", 900)], [1])
    assert charge.cache_read_tokens + charge.cache_write_tokens == 2400


@pytest.mark.parametrize("seed", range(5))
def test_running_totals_and_the_clip_follow_any_edit_of_the_history(seed: int) -> None:
    """Requests that grow, are cut back, have an earlier message swapped or a giant block
    added: the reused totals and clipped views are what counting everything gives."""
    rng = random.Random(seed)
    totals, clip = RunningTotals(Message.chars), Clipper(limit=2_000)
    history: list[Message] = []
    for step in range(200):
        move = rng.random()
        if move < 0.6 or not history:
            size = 5_000 if rng.random() < 0.1 else rng.randint(1, 500)
            history.append(Message.user(f"m{step} " + "x" * size))
        elif move < 0.8:
            history = history[: rng.randrange(len(history))]
        else:
            history[rng.randrange(len(history))] = Message.user(f"swapped {step}")
        view = list(history)
        assert totals(view) == list(accumulate(m.chars() for m in view))
        assert totals.total(view) == sum(m.chars() for m in view)
        assert clip(view) == clip_messages(view, limit=2_000)
