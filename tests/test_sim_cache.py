"""The simulated prompt cache follows the API's prefix-caching rules."""

from __future__ import annotations

import pytest

from team.core.conversation import Message
from team.llm.base import ModelError, ModelRequest, Usage
from team.llm.sim import SimModel
from team.llm.sim_cache import CacheCharge, Piece, PromptCache, billed_input


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def prompt(n: int, *, tokens: int = 300) -> list[Piece]:
    """Tools (200 tokens), system (900), then n messages of `tokens` each."""
    return [Piece("tools", 200), Piece("system", 900)] + [
        Piece(f"message {i}", tokens) for i in range(n)
    ]


def test_identical_prefix_is_read_back() -> None:
    cache = PromptCache()
    pieces = prompt(6)
    first = cache.charge(pieces, [1, 7])
    assert first == CacheCharge(input_tokens=0, cache_read_tokens=0, cache_write_tokens=2900)
    second = cache.charge(pieces, [1, 7])
    assert second == CacheCharge(input_tokens=0, cache_read_tokens=2900, cache_write_tokens=0)


def test_a_growing_conversation_reads_the_old_prefix_and_writes_the_new_part() -> None:
    cache = PromptCache()
    cache.charge(prompt(4), [1, 5])
    grown = cache.charge(prompt(6), [1, 7])
    assert grown.cache_read_tokens == 1100 + 4 * 300
    assert grown.cache_write_tokens == 2 * 300
    assert grown.input_tokens == 0


def test_tokens_after_the_last_breakpoint_are_plain_input() -> None:
    cache = PromptCache()
    charge = cache.charge(prompt(6), [1, 5])  # messages 4 and 5 are past the breakpoint
    assert charge == CacheCharge(input_tokens=600, cache_read_tokens=0, cache_write_tokens=2300)


def test_a_change_at_message_k_reads_up_to_the_breakpoint_before_it_and_writes_the_rest() -> None:
    cache = PromptCache()
    old = prompt(8)
    cache.charge(old, [1, 4, 9])  # entries end at system, message 2, message 7
    new = old[:5] + [Piece(p.text + " edited", p.tokens) for p in old[5:]]  # message 3 on
    charge = cache.charge(new, [1, 4, 9])
    assert charge.cache_read_tokens == 1100 + 3 * 300  # through message 2
    assert charge.cache_write_tokens == 5 * 300  # messages 3..7
    assert charge.input_tokens == 0


def test_a_change_in_the_system_prompt_misses_everything() -> None:
    cache = PromptCache()
    pieces = prompt(5)
    cache.charge(pieces, [1, 6])
    changed = [pieces[0], Piece("another system", 900), *pieces[2:]]
    charge = cache.charge(changed, [1, 6])
    assert charge.cache_read_tokens == 0
    assert charge.cache_write_tokens == 2600


def test_more_than_four_breakpoints_are_rejected_like_the_api() -> None:
    cache = PromptCache()
    pieces = prompt(8)
    cache.charge(pieces, [1, 3, 5, 9])  # four is fine
    with pytest.raises(ValueError, match="maximum of 4"):
        cache.charge(pieces, [1, 3, 5, 7, 9])
    with pytest.raises(ValueError, match="out of range"):
        cache.charge(pieces, [10])


def test_prefixes_below_the_minimum_are_not_cached() -> None:
    cache = PromptCache()
    small = [Piece("tools", 100), Piece("system", 400), Piece("hello", 300)]  # 800 < 1024
    assert cache.charge(small, [1, 2]) == CacheCharge(input_tokens=800)
    assert cache.charge(small, [1, 2]) == CacheCharge(input_tokens=800)
    assert len(cache) == 0


def test_only_breakpoints_above_the_minimum_become_entries() -> None:
    cache = PromptCache()
    pieces = prompt(3)  # system ends at 1100, messages at 1400, 1700, 2000
    cache.charge(pieces, [1, 4])
    assert len(cache) == 2
    low = PromptCache(min_tokens=1500)
    assert low.charge(pieces, [1, 2]) == CacheCharge(input_tokens=2000)  # 1400 < 1500
    assert low.charge(pieces, [1, 3]).cache_write_tokens == 1700


def test_entries_expire_after_five_minutes_unused_and_reads_refresh_them() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock)
    pieces = prompt(4)
    cache.charge(pieces, [5])
    clock.now += 200
    assert cache.charge(pieces, [5]).cache_read_tokens == 2300  # refreshed at +200
    clock.now += 250  # 450 s after the write, 250 s after the last use
    assert cache.charge(pieces, [5]).cache_read_tokens == 2300
    clock.now += 301
    expired = cache.charge(pieces, [5])
    assert expired.cache_read_tokens == 0
    assert expired.cache_write_tokens == 2300


