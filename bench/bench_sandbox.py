"""Sandbox benchmark: what bubblewrap and the limits cost each `bash` tool call.

    .venv/bin/python bench/bench_sandbox.py [--calls N]

The same commands through the same `Toolbox.run("bash", ...)`, with sandbox = "off" and
with sandbox = "bwrap", alternating call by call in the same run so that a busy machine
weighs on both alike. Prints the median and p90 latency of each and the ratio and the
difference of the medians. The figure that matters is the difference: a fixed cost per
command, small next to a model call (seconds).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from team.agents.tools.toolbox import Toolbox
from team.sandbox.bwrap import detect
from team.tasks import TaskBoard
from team.teamwork import Crew
from team.workspace.config import parse_config
from team.workspace.places import Workspace

COMMANDS = ["true", "echo hello", "ls -la", "grep -c def src/app.py", "cat src/app.py | wc -l"]


def toolbox(ws: Workspace, mode: str) -> Toolbox:
    config = parse_config({"team": {"sandbox": mode}, "agents": [{"name": "a", "role": "r"}]})
    return Toolbox(Crew(ws, config, TaskBoard(ws.tasks_dir)), "a")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100, help="calls per mode")
    args = parser.parse_args()
    avail = detect()
    if not avail.usable:
        raise SystemExit(f"bench_sandbox: {avail.problem}")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.at(tmp)
        (ws.root / "src").mkdir()
        (ws.root / "src" / "app.py").write_text("def f():\n    return 1\n" * 200)
        boxes = {"off": toolbox(ws, "off"), "bwrap": toolbox(ws, "bwrap")}
        assert boxes["bwrap"].sandbox.mode == "bwrap" and boxes["off"].sandbox.mode == "off"
        times: dict[str, list[float]] = {"off": [], "bwrap": []}
        for box in boxes.values():  # warm the page cache and the probe
            box.run("bash", {"command": "true"})
        for i in range(args.calls):
            command = COMMANDS[i % len(COMMANDS)]
            order = ("off", "bwrap") if i % 2 == 0 else ("bwrap", "off")
            for mode in order:
                t0 = time.perf_counter()
                res = boxes[mode].run("bash", {"command": command})
                times[mode].append(time.perf_counter() - t0)
                assert not res.is_error, res.content
    med = {m: statistics.median(t) * 1000 for m, t in times.items()}
    p90 = {m: statistics.quantiles(t, n=10)[-1] * 1000 for m, t in times.items()}
    print(f"bash tool latency, {args.calls} calls per mode, alternating ({avail.bwrap})")
    for mode in ("off", "bwrap"):
        print(f"  sandbox = {mode!r:8} median {med[mode]:7.1f} ms   p90 {p90[mode]:7.1f} ms")
    ratio, extra = med["bwrap"] / med["off"], med["bwrap"] - med["off"]
    print(f"  ratio bwrap/off (medians): {ratio:.2f}x   difference: {extra:+.1f} ms")


if __name__ == "__main__":
    main()
