"""`team stats`: per-agent and team numbers from `.team/events.db` (docs/design.md).

The database is opened read-only, so stats can be taken while a team is running (WAL
readers never block the writer) and a typo'd `--dir` never leaves an empty database behind.
The tables are those `team.core.events.schema_sql` makes from the event dataclasses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from team.core.events import reading, table_names
from team.llm import prices

LAYERS = ("micro", "auto", "manual")

# Prompt-cache prices relative to base input tokens, from the one price table. Output
# tokens are counted as they are: their price ratio depends on the model.
CACHE_WRITE_PRICE = prices.WRITE_5M
CACHE_READ_PRICE = prices.READ

TABLES = ("model_calls", "compactions", "deliveries", "agent_events")

Row = dict[str, Any]


@dataclass
class Rows:
    """Every event row, by table, oldest first."""

    model_calls: list[Row] = field(default_factory=list)
    compactions: list[Row] = field(default_factory=list)
    deliveries: list[Row] = field(default_factory=list)
    agent_events: list[Row] = field(default_factory=list)

    def all(self) -> Iterable[Row]:
        for table in TABLES:
            yield from getattr(self, table)

    def start(self) -> float | None:
        """Time of the first event: the zero of every time axis."""
        return min((r["ts"] for r in self.all() if r.get("ts") is not None), default=None)

    def agents(self) -> list[str]:
        return sorted({r["agent"] for r in self.all() if r.get("agent")})

    def of(self, agent: str) -> Rows:
        return Rows(*([r for r in getattr(self, t) if r.get("agent") == agent] for t in TABLES))


def load(db: Path) -> Rows:
    """Read every event from an events database, without writing to it.

    Raises:
        UserError: the database does not exist or is not one.
    """
    rows = Rows()
    with reading(db) as conn:
        present = table_names(conn)
        for table in TABLES:
            if table in present:
                got = conn.execute(f"SELECT * FROM {table} ORDER BY ts, id").fetchall()
                setattr(rows, table, [dict(r) for r in got])
    return rows


def billed_input(row: Row) -> float:
    """Input cost of one call in base-price input tokens (see `team.llm.prices`)."""
    return prices.billed_input(row)


def hit_rate(calls: list[Row]) -> float | None:
    """The share of the calls' input tokens that were read from the prompt cache."""
    read = sum(r.get("cache_read_tokens") or 0 for r in calls)
    total = read + sum(
        (r.get("input_tokens") or 0) + (r.get("cache_write_tokens") or 0) for r in calls
    )
    return read / total if total else None


def context_tokens(row: Row) -> int:
    """The size of the context one call saw and produced (what auto-compaction watches)."""
    return sum(
        row.get(k) or 0
        for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    )


def percentile(values: list[float], q: float) -> float | None:
    """The q-th quantile (0..1), linearly interpolated between ranks; None when empty."""
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass
class LayerStats:
    """Compactions of one layer. Token sums and the ratio cover successful ones only."""

    ok: int = 0
    failed: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    mean_ratio: float | None = None  # mean of tokens_after / tokens_before
    results_cleared: int = 0


@dataclass
class GroupStats:
    """The numbers for one agent, or for the whole team."""

    agent_calls: int
    summary_calls: int
    call_errors: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    billed_input: float
    usd: float  # list price of every call, output included (team.llm.prices)
    summary_share: float | None  # summary (billed input + output) / all (billed input + output)
    cache_hit_rate: float | None  # agent calls: cache read / (input + cache read + cache write)
    micro_rewrite_tokens: int  # cached tokens micro clears made the provider write again
    micro_rewrite_cost: float  # what those rewrites cost over reading, in base-price tokens
    compactions: dict[str, LayerStats]
    mean_retention: float | None
    retention_samples: int
    retention_by_kind: dict[str, float | None]  # task ids, teammate names, file paths
    deliveries_sent: int  # messages written to the agent's inbox
    deliveries_received: int  # messages the agent took in
    latency_p50: float | None
    latency_p99: float | None
    crashes: int
    restarts: int


def _layer_stats(rows: list[Row]) -> LayerStats:
    ok = [r for r in rows if r.get("success")]
    ratios = [r["tokens_after"] / r["tokens_before"] for r in ok if (r["tokens_before"] or 0) > 0]
    return LayerStats(
        ok=len(ok),
        failed=len(rows) - len(ok),
        tokens_before=sum(r["tokens_before"] or 0 for r in ok),
        tokens_after=sum(r["tokens_after"] or 0 for r in ok),
        mean_ratio=_mean(ratios),
        results_cleared=sum(r.get("results_cleared") or 0 for r in ok),
    )


