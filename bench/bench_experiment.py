"""The compaction experiment on the standard workload (issue 5's benchmark).

Run: .venv/bin/python bench/bench_experiment.py [--runs 2] [--sweep]

Runs the standard sim workload (3 agents: reader, runner, coder; 8 tasks each; seed 7;
the reference threshold of 50,000 tokens, which the reader's context does reach) under
every strategy and prints the `team experiment` table, where "x ref" is each strategy's
billed input over the reference defaults'. Then the billed input split into its parts
(plain input, cache writes at 1.25x, cache reads at 0.1x, and the summaries' share), and
the verdict against the target: the best strategy's billed input <= 0.6 x the reference's
with no loss of retention (within the run-to-run spread) or of completed tasks.

--runs N repeats the table and prints each strategy's spread (threads interleave agents
differently from run to run). --sweep also prints billed input over a grid of micro
settings, to show where the floor is.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from pathlib import Path

from team.llm.prices import READ, WRITE_5M, billed_input
from team.study.experiment import (
    REFERENCE,
    STRATEGIES,
    Experiment,
    Strategy,
    render,
    run_experiment,
)
from team.study.stats import compute, load
from team.study.workload import Workload

TARGET = 0.6
THRESHOLD = 50_000
WORKLOAD = Workload(agents=3, tasks_per_agent=8, seed=7)


def split(keep: Path, exp: Experiment) -> None:
    """Where each strategy's billed input goes."""
    print("\nbilled input by part (base-price tokens):")
    print(
        f"{'strategy':<12} {'plain input':>12} {'cache write':>12} {'cache read':>11} "
        f"{'summaries':>10} {'agent calls':>12}"
    )
    for o in exp.outcomes:
        rows = load(keep / o.strategy / ".team" / "events.db")
        team = compute(rows).team
        summary = sum(billed_input(r) for r in rows.model_calls if r["purpose"] == "summary")
        print(
            f"{o.strategy:<12} {team.input_tokens:>12,} "
            f"{WRITE_5M * team.cache_write_tokens:>12,.0f} "
            f"{READ * team.cache_read_tokens:>11,.0f} {summary:>10,.0f} {o.agent_calls:>12}"
        )


def verdict(runs: list[Experiment]) -> None:
    names = [o.strategy for o in runs[0].outcomes]
    print("\nspread over runs (billed input x ref, retention):" if len(runs) > 1 else "")
    mean = {}
    for name in names:
        ratios = [e.ratio(name) or 0 for e in runs]
        rets = [e.get(name).retention or 0 for e in runs]
        mean[name] = (sum(ratios) / len(ratios), sum(rets) / len(rets))
        if len(runs) > 1:
            print(
                f"  {name:<12} x ref {min(ratios):.2f}..{max(ratios):.2f}   "
                f"retention {100 * min(rets):.1f}%..{100 * max(rets):.1f}%"
            )
    ref_ret = mean[REFERENCE][1]
    candidates = [n for n in names if n != REFERENCE]
    best = min(candidates, key=lambda n: mean[n][0])
    ratio, ret = mean[best]
    complete = all(e.get(best).tasks_completed == e.get(best).tasks_total for e in runs)
    print(
        f"\nbest: {best} at {ratio:.2f} x the reference's billed input "
        f"(target <= {TARGET}); retention {100 * ret:.1f}% vs the reference's "
        f"{100 * ref_ret:.1f}%; every task completed: {'yes' if complete else 'NO'}"
    )
    print(
        "target met" if ratio <= TARGET and complete and ret >= ref_ret - 0.01 else "target NOT met"
    )


def sweep() -> None:
    """Billed input x ref over micro settings (threshold as the reference's)."""
    grid = [STRATEGIES[1]]
    for keep_recent, preserve, clear in itertools.product(
        (1, 3, 5), (["read_file"], []), (0, 5_000, 10_000, 20_000)
    ):
        name = f"k{keep_recent}-{'read' if preserve else 'all'}-c{clear}"
        overrides = {
            "keep_recent": keep_recent,
            "preserve_tools": preserve,
            "clear_at_least": clear,
        }
        grid.append(Strategy(name, "", overrides))
    with tempfile.TemporaryDirectory() as tmp:
        exp = run_experiment(WORKLOAD, threshold=THRESHOLD, strategies=tuple(grid), keep=Path(tmp))
    print("\nsweep: keep_recent k, masking read_file too (all) or not (read), clear_at_least c")
    for o in exp.outcomes:
        print(
            f"  {o.strategy:<16} x ref {exp.ratio(o.strategy):.2f}   peak {o.peak_context:>7,}"
            f"   tool output {o.tool_output_chars:>9,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            exp = run_experiment(WORKLOAD, threshold=THRESHOLD, keep=Path(tmp))
            if i == 0:
                print(render(exp))
                split(Path(tmp), exp)
        runs.append(exp)
    verdict(runs)
    if args.sweep:
        sweep()


if __name__ == "__main__":
    main()
