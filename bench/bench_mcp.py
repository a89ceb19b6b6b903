"""MCP costs (issue 28): a tool call through an MCP server over stdio against the same
tool in-process, and a team's start with 0, 1 and 5 servers.

    .venv/bin/python bench/bench_mcp.py [--calls 300] [--runs 3]

Per call, the tool is `echo` of tests/mcp_server.py, and the in-process baseline is the
same function called directly, measured in the same run. Printed: the median and p90
of each path and its ratio to the baseline:

- in-process: the tool's Python function;
- SDK in memory: the SDK's client talking to the server object in this process (what
  the protocol itself costs, without a process or a pipe);
- pool, stdio: `McpPool.call` from an agent thread to the server process;
- agent tool, stdio: what an agent's tool call costs, `Toolbox`-side (`McpTools.run`:
  the pool call, the result conversion and the audit event).

Start: a workspace with one sim agent and N copies of the test server; the time from
`Runtime.start()` until the agent has been built (its prefix holds every server's tools,
so it waited for each server's first start), and `team up --until-idle` as a process,
end to end, with nothing to do. Each figure is the median of `--runs`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import tomli_w

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from mcp_server import build  # noqa: E402  (the test server, as a module)

from team.agents.runtime.supervisor import Runtime  # noqa: E402
from team.agents.tools.mcp_tools import McpTools  # noqa: E402
from team.core.events import MemorySink  # noqa: E402
from team.llm.sim import SimModel  # noqa: E402
from team.mcp.config import McpServerConfig  # noqa: E402
from team.mcp.pool import McpPool  # noqa: E402
from team.workspace.places import Workspace  # noqa: E402

SERVER = str(ROOT / "tests" / "mcp_server.py")


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def in_process_echo():
    """The test server's own `echo`, as a plain function (the tool registered on it)."""
    server = build()
    tool = server._tool_manager.get_tool("echo")  # the function the server runs
    return lambda: tool.fn(text="hello", repeat=1)


def sdk_in_memory(n: int) -> list[float]:
    from mcp import Client

    server = build()

    async def run() -> list[float]:
        async with Client(server) as c:
            out = []
            for _ in range(n):
                t = time.perf_counter()
                await c.call_tool("echo", {"text": "hello"})
                out.append(time.perf_counter() - t)
            return out

    return anyio.run(run)


def row(name: str, samples: list[float], base: float) -> str:
    med = statistics.median(samples)
    p90 = sorted(samples)[int(len(samples) * 0.9)]
    return f"{name:<22} {med * 1e3:10.3f} ms {p90 * 1e3:10.3f} ms {med / base:12,.0f}x"


def per_call(calls: int) -> None:
    fn = in_process_echo()
    fn()
    base_samples = timed(fn, max(calls, 10_000))
    base = statistics.median(base_samples)
    print(f"per call ({calls} calls each; ratio = median / in-process median)")
    print(f"{'path':<22} {'median':>13} {'p90':>13} {'ratio':>13}")
    print(f"{'in-process':<22} {base * 1e6:10.3f} us {'':>13} {1:12,.0f}x")
    print(row("SDK in memory", sdk_in_memory(calls), base))
    cfg = McpServerConfig(command=sys.executable, args=[SERVER])
    with tempfile.TemporaryDirectory() as tmp, McpPool({"t": cfg}, logs=Path(tmp)) as pool:
        pool.wait_started()
        pool.call("t", "echo", {"text": "warm"})
        print(
            row("pool, stdio", timed(lambda: pool.call("t", "echo", {"text": "hi"}), calls), base)
        )
        tools = McpTools(pool, "alice", None, MemorySink())
        run = lambda: tools.run("mcp__t__echo", {"text": "hi"})  # noqa: E731
        print(row("agent tool, stdio", timed(run, calls), base))
        # four agents at once on the one session
        per = calls // 4
        start = time.perf_counter()
        threads = [threading.Thread(target=timed, args=(run, per)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - start
        print(f"4 threads x {per} calls on one session: {4 * per / took:,.0f} calls/s")


def workspace(root: Path, servers: int) -> Workspace:
    root.mkdir(parents=True)
    doc = {
        "team": {"name": "bench", "model": "sim"},
        "agents": [{"name": "alice", "role": "coder"}],
        "mcp_servers": {
            f"s{i}": {"command": sys.executable, "args": [SERVER]} for i in range(servers)
        },
    }
    (root / "team.toml").write_text(tomli_w.dumps(doc))
    return Workspace.at(root)


def start_once(root: Path, servers: int) -> tuple[float, float, float]:
    ws = workspace(root, servers)
    config = ws.load_config()
    runtime = Runtime(ws, config, SimModel(), MemorySink())
    t = time.perf_counter()
    runtime.start()
    while "alice" not in runtime.agents:  # built: its prefix has every server's tools
        time.sleep(0.005)
    ready = time.perf_counter() - t
    runtime.request_stop()
    runtime.wait()
    t = time.perf_counter()
    runtime.close()
    closed = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "team",
            "up",
            "--until-idle",
            "--idle-grace",
            "0",
            "--dir",
            str(root),
        ],
        check=True,
        capture_output=True,
    )
    return ready, closed, time.perf_counter() - t


def start_times(runs: int) -> None:
    print()
    print(f"team start (median of {runs})")
    head = ("servers", "agent ready", "added", "close", "team up (process)", "ratio")
    print("{:>7} {:>12} {:>8} {:>8} {:>18} {:>7}".format(*head))
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in (0, 1, 5):
            got = [start_once(Path(tmp) / f"{n}-{r}", n) for r in range(runs)]
            ready, closed, up = (statistics.median(x) for x in zip(*got, strict=True))
            base = base or (ready, up)
            print(
                f"{n:>7} {ready:>11.2f}s {ready - base[0]:>+7.2f}s {closed:>7.2f}s "
                f"{up:>17.2f}s {up / base[1]:>6.1f}x"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    per_call(args.calls)
    start_times(args.runs)


if __name__ == "__main__":
    main()
