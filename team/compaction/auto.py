"""When auto-compaction runs: only when it can pay for itself (docs/design.md, "Compaction").

A compaction removes the history, nothing else: every request still carries the fixed
prefix (system prompt and tools), and the new context begins with the identity block
and the summary. When that part is near the threshold, a compaction at the threshold
frees little, the context is back at the threshold after a call or two, and the agent
pays for a summary and a fresh context on nearly every call (a 33-66k-token prefix on a
50k threshold: 26 compactions in 31 replies, 1.5x the bill of never compacting).

So the bar is raised past the threshold until a compaction there frees enough:

    bar = max(threshold, base + growth, base / (1 - MIN_FREED))

`base` is the context a compaction leaves: the fixed prefix before the first one, after
it the fresh context as measured (the larger of its estimate and the first call's
recorded input, `History.floor`). `growth` is how much the compactable part must grow
between two auto compactions (half the threshold, as the reference's floor rule had
it), counted by the same estimate that triggers them. A compaction that still frees
less than `MIN_FREED` of the context pauses auto for the agent (`Compactor`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from team.llm.prices import context_window
from team.workspace.config import TeamConfig, threshold_tokens

MIN_FREED = 0.2
"""A compaction that frees less than this share of the context did not pay: auto pauses."""


def growth(threshold: int) -> int:
    """Tokens the compactable part must grow by between two auto compactions."""
    return max(1, threshold // 2)


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
    def growth(self) -> int:
        return growth(self.threshold)

    @property
    def at(self) -> int:
        """The context above which auto-compaction runs."""
        freed_enough = math.ceil(self.base / (1 - MIN_FREED))
        return max(self.threshold, self.base + self.growth, freed_enough)

    @property
    def raised(self) -> bool:
        """The prefix or the fresh context is within reach of the threshold."""
        return self.at > self.threshold


def reach_line(agent: str, prefix_tokens: int, threshold: int) -> str | None:
    """One line when `agent`'s fixed prefix is within reach of its threshold, else None.

    What `team check` and `team up` say before anything is spent.
    """
    bar = Bar(threshold, prefix_tokens)
    if not bar.raised:
        return None
    return (
        f"{agent}: its system prompt and tools are about {prefix_tokens:,} tokens, within "
        f"reach of the {threshold:,}-token compaction threshold; auto-compaction will wait "
        f"until about {bar.at:,} tokens, where it frees at least {bar.at - prefix_tokens:,}"
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