def test_a_full_cache_drops_the_least_recently_used_entry_and_keeps_what_is_read() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock, max_entries=3)
    old_branch = prompt(6)
    cache.charge(old_branch, [1, 7])  # system + the old branch's end: 2 entries
    for n in range(2, 6):  # a conversation after a compaction replaced the old branch
        clock.now += 1
        fresh = [*old_branch[:2], *(Piece(f"summary then {i}", 300) for i in range(n))]
        charge = cache.charge(fresh, [1, len(fresh) - 1])
        assert charge.cache_read_tokens >= 1100  # the system prefix, used on every call
    assert len(cache) == 3
    clock.now += 1
    assert cache.charge(old_branch, [1, 7]).cache_read_tokens == 1100  # evicted: the system only
    assert cache.charge(fresh, [1, len(fresh) - 1]).cache_read_tokens == 1100 + 5 * 300


def test_no_breakpoints_means_no_caching() -> None:
    cache = PromptCache()
    pieces = prompt(6)
    assert cache.charge(pieces, []) == CacheCharge(input_tokens=2900)
    assert cache.charge(pieces, [7]).cache_read_tokens == 0


def test_hits_further_back_than_the_lookback_are_missed() -> None:
    cache = PromptCache(lookback=20)
    cache.charge(prompt(4), [5])
    near = prompt(20)
    assert cache.charge(near, [21]).cache_read_tokens == 1100 + 4 * 300
    far = PromptCache(lookback=20)
    far.charge(prompt(4), [5])
    assert far.charge(prompt(30), [31]).cache_read_tokens == 0  # entry is 26 pieces back


def test_billed_input_prices_writes_up_and_reads_down() -> None:
    charge = CacheCharge(input_tokens=100, cache_read_tokens=1000, cache_write_tokens=400)
    assert charge.billed_input == pytest.approx(100 + 500 + 100)
    usage = Usage(input_tokens=10, output_tokens=99, cache_read_tokens=100, cache_write_tokens=8)
    assert billed_input(usage) == pytest.approx(10 + 10 + 10)


def _request(agent: str, n: int, **kw: object) -> ModelRequest:
    msgs = []
    for i in range(n):
        msgs.append(Message.user(f"user turn {i}: " + "lorem ipsum " * 150))
        msgs.append(Message.assistant(f"assistant turn {i}"))
    msgs.append(Message.user("go on"))
    return ModelRequest(system="You are 'a', role: r, team: t.", messages=msgs, agent=agent, **kw)


def test_sim_model_keeps_one_cache_per_agent() -> None:
    model = SimModel()
    request = _request("alice", 3, cache_breakpoints=(6,))
    first = model.complete(request)
    again = model.complete(request)
    other = model.complete(_request("bob", 3, cache_breakpoints=(6,)))
    assert first.usage.cache_write_tokens > 1024 and first.usage.cache_read_tokens == 0
    assert again.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert other.usage.cache_read_tokens == 0  # bob's cache is his own
    total = first.usage.input_tokens + first.usage.cache_write_tokens
    assert total == again.usage.input_tokens + again.usage.cache_read_tokens


def test_sim_model_rejects_too_many_breakpoints_as_a_model_error() -> None:
    with pytest.raises(ModelError, match="maximum of 4"):
        SimModel().complete(_request("alice", 3, cache_breakpoints=(0, 2, 4, 6)))


def test_one_hour_entries_outlive_five_minute_ones() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock)
    short, long = prompt(4), [Piece("other tools", 200), *prompt(4)[1:]]
    cache.charge(short, [5])
    cache.charge(long, [5], ttl=3600)
    clock.now += 600  # ten minutes idle: the 5-minute entry is gone, the 1-hour one is not
    assert cache.charge(short, [5]).cache_read_tokens == 0
    assert cache.charge(long, [5], ttl=3600).cache_read_tokens == 2300


def test_sim_model_caches_per_block_with_a_breakpoint_inside_a_message() -> None:
    blocks = [f"part {i}: " + "lorem ipsum " * 200 for i in range(3)]
    first = ModelRequest(
        system="s", messages=[Message.user(*blocks)], cache_breakpoints=((0, 1),), agent="a"
    )
    model = SimModel()
    model.complete(first)
    changed = ModelRequest(
        system="s",
        messages=[Message.user(*blocks[:2], "a different third block")],
        cache_breakpoints=((0, 1),),
        agent="a",
    )
    usage = model.complete(changed).usage
    assert usage.cache_read_tokens > 0 and usage.cache_write_tokens == 0
    assert usage.input_tokens < 20  # only the third block is outside the cached prefix
