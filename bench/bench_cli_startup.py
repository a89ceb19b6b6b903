"""CLI startup cost: what one `team ...` command costs before it does any work (issues
8 and 27).

    .venv/bin/python bench/bench_cli_startup.py [--runs 7] [--imports]

Each command runs `--runs` times in a fresh interpreter, in a workspace made by
`team init`, interleaved with the baseline `python -c pass` so that a busy machine slows
both alike. Printed per command: the median CPU seconds (user + sys of the child) and wall
seconds, and both as ratios against the baseline. CPU is the figure to compare on a
shared machine; wall also counts the others' work.

Targets (issue 27), as CPU ratios to the baseline: <= 3x for `--help`, <= 4x for `send`
and `status`, <= 10x for `team up` without an API key (it must say so before importing
the SDK or the runtime). The `target` column says which rows have one and whether they
meet it. Two probes: `import click` (the parser, a floor no command goes below) and
`from pydantic import BaseModel` (what the commands that validate team.toml or read
tasks pay; send, broadcast, inbox and status never import it, docs/design.md "CLI").
Every command stays out of the runtime and the Anthropic SDK unless it runs a team
(`--imports` lists, per command, which of the heavy packages it loaded).

The team's modules are byte-compiled first (as an installed package is): a shell with
PYTHONDONTWRITEBYTECODE=1 would otherwise compile them again in every run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
BASELINE = ("-c", "pass")
COMMANDS: list[tuple[str, ...]] = [
    ("--help",),
    ("send", "--help"),
    ("send", "alice", "hello"),
    ("inbox", "alice"),
    ("assign", "bob", "write the tests"),
    ("tasks",),
    ("tasks", "--json"),
    ("task", "show", "1"),
    ("status",),
    ("status", "--json"),
    ("up", "--model", "claude-sonnet-4-5"),
    ("audit",),
    ("down",),
    ("log", "alice"),
    ("stats", "--json"),
]
TARGETS = {
    ("--help",): 3.0,
    ("send", "alice", "hello"): 4.0,
    ("status",): 4.0,
    ("status", "--json"): 4.0,
    ("up", "--model", "claude-sonnet-4-5"): 10.0,
}
"""CPU ratio to `python -c pass` each command should stay under (issue 27)."""
PROBES = [("import click",), ("from pydantic import BaseModel",)]
HEAVY = (
    "pydantic",
    "anthropic",
    "httpx",
    "redis",
    "rich",
    "watchfiles",
    "matplotlib",
    "team.agents.runtime.supervisor",
    "team.agents.loop",
    "team.compaction.compactor",
    "team.study.stats",
)


def run(argv: list[str], cwd: Path, env: dict) -> tuple[float, float, int]:
    """(CPU seconds of the child, wall seconds, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, r.returncode


def loaded(cmd: tuple[str, ...], cwd: Path, env: dict) -> list[str]:
    """The heavy modules a command imports (run with the module list dumped at exit)."""
    probe = (
        "import atexit, sys, runpy\n"
        "out = sys.argv.pop(1)\n"
        "atexit.register(lambda: open(out, 'w').write('\\n'.join(sys.modules)))\n"
        "sys.argv[0] = 'team'\n"
        "runpy.run_module('team', run_name='__main__', alter_sys=True)\n"
    )
    out = cwd / ".modules"
    subprocess.run([PY, "-c", probe, str(out), *cmd], cwd=cwd, env=env, capture_output=True)
    mods = set(out.read_text().split())
    return [h for h in HEAVY if h in mods]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--imports", action="store_true", help="list the heavy modules loaded")
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    subprocess.run([PY, "-m", "compileall", "-q", str(root / "team")], check=True)
    ws = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    # no credentials anywhere the SDK looks: `team up` on a real model must refuse
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(TEAM_DIR=str(ws), HOME=str(ws), COLUMNS="80")
    init = [PY, "-m", "team", "init", "--agents", "alice:coder,bob:tester", "--dir", str(ws)]
    subprocess.run(init, check=True, capture_output=True)

    base_cpu: list[float] = []
    base_wall: list[float] = []
    rows = []
    argvs = [(cmd, [PY, "-m", "team", *cmd]) for cmd in COMMANDS]
    argvs += [(("probe: " + code,), [PY, "-c", code]) for (code,) in PROBES]
    for cmd, argv in argvs:
        cpus, walls = [], []
        for _ in range(args.runs):
            c, w, _ = run([PY, *BASELINE], ws, env)
            base_cpu.append(c)
            base_wall.append(w)
            c, w, code = run(argv, ws, env)
            cpus.append(c)
            walls.append(w)
        rows.append((cmd, statistics.median(cpus), statistics.median(walls), code))
    bc, bw = statistics.median(base_cpu), statistics.median(base_wall)
    print(f"baseline `python -c pass`: {bc:.3f} s CPU, {bw:.3f} s wall (median)")
    head = f"{'command':<36} {'cpu s':>6} {'x base':>7} {'wall s':>7} {'x base':>7}  exit  target"
    print(head)
    for cmd, c, w, code in rows:
        name = " ".join(cmd)
        goal = TARGETS.get(cmd)
        verdict = "" if goal is None else f"<= {goal:g}x " + ("met" if c / bc <= goal else "MISSED")
        print(f"{name:<36} {c:6.3f} {c / bc:7.1f} {w:7.3f} {w / bw:7.1f}  {code:>4}  {verdict}")
    total = sum(c for cmd, c, _, _ in rows if not cmd[0].startswith("probe"))
    print(f"sum of medians: {total:.2f} s CPU over {len(COMMANDS)} commands")
    if args.imports:
        print("\nheavy modules loaded:")
        for cmd in COMMANDS:
            print(f"  {' '.join(cmd):<26} {', '.join(loaded(cmd, ws, env)) or '-'}")


if __name__ == "__main__":
    main()
