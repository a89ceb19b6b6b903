"""`team experiment`: one workload under several compaction strategies, in one table.

Each strategy gets its own fresh workspace and runs the same seeded workload (see
`team.study.workload`) with the real runtime and the offline `SimModel`, or replays a
recorded session log (see `team.study.replay`). Its events go to that workspace's
`.team/events.db` and the row is computed by `team.study.stats`, so every number here is
the one `team stats -C <that workspace>` would show.

Costs are in base-price input tokens (input + 1.25 x cache writes + 0.1 x cache reads,
Anthropic's 5-minute cache prices) as the simulated prompt cache bills them.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from team.core.errors import UserError
from team.study.outcome import Outcome, outcome, tool_output_chars
from team.study.stats import load
from team.study.workload import Workload, prepare

REFERENCE = "reference"
DEFAULT = "default"
CLEAR_AT_LEAST = 10_000
"""Tokens a cache-aware micro clear must free at once. A clear re-writes the cache from
the first changed message on (1.25x instead of 0.1x for the ~10k tokens after it here,
the newest results and a preserved read), and frees 0.1x per later call of what it
clears, so over the ~10 calls left in a task it pays when it frees about that much."""


@dataclass(frozen=True)
class Strategy:
    """A named set of `[compaction]` settings over the reference defaults.

    Attributes:
        name: short, says what it is.
        description: one line for the table's legend.
        overrides: `CompactionConfig` keys that differ from the reference defaults.
        threshold_factor: the auto threshold is the run's threshold times this.
    """

    name: str
    description: str
    overrides: dict[str, Any] = field(default_factory=dict)
    threshold_factor: float = 1.0

    def compaction(self, threshold: int) -> dict[str, Any]:
        """The `[compaction]` table for a run whose reference threshold is `threshold`."""
        return {**self.overrides, "threshold": int(threshold * self.threshold_factor)}


EAGER = {"micro_policy": "eager"}

STRATEGIES: tuple[Strategy, ...] = (
    Strategy(
        "manual-only",
        "micro and auto off; the agent's own `compact` tool still works (the sim calls it "
        "now and then), since a tool that silently does nothing would lie to the model",
        {"micro": False, "auto": False},
    ),
    Strategy(
        REFERENCE,
        "the reference design: keep_recent 3, preserve read_file, min_chars 100, micro "
        "clears as soon as the rules allow (micro_policy eager), auto at the threshold",
        EAGER,
    ),
    Strategy(
        DEFAULT,
        "what a team.toml with no [compaction] gets: the reference rules, micro clears in "
        "batches that pay for the cache rewrite, bought only with savings already made "
        "(micro_policy cost), auto at the threshold",
        {},
    ),
    Strategy(
        "cache-aware",
        f"reference, but micro clears only when it frees >= {CLEAR_AT_LEAST:,} tokens at once",
        {**EAGER, "clear_at_least": CLEAR_AT_LEAST},
    ),
    Strategy(
        "hybrid",
        "masking window of 5 results over every tool (read_file too), cleared cache-aware "
        f"(>= {CLEAR_AT_LEAST:,} tokens), summary deferred to 2x the threshold",
        {**EAGER, "keep_recent": 5, "preserve_tools": [], "clear_at_least": CLEAR_AT_LEAST},
        threshold_factor=2.0,
    ),
)


def strategy(name: str) -> Strategy:
    for s in STRATEGIES:
        if s.name == name:
            return s
    known = ", ".join(s.name for s in STRATEGIES)
    raise UserError(f"unknown strategy {name!r} (one of: {known})")


@dataclass
class Experiment:
    """The whole table: what was run, and one outcome per strategy."""

    workload: str  # one line describing the workload or the replayed log
    threshold: int  # the reference auto threshold (strategies may scale it)
    outcomes: list[Outcome]

    def get(self, name: str) -> Outcome:
        for o in self.outcomes:
            if o.strategy == name:
                return o
        raise KeyError(name)

    def ratio(self, name: str) -> float | None:
        """Billed input of `name` over the reference's (None without a reference row)."""
        try:
            ref = self.get(REFERENCE).billed_input
        except KeyError:
            return None
        return self.get(name).billed_input / ref if ref else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "threshold": self.threshold,
            "strategies": {s.name: asdict(s) for s in STRATEGIES},
            "outcomes": [{**asdict(o), "ratio": self.ratio(o.strategy)} for o in self.outcomes],
        }


# -- running ---------------------------------------------------------------------------


@contextmanager
def run_folder(keep: Path | None, name: str) -> Iterator[Path]:
    """Where one strategy runs: `keep/<name>` (left behind), or a temp folder (removed)."""
    if keep is not None:
        root = keep.resolve() / name
        if root.exists():
            shutil.rmtree(root)  # each run must start from the same empty state
        root.parent.mkdir(parents=True, exist_ok=True)
        yield root
        return
    tmp = Path(tempfile.mkdtemp(prefix=f"team-experiment-{name}-"))
    try:
        yield tmp / "ws"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


IDLE_GRACE_S = 0.2
"""How long a strategy's team must stay idle before it is stopped. Nothing outside the
team brings work during an experiment, and the runtime re-checks about every 0.1 s, so
a message between two agents is seen pending well within it."""


