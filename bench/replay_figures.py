"""The replay's figures on every session fixture, to check a change to its mechanics.

Run: .venv/bin/python bench/replay_figures.py OUT.json [--synthetic N ...] [LOG ...]
     .venv/bin/python bench/replay_figures.py --compare BEFORE.json AFTER.json

The first form runs `team experiment --replay LOG --json` as a user does (a subprocess,
with the `python` running this script, so `PYTHONPATH=<another tree>` measures that
tree) on the committed session fixtures (tests/fixtures/sessions, bench/fixtures), the
public logs of /work/fixtures when they are there, the LOGs given, and synthetic Claude
Code sessions of N calls (bench/bench_sessions.py's), and writes each one's result with
the timings and temporary paths taken out. The second form prints every figure that
differs between two such files and exits 1 if any does: a change to how fast a replay
runs must leave billed input, compactions, recorded-vs-replayed and the held-out error
exactly as they were.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = Path("/work/fixtures")
sys.path.insert(0, str(ROOT / "bench"))

VOLATILE = {"seconds", "workspace"}
TMP = re.compile(re.escape(tempfile.gettempdir()) + r"/[\w.-]+")


def fixtures() -> list[Path]:
    logs = sorted((ROOT / "tests/fixtures/sessions").glob("*.json*"))
    logs += sorted((ROOT / "bench/fixtures").glob("*.jsonl"))
    for sub in ("claude-code", "codex", "openhands"):
        if (PUBLIC / sub).is_dir():
            logs += sorted(p for p in (PUBLIC / sub).iterdir() if p.suffix in (".json", ".jsonl"))
    return logs


def scrub(value: Any) -> Any:
    """The result without what changes from run to run (times, temporary paths)."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        # the temporary folders of the import and of the synthetic logs
        return TMP.sub("<tmp>", value)
    return value


def figures(log: Path) -> dict[str, Any]:
    print(f"{log.name} ...", file=sys.stderr, flush=True)
    r = subprocess.run(
        [sys.executable, "-m", "team", "experiment", "--replay", str(log), "--json"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        return {"exit": r.returncode, "error": r.stderr.strip().splitlines()[-1:]}
    return scrub(json.loads(r.stdout))


def diff(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: only in {'after' if k in b else 'before'}")
            else:
                out += diff(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return [line for i, (x, y) in pairs for line in diff(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} -> {b!r}"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--synthetic", type=int, action="append", default=[], metavar="N")
    ap.add_argument("out", nargs="?", type=Path)
    ap.add_argument("logs", nargs="*", type=Path)
    args = ap.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        lines = diff(before, after)
        for line in lines:
            print(line)
        print(f"{len(before)} logs, {len(lines)} figures differ", file=sys.stderr)
        sys.exit(1 if lines else 0)
    if args.out is None:
        ap.error("OUT.json or --compare BEFORE AFTER")
    from bench_sessions import synthetic

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        logs = fixtures() + args.logs
        logs += [synthetic(Path(tmp) / f"synthetic-{n}.jsonl", n) for n in args.synthetic]
        for log in logs:
            results[log.name] = figures(log)
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"{len(results)} logs -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
