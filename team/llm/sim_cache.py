"""A simulated Anthropic prompt cache, so offline runs report realistic cache usage.

The rules follow the Messages API's documented behaviour:

- a cache entry is the exact prefix (tools, system, messages, in that order) up to a
  breakpoint (`cache_control`); at most 4 breakpoints per request, more is a 400;
- a request reads the longest prefix that matches an entry written earlier, looking back
  a bounded number of blocks before each breakpoint;
- tokens from the end of what was read up to the last breakpoint are written, and every
  breakpoint's prefix becomes an entry; the rest of the request is plain input;
- prefixes shorter than a minimum (per model, see `team.llm.prices`) are not cached;
- an entry lives for its TTL (5 minutes, or 1 hour) from its last use (read or write),
  so calls further apart than that find the cache cold.

The API's cache is best-effort and may evict sooner; this one also holds at most
`MAX_ENTRIES` per agent, dropping the least recently used. A call can only read a
prefix of its own conversation within the lookback of a breakpoint, so what a cap of
a few hundred calls' entries drops was dead already (prefixes a compaction replaced);
without it a zero-latency run would hold five minutes of them, tens of thousands.

A piece is whatever the caller chooses as one cacheable unit. `SimModel` uses blocks, as
the API does: one per tool, the system prompt, then one per content block of each
message, so the lookback counts what the API counts.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from team.core.prefix import RunningTotals, common_prefix
from team.llm.prices import SIM_MODEL, TTL_SECONDS, billed_input, min_cache_tokens

MIN_TOKENS = min_cache_tokens(SIM_MODEL)
MAX_BREAKPOINTS = 4
LOOKBACK = 20
MAX_ENTRIES = 1024
"""Entries one agent's cache holds (each call writes at most `MAX_BREAKPOINTS`)."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One cacheable unit of a prompt: its serialised text and its token count."""

    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class CacheCharge:
    """How one request's input tokens split between plain input, cache writes and reads."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def billed_input(self) -> float:
        return billed_input(self)


class PromptCache:
    """The prompt cache of one agent. Thread-safe.

    Args:
        min_tokens: prefixes shorter than this are never cached.
        ttl: seconds an entry lives after its last use.
        lookback: how many pieces before a breakpoint are checked for an earlier entry
            (the API checks about 20 blocks; a hit further back is missed, as there).
        clock: seconds, monotonic; injectable so tests can expire entries without waiting.
        max_entries: past this many live entries the least recently used goes first.
    """

    def __init__(
        self,
        *,
        min_tokens: int = MIN_TOKENS,
        ttl: float = TTL_SECONDS["5m"],
        lookback: int = LOOKBACK,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        self.min_tokens = min_tokens
        self.ttl = ttl
        self.lookback = lookback
        self.max_entries = max_entries
        self._clock = clock
        self._count = 0
        # digest -> last used, one ordered dict per TTL, oldest use first: expiring pops
        # from the front and stops at the first live entry, so a call pays for what
        # expired, not for every entry alive (a zero-latency run holds 5 minutes of them)
        self._entries: dict[float, OrderedDict[bytes, float]] = {}
        # the last request's pieces, running digests and token totals: the next request
        # of a conversation repeats all but its tail, which is all that is hashed again
        self._parts: list[Piece] = []
        self._digests: list[bytes] = []
        self._ends = RunningTotals(attrgetter("tokens"))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return self._count

    def charge(
        self,
        pieces: Sequence[Piece | tuple[str, int]],
        breakpoints: Iterable[int],
        *,
        ttl: float | None = None,
    ) -> CacheCharge:
        """Account one request against the cache, and update the cache as the API would.

        Args:
            pieces: the prompt in order, as `Piece`s or `(text, tokens)` pairs.
            breakpoints: indexes into `pieces`; each ends a prefix to cache.
            ttl: seconds the entries this request reads or writes live (default: the
                cache's own).

        Returns:
            The split of the request's input tokens.

        Raises:
            ValueError: more than 4 breakpoints, or one outside `pieces`.
        """
        parts = _as_pieces(pieces)
        marks = sorted(set(breakpoints))
        if len(marks) > MAX_BREAKPOINTS:
            raise ValueError(
                f"a maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided "
                f"(found {len(marks)})"
            )
        if marks and (marks[0] < 0 or marks[-1] >= len(parts)):
            raise ValueError(f"cache breakpoint out of range: {marks} for {len(parts)} pieces")

        with self._lock:
            digests, ends = self._prefixes(parts)
        total = ends[-1] if ends else 0
        if not marks:
            return CacheCharge(input_tokens=total)

        life = self.ttl if ttl is None else ttl
        with self._lock:
            now = self._clock()
            self._expire(now)
            read, read_life = self._longest_hit(digests, marks)
            read_tokens = ends[read] if read is not None else 0
            if read is not None:  # a read refreshes the entry, for at least its own TTL
                self._put(digests[read], now, max(life, read_life))
            last = marks[-1]
            written = 0
            if ends[last] >= self.min_tokens and ends[last] > read_tokens:
                written = ends[last] - read_tokens
                for m in marks:
                    if ends[m] >= self.min_tokens and m != read:
                        self._put(digests[m], now, life)
        return CacheCharge(
            input_tokens=total - read_tokens - written,
            cache_read_tokens=read_tokens,
            cache_write_tokens=written,
        )

    def tokens(self, pieces: Sequence[Piece | tuple[str, int]]) -> int:
        """The request's input tokens, read from the cache or not: what a context window
        limits. Nothing is read or written (the running totals are kept for `charge`)."""
        with self._lock:
            return self._ends.total(_as_pieces(pieces))

    def _longest_hit(self, digests: list[bytes], marks: list[int]) -> tuple[int | None, float]:
        """The last piece of the longest cached prefix the breakpoints can reach, and the
        TTL of its entry."""
        for mark in reversed(marks):
            for pos in range(mark, max(-1, mark - self.lookback - 1), -1):
                for life, bucket in self._entries.items():
                    if digests[pos] in bucket:
                        return pos, life
        return None, 0.0

    def _put(self, digest: bytes, now: float, life: float) -> None:
        """Write or refresh an entry: it moves to the back of its TTL's line."""
        for bucket in self._entries.values():
            if bucket.pop(digest, None) is not None:
                self._count -= 1
        self._entries.setdefault(life, OrderedDict())[digest] = now
        self._count += 1
        while self._count > self.max_entries:
            # the least recently used is at the front of one of the lines
            lines = [b for b in self._entries.values() if b]
            min(lines, key=lambda b: next(iter(b.values()))).popitem(last=False)
            self._count -= 1

    def _expire(self, now: float) -> None:
        for life, bucket in self._entries.items():
            while bucket:
                digest, used = next(iter(bucket.items()))
                if now - used <= life:
                    break  # every entry behind it was used later
                del bucket[digest]
                self._count -= 1

    def _prefixes(self, parts: list[Piece]) -> tuple[list[bytes], list[int]]:
        """A running digest and running token total for every prefix, one per piece.

        Chaining digests makes each one name the exact prefix, so a change anywhere
        earlier changes every digest after it, as a byte-exact prefix match would. The
        pieces the last request began with are not hashed or summed again (equal pieces:
        the same objects for an unchanged message, else the same text and tokens).
        """
        same = common_prefix(parts, self._parts)
        digests = self._digests[:same]
        h = digests[-1] if digests else b""
        for p in parts[same:]:
            h = hashlib.blake2b(h + p.text.encode("utf-8"), digest_size=16).digest()
            digests.append(h)
        self._parts, self._digests = parts, digests
        return digests, self._ends(parts)


def _as_pieces(pieces: Sequence[Piece | tuple[str, int]]) -> list[Piece]:
    parts = list(pieces)
    if set(map(type, parts)) - {Piece}:  # (text, tokens) pairs too, for callers' ease
        parts = [p if isinstance(p, Piece) else Piece(*p) for p in parts]
    return parts
