"""Real sessions as they come (issue 26): how long a replay takes, and what reading costs.

Run: .venv/bin/python bench/bench_sessions.py [--calls 1200] [LOG ...]

For each LOG (default: the committed fixtures' largest, tests/fixtures/sessions/) and a
synthetic Claude Code 2.1.x session of 2,000+ lines and 100M+ recorded input tokens
(compacting as the log did every ~75 calls), it runs `team experiment --replay` as a
user does, in a subprocess, and prints the wall time and the CPU time it took over all
strategies (the target: under 10 s), the peak memory, and the replay's own figures
(kept / recorded requests, `recorded` strategy over the log, held-out error). Progress
goes to stderr. The machine's load is printed with it: wall time on a busy 2-core
machine is not CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from session_formats import Claude  # noqa: E402

TARGET_SECONDS = 10.0


def synthetic(path: Path, calls: int) -> Path:
    """A long 2.1.x session: big results, hook progress, a compaction every 75 calls."""
    c = Claude("2.1.39")
    c.user("Refactor the whole package, module by module.")
    result = "    x = compute(x)  # a line of the module\n" * 150
    for k in range(calls):
        if k and k % 75 == 0:
            c.compact("Summary: modules done so far, what is left. " + "detail " * 400)
            c.user("Continue.")
        a = {
            "type": "tool_use",
            "id": f"toolu_{k:06d}",
            "name": "Read",
            "input": {"file_path": f"/p/m{k}.py"},
        }
        calls_ = c.reply(f"msg_{k:06d}", [{"type": "text", "text": f"Module {k}."}, a])
        c.results(calls_, [a["id"]], result)
    return c.write(path)


def run(log: Path) -> dict:
    print(f"replaying {log.name} ...", file=sys.stderr, flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "team", "experiment", "--replay", str(log), "--json"],
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        return {"log": log.name, "error": r.stderr.strip().splitlines()[-1:]}
    out = json.loads(r.stdout)
    imp = out["import"]
    rows = {o["strategy"]: o for o in out["outcomes"]}
    log_input = (out["recorded"] or {}).get("input_tokens_total") or 0
    rec = rows.get("recorded", {}).get("input_tokens_logged", 0)
    return {
        "log": log.name,
        "lines": sum(1 for _ in log.open("rb")),
        "mb": log.stat().st_size / 1e6,
        "recorded_input": log_input,
        "wall": wall,
        "cpu": cpu,
        "peak_mb": after.ru_maxrss / 1024,
        "kept": f"{imp['requests_kept']} / {imp['requests_recorded']}",
        "recorded_x_log": rec / log_input if log_input else None,
        "held_out": out["held_out"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1200)
    ap.add_argument("logs", nargs="*", type=Path)
    args = ap.parse_args()
    logs = args.logs or [
        max((ROOT / "tests/fixtures/sessions").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"writing a synthetic session of {args.calls} calls ...", file=sys.stderr)
        logs.append(synthetic(Path(tmp) / f"synthetic-{args.calls}.jsonl", args.calls))
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        for log in logs:
            r = run(log)
            if "error" in r:
                print(f"{r['log']}: error {r['error']}")
                continue
            h = r["held_out"]
            held = f"{h['total_error']:.1%} total, p90 {h['p90']:.1%}" if h else "-"
            x = f"{r['recorded_x_log']:.2f}" if r["recorded_x_log"] else "-"
            verdict = "ok" if r["cpu"] < TARGET_SECONDS else "OVER"
            print(
                f"{r['log']}: {r['lines']:,} lines, {r['mb']:.1f} MB, recorded input "
                f"{r['recorded_input']:,}; every strategy in {r['wall']:.1f} s wall, "
                f"{r['cpu']:.1f} s CPU ({verdict} against {TARGET_SECONDS:.0f} s); peak "
                f"{r['peak_mb']:.0f} MB; kept {r['kept']} requests; recorded {x} x log; "
                f"held-out {held}"
            )


if __name__ == "__main__":
    main()
