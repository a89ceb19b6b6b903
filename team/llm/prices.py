"""The one table of models: prices, prompt-cache minimums, context windows, and the
arithmetic on them.

Every cost the project shows (stats, report, experiment, budgets, the sim cache's
minimum), every context window (a threshold given as a share of it, the web page's
context meter) and every check of a model id comes from here, so a change is one edit.

Figures are Anthropic's published list prices in USD per million tokens, from the
pricing page (platform.claude.com/docs/en/about-claude/pricing), and the minimum
cacheable prefix per model from the prompt-caching page ("Cache limitations"), as of
December 2026. Cache writes cost 1.25x base input for the 5-minute lifetime and 2x for
the 1-hour one; cache reads (hits and refreshes) cost 0.1x.

Two units are offered:

- `billed_input`: input cost in *base-price input tokens* (input + 1.25 x writes +
  0.1 x reads for the 5-minute cache). Model-independent, so strategies and runs compare
  without a model in mind; this is what `team stats`, `team experiment` and the benches
  report.
- `dollars`: the bill for one model, output included.

A model not in the table is priced as `FALLBACK_MODEL`, and the `ModelPrices` returned
says so (`known` is False, `model` names what it was priced as), so a display can mark
the figure as an estimate instead of silently showing a wrong one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal, Protocol

CacheTTL = Literal["5m", "1h"]

# The multipliers Anthropic applies to base input for every current model.
WRITE_5M = 1.25
WRITE_1H = 2.0
READ = 0.1

TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True, slots=True)
class ModelPrices:
    """One model's prices (USD per million tokens) and its minimum cacheable prefix.

    `known` is False when `model` was not in the table and these are the fallback's.
    """

    model: str
    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    min_cache_tokens: int
    context_window: int = 200_000
    """Tokens of input plus output one request may hold (the standard window; Sonnet's
    1M-token beta needs a header this project does not send)."""
    known: bool = True

    def cache_write(self, ttl: CacheTTL = "5m") -> float:
        """The write price for a cache lifetime."""
        return self.cache_write_1h if ttl == "1h" else self.cache_write_5m


def _row(model: str, base: float, output: float, min_cache_tokens: int) -> ModelPrices:
    return ModelPrices(
        model=model,
        input=base,
        output=output,
        cache_write_5m=round(base * WRITE_5M, 4),
        cache_write_1h=round(base * WRITE_1H, 4),
        cache_read=round(base * READ, 4),
        min_cache_tokens=min_cache_tokens,
    )


# Keyed by the model id without its date suffix ("claude-sonnet-4-5-20250929" ->
# "claude-sonnet-4-5"). The minimums: 4,096 for Opus 4.5/4.6 and Haiku 4.5, 1,024 for
# Sonnet 4.x and Opus 4/4.1, 2,048 for the Haiku 3 models.
PRICES: dict[str, ModelPrices] = {
    p.model: p
    for p in (
        _row("claude-opus-4-6", 5.0, 25.0, 4096),
        _row("claude-opus-4-5", 5.0, 25.0, 4096),
        _row("claude-opus-4-1", 15.0, 75.0, 1024),
        _row("claude-opus-4-0", 15.0, 75.0, 1024),
        _row("claude-sonnet-4-6", 3.0, 15.0, 1024),
        _row("claude-sonnet-4-5", 3.0, 15.0, 1024),
        _row("claude-sonnet-4-0", 3.0, 15.0, 1024),
        _row("claude-3-7-sonnet", 3.0, 15.0, 1024),
        _row("claude-haiku-4-5", 1.0, 5.0, 4096),
        _row("claude-3-5-haiku", 0.8, 4.0, 2048),
        _row("claude-3-haiku", 0.25, 1.25, 2048),
    )
}

# Older spellings of the same models.
ALIASES = {
    "claude-opus-4": "claude-opus-4-0",
    "claude-sonnet-4": "claude-sonnet-4-0",
}

# The offline simulator is priced as the model the project defaults to on the real API.
SIM_MODEL = "claude-sonnet-4-5"
FALLBACK_MODEL = "claude-sonnet-4-5"

_DATE_SUFFIX = re.compile(r"-(\d{8}|latest)$")


def canonical(model: str) -> str:
    """The table key for a model id: date or `-latest` suffix dropped, aliases resolved."""
    name = _DATE_SUFFIX.sub("", model.strip().lower())
    if name == "sim":
        return SIM_MODEL
    return ALIASES.get(name, name)


def prices_for(model: str) -> ModelPrices:
    """The prices of a model id ("sim" included); unknown ids get the fallback's, marked.

    Args:
        model: an Anthropic model id, dated or not, or "sim".
    """
    row = PRICES.get(canonical(model))
    if row is not None:
        return row
    return replace(PRICES[FALLBACK_MODEL], known=False)


def min_cache_tokens(model: str) -> int:
    """The shortest prefix the model's prompt cache stores."""
    return prices_for(model).min_cache_tokens


