"""How much of a request the last one already was: the one comparison the per-call
shortcuts share (the replay's pieces, the simulated cache's digests, the view's clip).

A call re-sends its whole history, so each of them keeps what it worked out for the last
request and redoes only what comes after the part both begin with alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many items `a` and `b` begin with alike.

    A bisection of list comparisons, which run in C and compare by identity first: an
    unchanged history is the same objects, so the usual case is one comparison.
    """
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # a[:lo] == b[:lo], and a[:hi + 1] != b[:hi + 1] (once hi moved)
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class RunningTotals:
    """The running totals of `key` over a sequence that is mostly the last one sent plus a
    tail: only the items after the part both begin with alike are counted again."""

    def __init__(self, key: Callable[[Any], int]) -> None:
        self._key = key
        self._items: list[Any] = []
        self._totals: list[int] = []

    def __call__(self, items: Sequence[Any]) -> list[int]:
        """`list(accumulate(map(key, items)))`, with the shared part reused."""
        same = common_prefix(items, self._items)
        totals = self._totals[:same]
        totals += accumulate(map(self._key, items[same:]), initial=totals[-1] if totals else 0)
        del totals[same]  # the initial total the accumulation began with
        self._items, self._totals = list(items), totals
        return totals

    def total(self, items: Sequence[Any]) -> int:
        totals = self(items)
        return totals[-1] if totals else 0