def group_stats(rows: Rows, model: str = "sim") -> GroupStats:
    """Compute the numbers for whatever rows are given (one agent's, or everyone's).

    Args:
        rows: the events.
        model: the model id dollars are priced at (the team's, from team.toml).
    """
    calls = rows.model_calls
    summary = [r for r in calls if r.get("purpose") == "summary"]

    def cost(rs: list[Row]) -> float:
        return sum(billed_input(r) + (r.get("output_tokens") or 0) for r in rs)

    total_cost = cost(calls)
    retentions = [r["retention"] for r in rows.compactions if r.get("retention") is not None]
    latencies = [
        r["latency_s"]
        for r in rows.deliveries
        if r.get("kind") == "received" and r.get("latency_s") is not None
    ]
    kinds = [r.get("kind") for r in rows.agent_events]

    def tokens(key: str) -> int:
        return sum(r.get(key) or 0 for r in calls)

    micro = [r for r in rows.compactions if r.get("layer") == "micro" and r.get("success")]
    rewrites = sum(r.get("rewrite_tokens") or 0 for r in micro)
    rewrite_cost = sum(
        (prices.write_multiplier(prices.ttl_of(r)) - prices.READ) * (r.get("rewrite_tokens") or 0)
        for r in micro
    )

    return GroupStats(
        agent_calls=len(calls) - len(summary),
        summary_calls=len(summary),
        call_errors=sum(1 for r in calls if r.get("error")),
        input_tokens=tokens("input_tokens"),
        output_tokens=tokens("output_tokens"),
        cache_read_tokens=tokens("cache_read_tokens"),
        cache_write_tokens=tokens("cache_write_tokens"),
        billed_input=sum(billed_input(r) for r in calls),
        usd=sum(prices.dollars(r, model) for r in calls),
        summary_share=cost(summary) / total_cost if total_cost else None,
        cache_hit_rate=hit_rate([r for r in calls if r.get("purpose") != "summary"]),
        micro_rewrite_tokens=rewrites,
        micro_rewrite_cost=rewrite_cost,
        compactions={
            layer: _layer_stats([r for r in rows.compactions if r.get("layer") == layer])
            for layer in LAYERS
        },
        mean_retention=_mean(retentions),
        retention_samples=len(retentions),
        retention_by_kind={
            kind: _mean(
                [
                    r[f"retention_{kind}"]
                    for r in rows.compactions
                    if r.get(f"retention_{kind}") is not None
                ]
            )
            for kind in ("tasks", "names", "paths")
        },
        deliveries_sent=sum(1 for r in rows.deliveries if r.get("kind") == "sent"),
        deliveries_received=sum(1 for r in rows.deliveries if r.get("kind") == "received"),
        latency_p50=percentile(latencies, 0.50),
        latency_p99=percentile(latencies, 0.99),
        crashes=kinds.count("crashed"),
        restarts=kinds.count("restarted"),
    )


@dataclass
class Stats:
    agents: dict[str, GroupStats]
    team: GroupStats
    model: str = "sim"
    """The model dollars are priced at; `prices.prices_for(model).known` says if exactly."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `team stats --json`: {"agents": {name: {...}}, "team": {...}}."""
        return {
            "agents": {name: asdict(s) for name, s in self.agents.items()},
            "team": asdict(self.team),
            "priced_as": prices.prices_for(self.model).model,
        }


def compute(rows: Rows, model: str = "sim") -> Stats:
    return Stats(
        agents={name: group_stats(rows.of(name), model) for name in rows.agents()},
        team=group_stats(rows, model),
        model=model,
    )


def load_many(dbs: Iterable[Path]) -> Rows:
    """Every event of several nodes' databases, merged in time order.

    A team on the Redis backend keeps one `.team/events.db` per node; merged, they give
    the team's numbers. Rows keep their node's own ids; `ts` orders them.
    """
    merged = Rows()
    for db in dbs:
        rows = load(db)
        for table in TABLES:
            getattr(merged, table).extend(getattr(rows, table))
    for table in TABLES:
        getattr(merged, table).sort(key=lambda r: r.get("ts") or 0)
    return merged


