"""Token accounting: the last response's real usage, plus what came since at this agent's
own characters-per-token ratio.

A fixed 4 characters a token is wrong for real sessions (Claude Code logs show 2.0-2.8:
code, JSON and paths tokenise densely), so a 50,000-token threshold counted at chars/4
fires at 70-100k real tokens. `TokenMeter` learns the ratio from each call: the
characters the request carried over the input tokens the API counted for it.

The fixed prefix (system prompt and tools) is counted in its own right: from its
characters at that ratio, or, when its size in tokens is known (a replay of another
agent's log, whose recorded prefix stands in for ours), as that many tokens, and then
the ratio is learnt from the conversation alone. It is what no compaction can remove
(`team.compaction.auto`).
"""

from __future__ import annotations

from team.compaction.history import History
from team.llm.base import CHARS_PER_TOKEN, chars_to_tokens

MIN_RATIO, MAX_RATIO = 1.0, 8.0  # outside this the observation is not a text prompt
MIN_OBSERVED_TOKENS = 200  # a tiny request says little about the ratio


class TokenMeter:
    """One agent's characters-per-token ratio, calibrated on its own calls.

    Args:
        chars_per_token: the ratio until the first observation.
        prefix_chars: characters of the fixed prefix (system prompt and tools).
        prefix_tokens: its size in tokens when known; then it is not converted.
    """

    def __init__(
        self,
        chars_per_token: float = CHARS_PER_TOKEN,
        *,
        prefix_chars: int = 0,
        prefix_tokens: int | None = None,
    ) -> None:
        self.ratio = float(chars_per_token)
        self.observed = 0
        self.prefix_chars = prefix_chars
        self.prefix_tokens = prefix_tokens

    def tokens(self, chars: int) -> int:
        """Estimated tokens of `chars` characters of prompt."""
        return int(chars / self.ratio + 0.999)

    @property
    def fixed(self) -> int:
        """Tokens of the fixed prefix every request carries."""
        if self.prefix_tokens is not None:
            return self.prefix_tokens
        return self.tokens(self.prefix_chars)

    def observe(self, chars: int, input_tokens: int) -> None:
        """Learn from one call: `chars` of conversation (the messages sent) that the API
        counted, with the fixed prefix, as `input_tokens`.

        The latest call weighs most (it covers the whole current context), smoothed so
        that one odd request does not swing the threshold.
        """
        if self.prefix_tokens is not None:
            input_tokens -= self.prefix_tokens
        else:
            chars += self.prefix_chars
        if input_tokens < MIN_OBSERVED_TOKENS or chars <= 0:
            return
        ratio = min(MAX_RATIO, max(MIN_RATIO, chars / input_tokens))
        self.ratio = ratio if self.observed == 0 else 0.5 * self.ratio + 0.5 * ratio
        self.observed += 1


def estimate(history: History, meter: TokenMeter | None = None) -> int:
    """Estimated context tokens of the next call (see docs/design.md, compaction).

    Before the first response of a segment there is no real usage to anchor on, so the
    segment is converted at the agent's ratio, plus the fixed prefix (`meter.fixed`).
    After it, the API's own count is exact for everything up to the response, and only
    what was appended since is estimated.
    """
    convert = meter.tokens if meter else chars_to_tokens
    if history.usage_tokens is None:
        chars = sum(m.chars() for m in history.messages)
        return (meter.fixed if meter else 0) + convert(chars)
    tail = history.messages[history.usage_index :]
    return history.usage_tokens + convert(sum(m.chars() for m in tail))