def context_window(model: str) -> int:
    """The model's context window in tokens ("sim": the window of the model it plays)."""
    return prices_for(model).context_window


def is_known(model: str) -> bool:
    """Whether `model` (dated or not, or "sim") is in the table."""
    return canonical(model) in PRICES


def nearest_known(model: str) -> str | None:
    """The table's model id closest to `model` (a typo's likely meaning), or None."""
    import difflib

    names = [*PRICES, *ALIASES, "sim"]
    close = difflib.get_close_matches(canonical(model), names, n=1, cutoff=0.6)
    return close[0] if close else None


def model_warning(model: str) -> str | None:
    """One line for a model id the table does not know (a typo, most likely), else None.

    A warning, not a refusal: a model newer than the table is still served by the API
    (`team check --online` asks it)."""
    if is_known(model):
        return None
    near = nearest_known(model)
    hint = f"did you mean {near}?" if near else "is it a typo?"
    return f"model {model!r} is not in the model table (team/llm/prices.py): {hint}"


class InputCounts(Protocol):
    """Anything with the three input counts: `team.llm.base.Usage`, `CacheCharge`, ..."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...


Counts = InputCounts | Mapping[str, object]


def _count(usage: Counts, key: str) -> int:
    value = usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, 0)
    return int(value or 0)  # type: ignore[call-overload]


def write_multiplier(ttl: CacheTTL = "5m") -> float:
    """What a cache write costs in base-price input tokens, per token."""
    return WRITE_1H if ttl == "1h" else WRITE_5M


def ttl_of(usage: Counts, ttl: CacheTTL | None = None) -> CacheTTL:
    """The cache lifetime to bill `usage`'s writes at: `ttl` if given, else the one the
    usage records (a model-call event or its row has `cache_ttl`), else "5m" (rows
    written before the column existed, and the API's default)."""
    if ttl is not None:
        return ttl
    value = (
        usage.get("cache_ttl") if isinstance(usage, Mapping) else getattr(usage, "cache_ttl", None)
    )
    return "1h" if value == "1h" else "5m"


def billed_input(usage: Counts, *, ttl: CacheTTL | None = None) -> float:
    """Input cost in base-price input tokens: input + 1.25x writes (2x for 1h) + 0.1x reads.

    Args:
        usage: a `Usage`, a `CacheCharge`, or an event row (a mapping with
            `input_tokens`, `cache_write_tokens`, `cache_read_tokens`; missing or None
            counts as 0; a `cache_ttl` of "1h" bills the writes at 2x).
        ttl: the cache lifetime the writes were made with, over what `usage` records.
    """
    return (
        _count(usage, "input_tokens")
        + write_multiplier(ttl_of(usage, ttl)) * _count(usage, "cache_write_tokens")
        + READ * _count(usage, "cache_read_tokens")
    )


def dollars(usage: Counts, model: str, *, ttl: CacheTTL | None = None) -> float:
    """The list-price bill in USD of one call (or a sum of calls), output included.

    Args:
        usage: as for `billed_input`, plus `output_tokens`.
        model: the model id; an unknown one is priced as `FALLBACK_MODEL` (check
            `prices_for(model).known` to mark the figure as an estimate).
        ttl: the cache lifetime the writes were made with, over what `usage` records.
    """
    p = prices_for(model)
    return (
        _count(usage, "input_tokens") * p.input
        + _count(usage, "cache_write_tokens") * p.cache_write(ttl_of(usage, ttl))
        + _count(usage, "cache_read_tokens") * p.cache_read
        + _count(usage, "output_tokens") * p.output
    ) / 1_000_000


def usd(value: float | None) -> str:
    """Dollars with cents, and more digits for the fractions of a cent a sim run costs."""
    if value is None:
        return "-"
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"
