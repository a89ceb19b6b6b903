"""Importing and replaying other agents' logs (issue 10's benchmarks).

Run: .venv/bin/python bench/bench_import.py [--mb 5] [--replies 300]

1. Import a Claude Code log of about `--mb` MB (the hand-written session of
   tests/sessionlogs.py, grown with one-call-per-reply steps): read, reduce the tree to
   the final path, check, write the workspace. Target: under 2 s for 5 MB. Printed
   against a baseline measured in the same run: json.loads of every line of the file,
   the part no reader can skip.
2. Replay a `--replies`-reply session under the four strategies, calibrated. Target:
   under 10 s. Printed against the same session's import alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import sessionlogs

from team.sessions import read_session
from team.sessions.study import replay_log
from team.sessions.workspace import write_workspace

CPU: dict[int, float] = {}


def timed(fn) -> tuple[float, object]:
    """Wall seconds (and, in CPU[id of the result], CPU seconds: on a shared machine
    the wall clock also counts the others' work)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    CPU[id(out)] = time.process_time() - cpu
    return time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--replies", type=int, default=300)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-import-"))

    # -- 1. import a big log -----------------------------------------------------------
    log = tmp / "big.jsonl"
    steps = 50
    sessionlogs.claude_code(log, replies=steps)
    per_step = log.stat().st_size / steps
    steps = max(1, int(args.mb * 1_000_000 / per_step))
    sessionlogs.claude_code(log, replies=steps)
    steps = int(steps * args.mb / (log.stat().st_size / 1e6))  # the size is not linear
    sessionlogs.claude_code(log, replies=steps)
    size = log.stat().st_size / 1e6

    def parse() -> int:
        return sum(1 for ln in log.read_text().split("\n") if ln and json.loads(ln))

    base, lines = timed(parse)
    n = 0

    def do_import():
        nonlocal n
        n += 1
        session = read_session(log)
        write_workspace(session, tmp / f"ws{n}", fsync=False)
        return session

    took, session = timed(do_import)
    replies = sum(len(a.replies()) for a in session.agents)
    print(f"import: {size:.1f} MB, {lines:,} lines, {replies:,} replies on the final path")
    print(f"  json.loads of every line (baseline): {base:.2f} s")
    print(
        f"  team import: {took:.2f} s = {took / base:.1f} x baseline, "
        f"{CPU[id(session)]:.2f} s CPU (target: < 2 s)"
    )

    # -- 2. replay a long session under four strategies --------------------------------
    rlog = tmp / "replay.jsonl"
    sessionlogs.claude_code(rlog, replies=(args.replies - 7) // 2)
    base, _ = timed(lambda: write_workspace(read_session(rlog), tmp / "wsr", fsync=False))
    took, result = timed(lambda: replay_log(rlog, threshold=50_000))
    replies = sum(len(a.replies()) for a in result.session.agents)
    print(f"replay: {replies} replies, {len(result.experiment.outcomes)} strategies")
    print(f"  import alone (baseline): {base:.2f} s")
    print(
        f"  replay under every strategy: {took:.2f} s = {took / base:.1f} x baseline, "
        f"{CPU[id(result)]:.2f} s CPU (target: < 10 s)"
    )
    for o in result.experiment.outcomes:
        print(f"    {o.strategy:<12} {o.seconds:5.2f} s, billed input {o.billed_input:,.0f}")


if __name__ == "__main__":
    main()
