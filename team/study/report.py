"""`team report`: context size over time with every compaction marked, and what it cost.

Writes a PNG and, beside it, an HTML page (same stem) that shows the PNG with the stats
tables and the retention of each summary. matplotlib is imported inside `draw` so that
`import team` (and every other command) stays fast.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from team.core.errors import UserError
from team.llm import prices
from team.study.stats import (
    LAYERS,
    Rows,
    Stats,
    compute,
    context_tokens,
    fmt,
    load,
    price_note,
    tables,
)

# The agent is the colour (of its line and of its compaction markers), the layer the
# marker's shape. Failed compactions are drawn hollow.
LAYER_STYLE = {
    "micro": {"marker": "v", "size": 28},
    "auto": {"marker": "o", "size": 70},
    "manual": {"marker": "s", "size": 60},
}
RUN_STARTS = ("started", "restarted")
"""Agent events after which its context starts afresh: no line is drawn across them."""
# Agent lines take the tab10 colours the layer markers do not use (red, grey).
AGENT_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
)
COST_PARTS = (
    ("input", "input_tokens", "input", "#4c72b0"),
    ("cache write", "cache_write_tokens", "cache_write_5m", "#dd8452"),
    ("cache read", "cache_read_tokens", "cache_read", "#55a868"),
    ("output", "output_tokens", "output", "#c44e52"),
)
"""Bar parts: label, token column, `ModelPrices` field (USD per million), colour."""


def _agent_calls(rows: Rows, agent: str) -> list[dict[str, Any]]:
    # The agent's own calls only: a summary call's size is the summariser's context, and
    # a failed call reports no usage, so either would draw a false dip or spike.
    return [
        r
        for r in rows.model_calls
        if r["agent"] == agent and r.get("purpose") != "summary" and not r.get("error")
    ]


def _on_line(calls: list[dict[str, Any]], r: dict[str, Any]) -> float:
    """Where the agent's line is when the compaction happens: its last call before it.

    `tokens_before` is an estimate on another scale (micro counts message text only), so
    a marker placed there would float away from the line it belongs to.
    """
    before = [c for c in calls if c["ts"] <= r["ts"]]
    if before:
        return context_tokens(before[-1])
    return r.get("tokens_before") or 0


def _runs(rows: Rows, agent: str, calls: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The agent's calls split where it (re)started: one line per run of the process."""
    starts = sorted(
        r["ts"] for r in rows.agent_events if r["agent"] == agent and r.get("kind") in RUN_STARTS
    )
    runs: list[list[dict[str, Any]]] = [[]]
    i = 0
    for c in calls:
        crossed = False
        while i < len(starts) and starts[i] <= c["ts"]:
            i += 1
            crossed = True
        if crossed and runs[-1]:
            runs.append([])
        runs[-1].append(c)
    return [run for run in runs if run]


def _draw_context(ax: Any, rows: Rows, agents: list[str], t0: float) -> None:
    lines = {agent: _agent_calls(rows, agent) for agent in agents}
    colors = {agent: AGENT_COLORS[i % len(AGENT_COLORS)] for i, agent in enumerate(agents)}
    for agent in agents:
        for k, run in enumerate(_runs(rows, agent, lines[agent])):
            ax.plot(
                [r["ts"] - t0 for r in run],
                [context_tokens(r) for r in run],
                label=agent if k == 0 else None,
                color=colors[agent],
                linewidth=1.4,
                marker=".",
                markersize=3,
            )
    for layer in LAYERS:
        style = LAYER_STYLE[layer]
        for success in (True, False):
            pts = [
                r
                for r in rows.compactions
                if r.get("layer") == layer and bool(r.get("success")) == success
            ]
            if not pts:
                continue
            edge = [colors.get(r["agent"], "#000000") for r in pts]
            ax.scatter(
                [r["ts"] - t0 for r in pts],
                [_on_line(lines.get(r["agent"], []), r) for r in pts],
                marker=style["marker"],
                s=style["size"],
                c=edge if success else None,
                facecolors=None if success else "none",
                edgecolors=edge if not success else "#000000",
                linewidths=1.0 if success else 1.5,
                zorder=3,
                label=f"{layer} compaction" + ("" if success else " (failed)"),
            )
    if not rows.model_calls and not rows.compactions:
        ax.text(
            0.5,
            0.5,
            "no model calls recorded yet",
            ha="center",
            va="center",
            transform=ax.transAxes,
            color="#777777",
        )
    ax.set_title("Context size per model call (input + cache read + cache write + output)")
    ax.set_xlabel("seconds since the first event")
    ax.set_ylabel("tokens")
    ax.grid(True, alpha=0.3)
    ax.yaxis.set_major_formatter(_thousands())
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def cost_parts(rows: Rows, model: str) -> dict[str, float]:
    """USD per part of the bill (input, cache write, cache read, output) for these calls.

    Cache writes are priced at each call's own lifetime (2x base input for the 1h cache).
    """
    p = prices.prices_for(model)

    def price(r: dict[str, Any], field: str) -> float:
        if field == "cache_write_5m":
            return p.cache_write(prices.ttl_of(r))
        return getattr(p, field)

    return {
        label: sum((r.get(key) or 0) * price(r, field) for r in rows.model_calls) / 1e6
        for label, key, field, _ in COST_PARTS
    }


