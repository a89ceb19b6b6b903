"""The one price table: lookups by model id, billed input and dollars."""

from __future__ import annotations

import pytest

from team.llm import prices
from team.llm.base import Usage
from team.llm.prices import billed_input, dollars, min_cache_tokens, prices_for


def test_dated_ids_and_aliases_find_their_row() -> None:
    assert prices_for("claude-sonnet-4-5-20250929") == prices_for("claude-sonnet-4-5")
    assert prices_for("claude-opus-4-20250514").model == "claude-opus-4-0"
    assert prices_for("claude-haiku-4-5").known


def test_minimum_cacheable_prefix_depends_on_the_model() -> None:
    assert min_cache_tokens("claude-sonnet-4-5") == 1024
    assert min_cache_tokens("claude-opus-4-5") == 4096
    assert min_cache_tokens("claude-haiku-4-5-20251001") == 4096
    assert min_cache_tokens("sim") == 1024


def test_unknown_model_falls_back_and_says_so() -> None:
    p = prices_for("claude-future-9")
    assert not p.known
    assert p.model == prices.FALLBACK_MODEL
    assert p.input == prices_for(prices.FALLBACK_MODEL).input


def test_cache_prices_follow_the_documented_multipliers() -> None:
    for p in prices.PRICES.values():
        assert p.cache_write_5m == pytest.approx(1.25 * p.input)
        assert p.cache_write_1h == pytest.approx(2 * p.input)
        assert p.cache_read == pytest.approx(0.1 * p.input)


def test_billed_input_takes_usages_and_event_rows() -> None:
    usage = Usage(input_tokens=100, output_tokens=7, cache_read_tokens=1000, cache_write_tokens=400)
    assert billed_input(usage) == pytest.approx(100 + 1.25 * 400 + 0.1 * 1000)
    assert billed_input(usage, ttl="1h") == pytest.approx(100 + 2 * 400 + 0.1 * 1000)
    row = {"input_tokens": 100, "cache_write_tokens": None, "cache_read_tokens": 1000}
    assert billed_input(row) == pytest.approx(200)


def test_dollars_of_a_million_tokens_each_is_the_sum_of_the_list_prices() -> None:
    m = 1_000_000
    usage = Usage(input_tokens=m, output_tokens=m, cache_read_tokens=m, cache_write_tokens=m)
    assert dollars(usage, "claude-sonnet-4-5") == pytest.approx(3 + 15 + 0.3 + 3.75)
    assert dollars(usage, "claude-opus-4-5", ttl="1h") == pytest.approx(5 + 25 + 0.5 + 10)
    assert dollars(usage, "claude-haiku-4-5") == pytest.approx(1 + 5 + 0.1 + 1.25)
