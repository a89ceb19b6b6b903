"""When auto-compaction runs: only when it can pay for itself (docs/design.md, "Compaction").

A compaction removes the history, nothing else: every request still carries the fixed
prefix (system prompt and tools), and the new context begins with the identity block
and the summary. When that part is near the threshold, a compaction at the threshold
frees little, the context is back at the threshold after a call or two, and the agent
pays for a summary and a fresh context on nearly every call (a 33-66k-token prefix on a
50k threshold: 26 compactions in 31 replies, 1.5x the bill of never compacting).

So the bar is the threshold while a compaction there brings the context well under it,
and is raised past it once what a compaction leaves is within reach of it:

    bar = threshold                                  if base <= threshold - threshold/4
    bar = max(base + threshold/2, base / (1 - MIN_FREED))   otherwise

`base` is the context a compaction leaves. After one it is measured: the larger of the
new context's estimate and the first call's recorded input (`History.floor`). Before
the first one it is predicted (`expected_base`): the fixed prefix plus the fresh
context, as long as the summary may be (its `max_tokens`) and what comes with it
(`FRESH_EXTRA`), but never more than half of what there is to summarise. So two auto
compactions are always at least a quarter of the threshold of growth apart
(`min_growth`), counted by the same estimate that triggers them, and half of it
(`growth`) when the prefix is within reach; a compaction at a raised bar frees at
least `MIN_FREED` of the context. A compaction that still frees less than that pauses
auto for the agent (`Compactor`).

Why a step and not `max(threshold, base + threshold/2)` throughout: on sessions whose
prefix is well under the threshold (20-30k of 50k) compacting at the threshold is the
cheaper rhythm (0.38x manual-only against 0.45x on a 180-reply Codex session, 0.50x
against 0.57x on a 300-reply one): the summary reads the cached prefix, and the fresh
context is small. The raised bar is for the prefix that would make the next call cross
the threshold again at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from team.llm.prices import context_window
from team.workspace.config import TeamConfig, threshold_tokens

MIN_FREED = 0.2
"""A compaction that frees less than this share of the context did not pay: auto pauses."""
FRESH_EXTRA = 1_000
"""Tokens of a new context besides its summary: the identity block, the transcript's
path, what the model had not seen yet (the new context carries it, cut)."""


def expected_base(fixed: int, compactable: int, summary_tokens: int) -> int:
    """What a first compaction will leave: the fixed prefix and a fresh context.

    Args:
        fixed: the fixed prefix, in tokens.
        compactable: the context beyond it now.
        summary_tokens: the most a summary may be (the summary request's max_tokens).
    """
    return fixed + min(summary_tokens + FRESH_EXTRA, max(0, compactable) // 2)


def growth(threshold: int) -> int:
    """Growth of the compactable part between two auto compactions at a raised bar."""
    return max(1, threshold // 2)


def min_growth(threshold: int) -> int:
    """The least growth between two auto compactions, raised bar or not."""
    return max(1, threshold // 4)


@dataclass(frozen=True, slots=True)
class Bar:
    """The auto bar of one agent at one moment.

    Attributes:
        threshold: the configured threshold, in tokens.
        base: what a compaction leaves (fixed prefix, then the measured fresh context).
    """

    threshold: int
    base: int

    @property
    def raised(self) -> bool:
        """What a compaction leaves is within reach of the threshold: compacting there
        would not bring the context well under it."""
        return self.base + min_growth(self.threshold) > self.threshold

    @property
    def cold_at(self) -> int:
        """The bar when the prompt cache has expired: three quarters of the way from
        `base` to the threshold (and a quarter of the threshold past `base`).

        The next call writes the whole context again whatever happens, at the write
        price, and the summary reads what the cache no longer holds at about that price
        too: compacting now costs about one summary's output and a fresh context, and
        saves rewriting the compactable part now and reading it until the bar. Only
        while the bar is the threshold: a raised bar keeps its full growth."""
        if self.raised:
            return self.at
        gap = self.threshold - self.base
        return self.base + max(min_growth(self.threshold), gap * 3 // 4)

    @property
    def at(self) -> int:
        """The context above which auto-compaction runs."""
        if not self.raised:
            return self.threshold
        freed_enough = math.ceil(self.base / (1 - MIN_FREED))
        return max(self.base + growth(self.threshold), freed_enough)


def reach_line(
    agent: str, prefix_tokens: int, threshold: int, summary_tokens: int = 4096
) -> str | None:
    """One line when `agent`'s fixed prefix is within reach of its threshold, else None.

    What `team check` and `team up` say before anything is spent: the bar as it will be
    when the context reaches the threshold.
    """
    bar = Bar(threshold, expected_base(prefix_tokens, threshold - prefix_tokens, summary_tokens))
    for _ in range(3):  # the fresh context predicted at the bar, not at the threshold
        bar = Bar(threshold, expected_base(prefix_tokens, bar.at - prefix_tokens, summary_tokens))
    base = bar.base
    if not bar.raised:
        return None
    return (
        f"{agent}: its system prompt and tools are about {prefix_tokens:,} tokens, within "
        f"reach of the {threshold:,}-token compaction threshold; auto-compaction will wait "
        f"until about {bar.at:,} tokens, where it frees at least {bar.at - base:,}"
    )


def threshold_for(threshold: int | str, model: str) -> int:
    """A `[compaction] threshold` in tokens for `model` ("80%": of its context window)."""
    return threshold_tokens(threshold, context_window(model))


def window_problem(config: TeamConfig, model: str | None = None) -> str | None:
    """The one line refusing a threshold above the model's context window (it would
    never be reached), or None. `model`: the one the team runs on (`team up --model`)."""
    model = model or config.team.model
    window = context_window(model)
    for i, a in enumerate(config.agents):
        threshold = config.compaction_for(a.name).threshold
        if threshold_tokens(threshold, window) > window:
            key = f"agents[{i}].compaction" if "threshold" in a.compaction else "compaction"
            return (
                f"team.toml: {key}.threshold: {threshold:,} tokens is above the context "
                f'window of {model} ({window:,} tokens); use fewer, or a share such as "80%"'
            )
    return None