def _draw_cost(ax: Any, rows: Rows, st: Stats) -> None:
    # the person (`user`) and any agent that never called the model have no cost bar
    names = [n for n, g in st.agents.items() if g.agent_calls or g.summary_calls] + ["TEAM"]
    groups = {name: rows.of(name) for name in st.agents}
    groups["TEAM"] = rows
    parts = {n: cost_parts(groups[n], st.model) for n in names}
    bottoms = [0.0] * len(names)
    for label, _key, _price, color in COST_PARTS:
        heights = [parts[n][label] for n in names]
        ax.bar(names, heights, bottom=bottoms, label=label, color=color, width=0.6)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for i, name in enumerate(names):
        g = st.team if name == "TEAM" else st.agents[name]
        if bottoms[i] > 0:
            ax.annotate(
                f"{prices.usd(g.usd)}, summary {fmt(g.summary_share, '%')}",
                (i, bottoms[i]),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 2),
                textcoords="offset points",
            )
    ax.set_title(f"Cost in USD at list price ({price_note(st.model)})")
    ax.set_ylabel("USD")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_ylim(0, max(bottoms, default=0) * 1.15 or 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _thousands() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: f"{v:,.0f}")


def draw(rows: Rows, st: Stats, out: Path, title: str = "team") -> Path:
    """Draw the context-over-time and cost panels to a PNG at `out`."""
    import matplotlib

    matplotlib.use("Agg")  # no display, no GUI toolkit: this runs in terminals and CI
    import matplotlib.pyplot as plt

    agents = rows.agents()
    t0 = rows.start() or 0.0
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(12, 8.5), gridspec_kw={"height_ratios": [3, 2]}
    )
    try:
        _draw_context(top, rows, agents, t0)
        _draw_cost(bottom, rows, st)
        fig.suptitle(f"{title}: compaction study", fontsize=13)
        fig.tight_layout()
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100)
    finally:
        plt.close(fig)
    return out


def _html_table(title: str, headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    if not rows:
        body = f'<tr><td colspan="{len(headers)}">none</td></tr>'
    return f"<h2>{html.escape(title)}</h2>\n<table>\n<tr>{head}</tr>\n{body}\n</table>"


def _compaction_rows(rows: Rows, t0: float) -> list[list[str]]:
    out = []
    # Micro events are counted in the stats table; listing each would bury the summaries.
    for r in rows.compactions:
        if r.get("layer") == "micro":
            continue
        out.append(
            [
                fmt(r["ts"] - t0, "s"),
                r["agent"],
                r["layer"],
                r.get("trigger") or "",
                "yes" if r.get("success") else f"no: {r.get('error') or ''}",
                f"{fmt(r.get('tokens_before'))} → {fmt(r.get('tokens_after'))}",
                f"{fmt(r.get('messages_before'))} → {fmt(r.get('messages_after'))}",
                fmt(r.get("summary_chars")),
                fmt(r.get("retention"), "%"),
                " / ".join(fmt(r.get(f"retention_{k}"), "%") for k in ("tasks", "names", "paths")),
                fmt(r.get("duration_s"), "s"),
                r.get("transcript") or "",
            ]
        )
    return out


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; }
"""


def write_html(rows: Rows, st: Stats, png: Path, out: Path, title: str = "team") -> Path:
    """Write the HTML page: the PNG (by relative path), the stats tables, each summary."""
    t0 = rows.start() or 0.0
    started = datetime.fromtimestamp(t0, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if t0 else "-"
    parts = [_html_table(t.title, t.headers, t.rows) for t in tables(st)]
    parts.append(
        _html_table(
            "Summaries (auto and manual compactions) and their retention of task ids, "
            "teammate names and file paths",
            [
                "t",
                "agent",
                "layer",
                "trigger",
                "success",
                "tokens",
                "messages",
                "summary chars",
                "retention",
                "task ids / names / paths",
                "duration",
                "transcript",
            ],
            _compaction_rows(rows, t0),
        )
    )
    src = html.escape(Path(_relative(png, out.parent)).as_posix(), quote=True)
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}: compaction report</title>
<style>{_CSS}</style></head>
<body>
<h1>{html.escape(title)}: compaction report</h1>
<p>First event {started}; times are seconds since then. Agents: {
        html.escape(", ".join(st.agents) or "none")
    }.</p>
<img src="{src}" alt="context size over time with compactions marked, and cost per agent">
{chr(10).join(parts)}
</body></html>
"""
    out.write_text(page, encoding="utf-8")
    return out


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return path.resolve().as_uri()


def write_report(db: Path, out: Path, title: str = "team", model: str = "sim") -> tuple[Path, Path]:
    """Draw the report for an events database.

    Args:
        db: the `.team/events.db` to read.
        out: where the PNG goes; the HTML page goes beside it with the same stem.
        title: shown in the figure and page titles (the team's name).
        model: the model the calls are priced at (the team's).

    Returns:
        (png path, html path).

    Raises:
        UserError: `out` is not a .png, or the database is missing or unreadable.
    """
    if out.suffix.lower() != ".png":
        raise UserError(f"{out}: the report is a PNG, so --out must end in .png")
    rows = load(db)
    st = compute(rows, model)
    png = draw(rows, st, out, title)
    page = write_html(rows, st, png, out.with_suffix(".html"), title)
    return png, page