def run_strategy(
    workload: Workload, strat: Strategy, threshold: int, root: Path, *, timeout: float = 300.0
) -> Outcome:
    """Run the workload under one strategy with the real runtime and the sim model.

    Raises:
        UserError: the team was not idle within `timeout` seconds.
    """
    from team.agents.runtime.launch import TeamRun
    from team.llm.sim import SimModel

    start = time.monotonic()
    ws = prepare(root, workload, strat.compaction(threshold))
    with TeamRun(ws, ws.load_config(), SimModel(seed=workload.seed), fsync=False) as run:
        run.start()
        finished = run.wait(until_idle=True, idle_grace=IDLE_GRACE_S, timeout=timeout)
    if not finished:
        raise UserError(f"strategy {strat.name}: the team was not idle within {timeout:g}s")
    done, total = run.tasks_done()
    chars = tool_output_chars(ws, [n for n, _, _ in workload.team()])
    out = outcome(strat.name, load(ws.events_db), done, total, chars)
    out.seconds = time.monotonic() - start
    return out


def run_experiment(
    workload: Workload,
    *,
    threshold: int,
    strategies: tuple[Strategy, ...] = STRATEGIES,
    keep: Path | None = None,
    timeout: float = 300.0,
    progress: Callable[[str], None] | None = None,
) -> Experiment:
    """The workload under every strategy, one after another (never two at once: each run
    has the machine to itself, as the sim's cache clock and the bash tool expect).

    Args:
        workload: agents, tasks and seed.
        threshold: the reference auto threshold in tokens (the same for every strategy
            except where a strategy scales it).
        keep: keep each run's workspace in `keep/<strategy>` for `team stats -C`.
        progress: called with a line as each strategy starts.
    """
    outcomes = []
    for strat in strategies:
        if progress:
            progress(f"running {strat.name} ...")
        with run_folder(keep, strat.name) as root:
            out = run_strategy(workload, strat, threshold, root, timeout=timeout)
            out.workspace = str(root) if keep else None
        outcomes.append(out)
    names = ", ".join(f"{n} ({r})" for n, r, _ in workload.team())
    line = (
        f"sim workload: {workload.agents} agents [{names}], {workload.tasks_per_agent} tasks "
        f"each, seed {workload.seed}"
    )
    return Experiment(line, threshold, outcomes)


def replay_experiment(
    path: Path,
    *,
    threshold: int,
    strategies: tuple[Strategy, ...] = STRATEGIES,
    keep: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Experiment:
    """A recorded session log (or a workspace's logs) replayed under every strategy.

    The tool results come from the log instead of being run again; see
    `team.study.replay` for what a replay does and does not reproduce.

    Raises:
        UserError: nothing replayable at `path`.
    """
    from team.study.replay import load_recording, replay_strategy

    recording = load_recording(path)
    outcomes = []
    for strat in strategies:
        if progress:
            progress(f"replaying under {strat.name} ...")
        start = time.monotonic()
        with run_folder(keep, strat.name) as root:
            out = replay_strategy(recording, strat.name, strat.compaction(threshold), root)
            out.workspace = str(root) if keep else None
        out.seconds = time.monotonic() - start
        outcomes.append(out)
    replies = sum(len(t) for t in recording.turns().values())
    line = (
        f"replay of {recording.source}: {', '.join(recording.sessions)}; {replies} recorded "
        "replies, tool results from the log"
    )
    return Experiment(line, threshold, outcomes)


# -- showing ---------------------------------------------------------------------------

HEADERS = (
    "strategy",
    "billed input",
    "x ref",
    "total tokens",
    "cache write",
    "peak context",
    "micro",
    "auto",
    "manual",
    "summary share",
    "retention",
    "tasks",
    "tool output",
)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def table_rows(exp: Experiment) -> list[list[str]]:
    rows = []
    for o in exp.outcomes:
        ratio = exp.ratio(o.strategy)
        rows.append(
            [
                o.strategy,
                f"{o.billed_input:,.0f}",
                "-" if ratio is None else f"{ratio:.2f}",
                f"{o.total_tokens:,}",
                f"{o.cache_write_tokens:,}",
                f"{o.peak_context:,}",
                str(o.compactions.get("micro", 0)),
                str(o.compactions.get("auto", 0)),
                str(o.compactions.get("manual", 0)),
                _pct(o.summary_share),
                _pct(o.retention),
                f"{o.tasks_completed}/{o.tasks_total}",
                f"{o.tool_output_chars:,}",
            ]
        )
    return rows


def render(exp: Experiment) -> str:
    """The table as plain text, with the legend of strategies under it."""
    rows = [list(HEADERS), *table_rows(exp)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]

    def line(r: list[str]) -> str:
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    out = [exp.workload, f"reference auto threshold: {exp.threshold:,} tokens", ""]
    out += [line(rows[0]), "  ".join("-" * w for w in widths), *(line(r) for r in rows[1:])]
    out += [
        "",
        "billed input: base-price input tokens (input + 1.25 x cache write + 0.1 x "
        "cache read), summaries included; x ref: over the reference's; tool output: "
        "characters the tools returned (equal when the agents did the same work)",
    ]
    shown = {o.strategy for o in exp.outcomes}
    out += [f"{s.name}: {s.description}" for s in STRATEGIES if s.name in shown]
    return "\n".join(out)