def stats(db: Path | list[Path], model: str = "sim") -> Stats:
    """Load one events database (or merge several) and compute the stats (see `load`)."""
    return compute(load_many(db) if isinstance(db, list) else load(db), model)


# -- tables shared by `team stats` and the HTML report --------------------------------------


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]


def fmt(value: Any, kind: str = "") -> str:
    """Human formatting: thousands separators, percentages, seconds; "-" for nothing."""
    if value is None:
        return "-"
    if kind == "%":
        return f"{100 * value:.1f}%"
    if kind == "s":
        return f"{value:.3f}s" if value < 10 else f"{value:.1f}s"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def price_note(model: str) -> str:
    p = prices.prices_for(model)
    if model == "sim":
        return f"the sim priced as {p.model}"
    return p.model if p.known else f"model {model!r} not in the price table: priced as {p.model}"


def _active(st: Stats) -> list[tuple[str, GroupStats]]:
    # `user` and agents that never called the model would be a row of zeros
    named = [(n, g) for n, g in st.agents.items() if g.agent_calls or g.summary_calls]
    return [*named, ("TEAM", st.team)]


def tables(st: Stats) -> list[Table]:
    """The stats as tables that each fit 80 columns: cost, tokens, compactions,
    retention, deliveries and health."""
    groups = [*st.agents.items(), ("TEAM", st.team)]
    active = _active(st)
    cost = Table(
        f"Cost (USD at list price, {price_note(st.model)})",
        ["agent", "calls", "summaries", "USD", "billed input", "summary %"],
        [
            [
                name,
                fmt(g.agent_calls),
                fmt(g.summary_calls),
                prices.usd(g.usd),
                fmt(round(g.billed_input)),
                fmt(g.summary_share, "%"),
            ]
            for name, g in active
        ],
    )
    tokens = Table(
        f"Tokens (billed input = input + {CACHE_WRITE_PRICE}×write ({prices.WRITE_1H}× for the "
        f"1h cache) + {CACHE_READ_PRICE}×read)"
        "; cache hit: share of agent-call input read from the cache; rewrite: what micro "
        "clears cost in cache writes over reads, base-price tokens",
        ["agent", "input", "cache write", "cache read", "output", "cache hit", "rewrite"],
        [
            [
                name,
                fmt(g.input_tokens),
                fmt(g.cache_write_tokens),
                fmt(g.cache_read_tokens),
                fmt(g.output_tokens),
                fmt(g.cache_hit_rate, "%"),
                fmt(round(g.micro_rewrite_cost)),
            ]
            for name, g in active
        ],
    )
    comp_rows = []
    for name, g in groups:
        for layer, ls in g.compactions.items():
            if ls.ok or ls.failed:
                comp_rows.append(
                    [
                        name,
                        layer,
                        fmt(ls.ok),
                        fmt(ls.failed),
                        fmt(ls.tokens_before),
                        fmt(ls.tokens_after),
                        fmt(ls.mean_ratio),
                        fmt(ls.results_cleared),
                    ]
                )
    comps = Table(
        "Compactions (token sums and mean after/before ratio over successful ones)",
        ["agent", "layer", "ok", "failed", "before", "after", "ratio", "cleared"],
        comp_rows,
    )
    retention = Table(
        "Retention: what summaries kept of task ids, teammate names, file paths",
        ["agent", "mean", "task ids", "names", "paths", "samples"],
        [
            [
                name,
                fmt(g.mean_retention, "%"),
                fmt(g.retention_by_kind["tasks"], "%"),
                fmt(g.retention_by_kind["names"], "%"),
                fmt(g.retention_by_kind["paths"], "%"),
                fmt(g.retention_samples),
            ]
            for name, g in groups
            if g.retention_samples or name == "TEAM"
        ],
    )
    health = Table(
        "Deliveries (latency from send to intake) and health",
        ["agent", "sent", "taken", "p50", "p99", "errors", "crashes", "restarts"],
        [
            [
                name,
                fmt(g.deliveries_sent),
                fmt(g.deliveries_received),
                fmt(g.latency_p50, "s"),
                fmt(g.latency_p99, "s"),
                fmt(g.call_errors),
                fmt(g.crashes),
                fmt(g.restarts),
            ]
            for name, g in groups
        ],
    )
    return [cost, tokens, comps, retention, health]
