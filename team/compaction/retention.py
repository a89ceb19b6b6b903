"""Retention: how many of a segment's concrete facts survive its summary.

A summary can read well and still drop the one thing the agent needs next: the task id it
was working on, the teammate who asked, the file it was editing. Those three kinds of fact
are cheap to find in text and cheap to check for afterwards, so every auto or manual
compaction records the share of them that is still present in the new context
(`CompactionEvent.retention`). It is a proxy, not a judgment of quality: a fact that is
present is not necessarily understood, but a fact that is absent is certainly lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from team.core import facts as _facts

KINDS = ("task_ids", "names", "paths")

# One pass over the text for all names; agent names may contain "-" and "_", so the word
# boundary is spelled out: "bob" must not match inside "bobby" or "bob_2".
_WORD = re.compile(r"(?<![\w-])[\w-]+(?![\w-])")


@dataclass(frozen=True)
class Retention:
    """Share of each kind of fact present before a compaction that is still present after.

    A field is None when the text before held nothing of that kind, so "nothing to keep"
    is never confused with "kept everything" or "kept nothing".
    """

    task_ids: float | None
    names: float | None
    paths: float | None
    overall: float | None


def task_ids(text: str) -> set[str]:
    """Task ids `text` names, in their decimal form ("task 007" -> "7"); see team.core.facts."""
    return {str(n) for n in _facts.task_ids(text)}


def names(text: str, teammates: Iterable[str]) -> set[str]:
    """The teammates named in `text`, as whole words and ignoring case ("Alice" counts)."""
    wanted = {n.lower(): n for n in teammates if n}
    if not wanted:
        return set()
    # A search per name made 100-agent teams pay names x text; this is one pass.
    return {wanted[w] for w in set(_WORD.findall(text.lower())) if w in wanted}


def paths(text: str) -> set[str]:
    """File paths in `text`, normalised ("./src/a.py." is "src/a.py"); see team.core.facts."""
    return _facts.paths(text)


def facts(text: str, teammates: Iterable[str]) -> dict[str, set[str]]:
    """The concrete facts in `text`, by kind.

    Args:
        text: any text: a rendered segment, a summary, a new context.
        teammates: the names to look for (usually every agent on the team).

    Returns:
        {"task_ids": {...}, "names": {...}, "paths": {...}}.
    """
    return {"task_ids": task_ids(text), "names": names(text, teammates), "paths": paths(text)}


def _share(before: set[str], after: set[str]) -> float | None:
    if not before:
        return None
    return len(before & after) / len(before)


def retention(before: str, after: str, teammates: Iterable[str]) -> Retention:
    """Share of the facts in `before` that are still present in `after`.

    Args:
        before: the full text of the segment that was compacted.
        after: the text of the new context (identity block, summary, transcript path).
        teammates: the names to look for.

    Returns:
        A `Retention`. `overall` pools every fact of every kind, so a segment with twenty
        paths and one task id weighs them twenty to one; None when `before` had no facts.
    """
    teammates = list(teammates)
    was, now = facts(before, teammates), facts(after, teammates)
    shares = {kind: _share(was[kind], now[kind]) for kind in KINDS}
    total = sum(len(was[kind]) for kind in KINDS)
    kept = sum(len(was[kind] & now[kind]) for kind in KINDS)
    return Retention(**shares, overall=kept / total if total else None)
