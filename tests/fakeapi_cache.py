"""The fake Messages API's prompt cache, per block, as the API documents it.

Written from the prompt-caching docs, independently of `team.llm.sim_cache`, so that the
same hand-made request sequences can be checked against both:

- caches are per model; the prompt is a sequence of blocks: each tool, each system
  block, each content block of each message, in that order; a breakpoint
  (`cache_control`) ends a prefix to cache;
- a request reads the longest prefix stored earlier that ends at or before one of its
  breakpoints and at most `LOOKBACK` blocks before it;
- it writes from there to its last breakpoint, and every breakpoint's prefix becomes an
  entry; what follows the last breakpoint is plain input;
- a prefix shorter than the model's minimum is not cached (the documented minimums by
  model family; made-up test ids like "claude-test-1" have none, so tiny prompts work);
- an entry lives 5 minutes (or 1 hour with `"ttl": "1h"`) from its last use.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

LOOKBACK = 20
TTL = {"5m": 300.0, "1h": 3600.0}
# Minimum cacheable prefix by model family (prompt-caching docs, "Cache limitations").
MINIMUMS = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
    ("claude-opus-4", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-3-7-sonnet", 1024),
)


def tokens(chars: int) -> int:
    """Estimated tokens of `chars` characters (about four per token)."""
    return (chars + 3) // 4


def min_tokens(model: str) -> int:
    for prefix, n in MINIMUMS:
        if model.startswith(prefix):
            return n
    return 0


def blocks_of(body: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """(serialised block, its cache_control or None), in the order the API caches them."""
    out: list[tuple[str, dict[str, Any] | None]] = []
    for tool in body.get("tools") or []:
        out.append(_block(tool))
    system = body.get("system")
    if isinstance(system, str) and system:
        out.append((system, None))
    for block in system if isinstance(system, list) else []:
        out.append(_block(block))
    for msg in body["messages"]:
        content = msg["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for k, b in enumerate(blocks):
            text, marker = _block(b)
            out.append((f"{msg['role']}\n{text}" if k == 0 else text, marker))
    if isinstance(body.get("cache_control"), dict) and out:  # automatic: the last block
        out[-1] = (out[-1][0], body["cache_control"])
    return out


def _block(block: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(plain, sort_keys=True), block.get("cache_control")


def prefix_tokens(body: dict[str, Any]) -> list[int]:
    """Running token total at the end of each block (for tests to state expectations)."""
    total, out = 0, []
    for text, _ in blocks_of(body):
        total += tokens(len(text))
        out.append(total)
    return out


class PromptCache:
    """One organisation's cache. Thread-safe.

    Args:
        clock: seconds, monotonic; injectable so tests can expire entries.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: dict[str, tuple[float, float]] = {}  # digest -> (last used, ttl)
        self._clock = clock
        self._lock = threading.Lock()

    def account(self, body: dict[str, Any]) -> dict[str, int]:
        """The usage counts of a valid request body, updating the cache as the API would."""
        blocks = blocks_of(body)
        digest, total = hashlib.sha256(str(body.get("model", "")).encode() + b"\0"), 0
        prefix: list[tuple[str, int]] = []
        for text, _ in blocks:
            digest.update(text.encode() + b"\0")
            total += tokens(len(text))
            prefix.append((digest.hexdigest(), total))
        total = max(total, 1)
        marks = [(i, m) for i, (_, m) in enumerate(blocks) if m is not None]
        usage = {"input_tokens": total, "cache_read_input_tokens": 0}
        usage |= {"cache_creation_input_tokens": 0, "ephemeral_5m": 0, "ephemeral_1h": 0}
        if not marks:
            return usage
        minimum = min_tokens(str(body.get("model", "")))
        with self._lock:
            now = self._clock()
            self._entries = {d: e for d, e in self._entries.items() if now - e[0] <= e[1]}
            read_at = -1
            for mark, _ in marks:
                for i in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                    if prefix[i][0] in self._entries:
                        read_at = max(read_at, i)
                        break
            read = prefix[read_at][1] if read_at >= 0 else 0
            if read_at >= 0:
                life = self._entries[prefix[read_at][0]][1]
                self._entries[prefix[read_at][0]] = (now, life)
            last, last_marker = marks[-1]
            write = 0
            if prefix[last][1] >= minimum and last > read_at:
                write = prefix[last][1] - read
                for i, marker in marks:
                    if prefix[i][1] >= minimum and i != read_at:
                        self._entries[prefix[i][0]] = (now, TTL[marker.get("ttl", "5m")])
        ttl = last_marker.get("ttl", "5m")
        return {
            "input_tokens": max(total - read - write, 0),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "ephemeral_5m": write if ttl == "5m" else 0,
            "ephemeral_1h": write if ttl == "1h" else 0,
        }
