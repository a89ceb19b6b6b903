"""Compaction storms (issue 25): compactions per 100 calls, and billed input over
manual-only (micro and auto off), on one-call-per-reply sessions with a large fixed
prefix and on every session fixture, as ratios measured in the same run.

live-N: one agent driven through the real `Compactor` on the simulator (its prompt
cache, its summaries), 300 replies of one tool call each and ~200k characters of
output (`bench_cache.long`), with a system prompt of N tokens.

Each session is replayed as `team experiment --replay` replays it (calibrated to its
recorded usage, the recorded fixed prefix billed on every call) under `manual-only`,
`reference` and `default`:

- prefix-N: Claude Code-shaped sessions of `bench/session_fixtures.py`, 200 replies,
  one tool call each, 200k characters of tool output, with a fixed prefix of N tokens
  (Claude Code's own is ~21k; many MCP schemas or a long role file make 40-100k);
- the committed fixtures (`bench/fixtures/*.jsonl`) and the 300-reply ones;
- with `--real DIR`, every log under DIR that the readers can read (others are listed
  with the reason), e.g. the public sessions in /work/fixtures (not committed).

Columns: calls; the calibrated fixed prefix; auto compactions per 100 calls for the
reference and the default; billed input of each over manual-only; and two lower bounds
over manual-only, computed per call from the manual-only replay (`lower_bound`):
`floor` is what any policy that caches what it sends must bill (every warm call reads
the fixed prefix at 0.1x, a call after a pause longer than the cache lifetime writes it
again at 1.25x, every new token is written once at 1.25x; no summary, nothing else
kept), `strict` the same with every write at the 1x of uncached input (no policy at
all bills less). Neither counts what a compaction costs, so both are below what any
compaction reaches. Targets: default <= 1.0x manual-only on every session; no storm
(default autos per 100 calls well under 100 whatever the prefix).

    .venv/bin/python bench/bench_storm.py [--real /work/fixtures] [--threshold 50000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import bench_cache as bc
import session_fixtures as sf

from team.core.events import CompactionEvent, MemorySink
from team.llm.prices import READ, write_multiplier
from team.sessions.study import replay_log
from team.study.experiment import STRATEGIES
from team.study.stats import load
from team.workspace.config import CompactionConfig
from team.workspace.places import Workspace

NAMES = ("manual-only", "reference", "default")
PREFIXES = (21_000, 40_000, 60_000, 100_000)


def prefix_shapes(folder: Path) -> list[Path]:
    out = []
    for i, tokens in enumerate(PREFIXES):
        shape = sf.Shape(f"prefix-{tokens // 1000}k", 200, 200_000, 41 + i, prefix_tokens=tokens)
        out.append(sf.write(shape, folder))
    return out


def live(threshold: int) -> None:
    print(f"\nlive: one agent on the simulator, 300 replies of one call (threshold {threshold:,})")
    print(f"{'system prompt':<16} {'ref auto/100  x':>15} {'def auto/100  x':>15}")
    rounds = bc.long()
    configs = {
        "manual-only": CompactionConfig(micro=False, auto=False, threshold=threshold),
        "reference": CompactionConfig(micro_policy="eager", threshold=threshold),
        "default": CompactionConfig(threshold=threshold),
    }
    for tokens in PREFIXES:
        system = "You are 'alice', a coder on team bench. " + "x" * (tokens * 4)
        billed, autos = {}, {}
        for name, cfg in configs.items():
            sink = MemorySink()
            billed[name] = bc.billed(bc.drive(rounds, cfg, system=system, sink=sink))
            autos[name] = sum(e.layer == "auto" and e.success for e in sink.of(CompactionEvent))
        cells = [
            f"{100 * autos[n] / len(rounds):>6.1f} {billed[n] / billed['manual-only']:>6.2f}"
            for n in ("reference", "default")
        ]
        print(f"{f'live-{tokens // 1000}k':<16} {cells[0]:>15} {cells[1]:>15}")


def fixtures() -> list[Path]:
    for shape in sf.SHAPES:
        if not (sf.HERE / f"{shape.name}.jsonl").exists():
            sf.write(shape, sf.HERE)
    return sorted(sf.HERE.glob("*.jsonl"))


def lower_bound(rows: list[dict], fixed: dict[str, int]) -> tuple[float, float]:
    """(floor, strict): the least any policy could bill for the agent calls of `rows`.

    `rows` are the manual-only replay's model calls, in order; `fixed` each agent's
    calibrated fixed prefix. Manual-only sends everything, so each call's context less
    the previous one's is what is new in it (after one of the recorded manual
    compactions, which every strategy replays too, all of it past the prefix is): any
    policy sends that at least once. A call that read less than the prefix from the
    cache found it cold (the recorded pause is the same under every strategy), so any
    policy writes the prefix again there; a warm one reads it at least.
    """
    floor = strict = 0.0
    last: dict[str, int] = {}
    for r in rows:
        if r.get("purpose") != "agent":
            continue
        agent = str(r.get("agent"))
        prefix = fixed.get(agent, 0)
        read = int(r.get("cache_read_tokens") or 0)
        context = read + int(r.get("input_tokens") or 0) + int(r.get("cache_write_tokens") or 0)
        before = last.get(agent)
        new = context - before if before is not None and context >= before else context - prefix
        last[agent] = context
        write = write_multiplier(r.get("cache_ttl") or "5m")  # type: ignore[arg-type]
        cold = read < prefix
        floor += (write if cold else READ) * prefix + write * max(0, new)
        strict += (1.0 if cold else READ) * prefix + max(0, new)
    return floor, strict


def row(path: Path, threshold: int) -> tuple[str, list[float]] | str:
    """The printed row of one session, and its (reference, default, floor, strict)
    ratios over manual-only; or why not."""
    chosen = tuple(s for s in STRATEGIES if s.name in NAMES)
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as keep:
        try:
            r = replay_log(
                path, threshold=threshold, strategies=chosen, repair=True, keep=Path(keep)
            )
        except Exception as e:  # a reader that cannot read it yet: say so, go on
            return f"{path.name:<44} not replayed: {type(e).__name__}: {str(e)[:70]}"
        rows = load(Workspace.at(Path(keep) / "manual-only").events_db).model_calls
    exp = r.experiment
    manual = exp.get("manual-only").billed_input
    calls = exp.get("default").agent_calls or 1
    prefix = "/".join(f"{c.prefix_tokens // 1000}k" for c in r.calibration.values())
    bounds = lower_bound(rows, {a: c.prefix_tokens for a, c in r.calibration.items()})
    cells, ratios = [], []
    for name in ("reference", "default"):
        o = exp.get(name)
        autos = o.compactions.get("auto", 0)
        ratio = o.billed_input / manual if manual else float("nan")
        ratios.append(ratio)
        cells.append(f"{100 * autos / calls:>6.1f} {ratio:>6.2f}")
    ratios += [b / manual if manual else float("nan") for b in bounds]
    line = (
        f"{path.name[:44]:<44} {calls:>5} {prefix[:14]:>14} {cells[0]:>13} {cells[1]:>13}"
        f" {ratios[2]:>6.2f} {ratios[3]:>6.2f}  ({time.monotonic() - start:.0f}s)"
    )
    return line, ratios


def table(title: str, paths: list[Path], threshold: int) -> None:
    print(f"\n{title} (threshold {threshold:,})")
    head = ("session", "calls", "prefix", "ref auto/100  x", "def auto/100  x", "floor", "strict")
    print(
        f"{head[0]:<44} {head[1]:>5} {head[2]:>14} {head[3]:>13} {head[4]:>13} {head[5]:>6}"
        f" {head[6]:>6}"
    )
    ratios = []
    for p in paths:
        out = row(p, threshold)
        if isinstance(out, str):
            print(out)
            continue
        print(out[0])
        ratios.append(out[1])
    if ratios:
        for i, what in ((1, "default"), (2, "floor"), (3, "strict")):
            column = [r[i] for r in ratios]
            print(
                f"{what} x manual-only over {len(column)}: mean {statistics.mean(column):.2f}, "
                f"max {max(column):.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=Path, help="also every session log under this folder")
    parser.add_argument("--threshold", type=int, default=50_000)
    args = parser.parse_args()
    live(args.threshold)
    with tempfile.TemporaryDirectory() as tmp:
        table("one call per reply, a large fixed prefix", prefix_shapes(Path(tmp)), args.threshold)
    table("session fixtures", fixtures(), args.threshold)
    if args.real:
        logs = sorted(p for p in args.real.rglob("*") if p.is_file() and p.suffix != ".md")
        logs = [p for p in logs if p.name != "manifest.json"]
        table(f"sessions under {args.real}", logs, args.threshold)


if __name__ == "__main__":
    main()
