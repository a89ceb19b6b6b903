"""The team's MCP servers: one client session each, shared by the agents that use them.

Agents are threads; the SDK is asyncio. So the pool runs one event loop in a thread of
its own, one `ServerSession` supervisor task per server on it, and offers a blocking API
to the agent threads (`tools`, `call`, `status`), each a coroutine handed to the loop.
Every server starts at once, in parallel; an agent that is being built waits for the
first attempt of each (`tools(wait=...)`), so a team does not wait for servers before
it is up, and its agents see the tools in their first request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Coroutine, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from team.core.events import EventSink
from team.mcp.adapter import McpTool, Reply
from team.mcp.config import McpServerConfig
from team.mcp.session import Launch, McpCallError, ServerSession, plain_launch

log = logging.getLogger(__name__)

LOG_MAX_BYTES = 5 * 1024 * 1024  # a server's stderr log is rotated once past this
SLACK_S = 10.0  # beyond a call's own timeout, before the agent stops waiting for the loop


class McpPool:
    """The client sessions of `servers` (disabled ones left out).

    Args:
        launch: how a stdio server is started (the sandbox wraps its command here).
        environ: where `${VAR}` in the configs comes from (`team up`'s environment).
        logs: a folder for each stdio server's stderr (`<name>.log`); None: ours.
        sink: where server up/down events go (else down is a logged warning).
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig],
        *,
        launch: Launch = plain_launch,
        environ: Mapping[str, str] | None = None,
        logs: Path | None = None,
        sink: EventSink | None = None,
        backoff: tuple[float, float] | None = None,
    ) -> None:
        self.sessions = {
            name: ServerSession(
                name,
                cfg,
                launch=launch,
                environ=environ,
                errlog=(lambda n=name: _log_file(logs, n)) if logs is not None else None,
                sink=sink,
                **({"backoff": backoff} if backoff else {}),
            )
            for name, cfg in servers.items()
            if not cfg.disabled
        }
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> McpPool:
        """Start the loop and every server; returns at once (see `tools(wait=)`)."""
        with self._lock:
            if self._thread is not None:
                return self
            running = threading.Event()
            self._thread = threading.Thread(
                target=self._run_loop, args=(running,), name="mcp-servers", daemon=True
            )
            self._thread.start()
            running.wait()
        self._submit(self._start_all()).result(10)
        return self

    def close(self, timeout: float = 15.0) -> None:
        """Stop every server (each its process group) and the loop."""
        loop = self._loop
        if loop is None:
            return
        try:
            self._submit(self._stop_all()).result(timeout)
        except (concurrent.futures.TimeoutError, RuntimeError):
            log.warning("MCP servers did not all stop within %gs", timeout)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
        self._loop, self._thread = None, None

    def __enter__(self) -> McpPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- for agent threads ---------------------------------------------------------------

    def wait_started(self, timeout: float | None = None) -> None:
        """Until every server has come up or failed its first start."""
        for s in self.sessions.values():
            s.first_round.wait(timeout if timeout is not None else s.cfg.connect_timeout + 5)

    def tools(self, *, wait: bool = True) -> list[McpTool]:
        """The tools of every server that is up, as they were listed at its connect;
        `wait` first for every server's first start."""
        if wait:
            self.wait_started()
        return [t for s in self.sessions.values() if s.tools for t in s.tools]

    def call(
        self, server: str, tool: str, arguments: dict[str, Any], timeout: float | None = None
    ) -> Reply:
        """Call `tool` of `server` from any thread but the pool's own.

        Raises:
            McpCallError: no result came back (unknown server, down, timeout, crashed,
                refused), with the line for the agent.
        """
        s = self.sessions.get(server)
        if s is None:
            raise McpCallError("unknown", f"no MCP server named {server!r}")
        timeout = s.cfg.timeout if timeout is None else timeout
        if self._loop is None:
            raise McpCallError("down", f"MCP server {server!r} is not running")
        future = self._submit(s.call(tool, arguments, timeout))
        try:
            return future.result(timeout + SLACK_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpCallError("timeout", f"{tool} timed out after {timeout:g}s") from None

    def status(self) -> dict[str, dict[str, Any]]:
        """Each server's state, tools, restarts and last error (plain data, for JSON)."""
        return {name: s.snapshot() for name, s in self.sessions.items()}

    # -- the loop ------------------------------------------------------------------------

    def _submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        loop = self._loop
        if loop is None or threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("the MCP pool's loop is not running, or this is its thread")
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def _run_loop(self, running: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        running.set()
        try:
            loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    async def _start_all(self) -> None:
        for name, s in self.sessions.items():
            self._tasks.append(asyncio.create_task(s.run(), name=f"mcp-{name}"))

    async def _stop_all(self) -> None:
        for s in self.sessions.values():
            s.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


@contextlib.contextmanager
def _log_file(folder: Path, name: str) -> Iterator[IO[Any]]:
    """The server's stderr log, appended; the previous one kept as `.1` once it is large."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.log"
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_MAX_BYTES:
            path.replace(path.with_suffix(".log.1"))
    with open(path, "ab") as f:
        yield f
