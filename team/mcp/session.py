"""One MCP server's client session on the pool's loop: connect, list, call, watch, restart.

The SDK's `Client` (and the stdio transport and session inside it) must be entered and
left in the same task, so each server has one long-lived supervisor task that holds the
session, waits until it is declared dead, leaves it (which stops the process: stdin
closed, then SIGTERM and SIGKILL to its group) and starts it again after a backoff from
0.5 s to 30 s. Calls run as tasks of their own on the same loop; the session multiplexes
them. A session is dead when the server's stdout ends (it exited or was killed, noticed
even when nobody is calling), when a call finds the connection closed, or when a call
timed out and a `tools/list` probe gets no answer either (the server hangs).

States: `starting` (first connect), `up`, `checking` (probing after a timeout),
`restarting` (it was up and died: calls wait for it to come back), `down` (it could not
start: calls fail at once with the reason, while it keeps being retried), `stopped`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from typing import IO, Any, NamedTuple

import anyio

from team.core.events import AgentEvent, EventSink
from team.mcp.adapter import McpTool, Reply, offered, reply_of
from team.mcp.config import McpServerConfig

log = logging.getLogger(__name__)


class Plan(NamedTuple):
    """How one stdio server process is started."""

    command: str
    args: list[str]
    cwd: str | None
    sandbox: str  # "bwrap" or "off", for `team status` and the audit trail


Launch = Callable[[str, McpServerConfig], AbstractContextManager[Plan]]
"""How a stdio server is started: (name, config with `${VAR}`s resolved) -> a context
giving its `Plan` (the same command under the sandbox, say); left when the session ends."""

INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 30.0
STABLE_S = 30.0  # up this long, a crash starts the backoff afresh
PROBE_S = 3.0
MAX_PAGES = 100  # of tools/list: a server whose cursor never ends cannot hang the start


class McpCallError(Exception):
    """A call that got no result from the tool. `kind`: unknown, down, timeout, crashed,
    refused; the message is the one line the agent reads."""

    def __init__(self, kind: str, line: str) -> None:
        super().__init__(line)
        self.kind = kind


def plain_launch(name: str, cfg: McpServerConfig) -> AbstractContextManager[Plan]:
    """The server's own command line, unconfined."""
    return nullcontext(Plan(cfg.command or "", list(cfg.args), cfg.cwd, "off"))


class ServerSession:
    """One server: its state for `team status`, its tools, and the calls to it."""

    def __init__(
        self,
        name: str,
        cfg: McpServerConfig,
        *,
        launch: Launch = plain_launch,
        environ: Mapping[str, str] | None = None,
        errlog: Callable[[], IO[Any]] | None = None,
        sink: EventSink | None = None,
        backoff: tuple[float, float] = (INITIAL_BACKOFF, MAX_BACKOFF),
    ) -> None:
        self.name, self.cfg = name, cfg
        self.launch, self.environ, self.errlog, self.sink = launch, environ or {}, errlog, sink
        self.backoff = backoff
        self.state = "starting"
        self.last_error: str | None = None
        self.restarts = 0
        self.tools: list[McpTool] = []
        self.refused: dict[str, str] = {}
        self.up_since: float | None = None
        self.sandbox = "off"  # how its process is confined (stdio): "bwrap" or "off"
        self.first_round = threading.Event()  # its first connect has succeeded or failed
        self._client: Any = None
        self._err: tuple[IO[Any], int] | None = None  # the stderr log, where this session began
        self._gen = 0
        self._ready = asyncio.Event()
        self._dead = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False

    # -- the supervisor ------------------------------------------------------------------

    async def run(self) -> None:
        """Keep the server's session up until `stop()`."""
        delay = self.backoff[0]
        while not self._stopping:
            self._gen += 1
            self._dead.clear()
            began = time.monotonic()
            was_up = await self._session(self._gen)
            if self._stopping:
                break
            self._ready.clear()
            self._client, self.up_since = None, None
            if was_up and time.monotonic() - began > STABLE_S:
                delay = self.backoff[0]
            self.state = "restarting" if was_up else "down"
            self.first_round.set()
            self.restarts += 1
            self._tell(
                "mcp_down", f"{self.name!r} is down: {self.last_error}; restarting in {delay:g}s"
            )
            self._wake.clear()
            with anyio.move_on_after(delay):
                await self._wake.wait()
            delay = min(delay * 2, self.backoff[1])
        self.state = "stopped"
        self.first_round.set()

    async def _session(self, gen: int) -> bool:
        """One session, from connect to death; True if it came up."""
        up = False
        try:
            # One scope around the whole session: its deadline bounds the start (spawn,
            # handshake, tools/list) and is lifted once the server is up. anyio refuses a
            # scope around the enter alone (scopes must close in the order they opened).
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + self.cfg.connect_timeout
                async with AsyncExitStack() as stack:
                    client = await self._connect(stack, gen)
                    tools = await _list_tools(client)
                    scope.deadline = math.inf
                    self._took(tools)
                    self._client, up = client, True
                    self.state, self.up_since = "up", time.monotonic()
                    self._ready.set()
                    self.first_round.set()
                    if self.restarts:
                        self._tell("mcp_up", f"{self.name!r} is up again ({len(self.tools)} tools)")
                    await self._dead.wait()
                    self._ready.clear()
            if scope.cancelled_caught and not up:
                self.last_error = f"did not start within {self.cfg.connect_timeout:g}s"
        except Exception as e:  # any failure to start or to run is a state, not a crash
            self.last_error = describe(e)
        if not up and (said := self._last_words()):
            closed = self.last_error in ("Connection closed", "the server exited")
            self.last_error = f"it exited: {said}" if closed else f"{self.last_error}: {said}"
        return up

    def _last_words(self) -> str | None:
        """The last line the server wrote to its stderr log in this session (why it did
        not start, in its own words: a missing module, a bad argument)."""
        if self._err is None:
            return None
        f, start = self._err
        self._err = None
        try:
            with open(f.name, "rb") as log_file:
                log_file.seek(start)
                tail = log_file.read()[-4096:].decode("utf-8", "replace")
        except (OSError, AttributeError, TypeError):
            return None
        lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
        return describe(Exception(lines[-1])) if lines else None

    async def _connect(self, stack: AsyncExitStack, gen: int) -> Any:
        from mcp import Client, StdioServerParameters

        cfg = self.cfg.resolved(self.environ)
        if cfg.transport == "stdio":
            from mcp.client.stdio import stdio_client

            plan = stack.enter_context(self.launch(self.name, cfg))
            self.sandbox = plan.sandbox
            params = StdioServerParameters(
                command=plan.command, args=plan.args, env=cfg.env, cwd=plan.cwd
            )
            err = stack.enter_context(self.errlog()) if self.errlog is not None else None
            self._err = (err, err.tell()) if err is not None else None
            raw = stdio_client(params, errlog=err) if err is not None else stdio_client(params)
            transport: Any = _watch_eof(raw, lambda: self.mark_dead(gen, "the server exited"))
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            timeout = httpx2.Timeout(cfg.connect_timeout, read=cfg.timeout + PROBE_S)
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=cfg.headers, timeout=timeout)
            )
            transport = streamable_http_client(cfg.url or "", http_client=http)
        client = Client(transport, read_timeout_seconds=cfg.connect_timeout, cache=None)
        return await stack.enter_async_context(client)

    def _took(self, tools: list[Any]) -> None:
        offer, refused = offered(self.name, tools)
        for tool, why in refused.items():
            if self.refused.get(tool) != why:  # said once, not at every restart
                self._tell("warning", f"{self.name!r}: tool {tool!r} is not offered: {why}")
        self.tools, self.refused = offer, refused

    def mark_dead(self, gen: int, why: str) -> None:
        """The session of generation `gen` is over (a later one is not touched)."""
        if gen == self._gen and not self._dead.is_set():
            self.last_error = why
            self._ready.clear()
            self._dead.set()

    def stop(self) -> None:
        """End the session and the supervisor (on the loop)."""
        self._stopping = True
        self._dead.set()
        self._wake.set()

    def _tell(self, kind: str, detail: str) -> None:
        """An event for the run's feed and events.db (a warning in the log without one)."""
        if self.sink is not None:
            self.sink.emit(AgentEvent("team", kind, f"MCP server {detail}"))
        elif kind != "mcp_up":
            log.warning("MCP server %s", detail)

    # -- calls ---------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> Reply:
        """Call `tool`; raises `McpCallError` when no result came back."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not self._ready.is_set():
            if self.state in ("down", "stopped"):
                why = f" ({self.last_error})" if self.last_error else ""
                raise McpCallError("down", f"MCP server {self.name!r} is down{why}")
            try:  # starting, or coming back after a crash: worth the wait
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                why = f" ({self.last_error})" if self.last_error else ""
                raise McpCallError(
                    "down", f"MCP server {self.name!r} was not up within {timeout:g}s{why}"
                ) from None
        client, gen = self._client, self._gen
        left = max(0.01, deadline - loop.time())
        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=left)
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                self._check(client, gen)
                raise McpCallError(
                    "timeout", f"{tool} timed out after {timeout:g}s (MCP server {self.name!r})"
                ) from None
            if e.code == CONNECTION_CLOSED:
                self.mark_dead(gen, f"the server exited during a call of {tool}")
                raise McpCallError(
                    "crashed",
                    f"MCP server {self.name!r} exited during {tool}; it is being restarted",
                ) from None
            raise McpCallError(
                "refused", f"MCP server {self.name!r} refused {tool}: {e.message}"
            ) from None
        except RuntimeError as e:  # the SDK checks structured content against outputSchema
            raise McpCallError("refused", f"MCP server {self.name!r}: {tool}: {e}") from None
        except Exception as e:  # the transport broke (HTTP gone, pipe closed)
            self.mark_dead(gen, f"the connection failed during {tool}: {describe(e)}")
            raise McpCallError(
                "crashed", f"MCP server {self.name!r}: {tool} failed: {describe(e)}"
            ) from None
        return reply_of(result)

    def _check(self, client: Any, gen: int) -> None:
        """After a timeout: hold new calls and ask the server for its tools; no answer
        within `PROBE_S` means it hangs, and it is restarted."""
        if self.state != "up" or gen != self._gen:
            return
        self.state = "checking"
        self._ready.clear()

        async def probe() -> None:
            try:
                with anyio.fail_after(PROBE_S):
                    await client.list_tools()
            except TimeoutError:
                self.mark_dead(gen, f"it hangs: no answer to tools/list within {PROBE_S:g}s")
            except Exception as e:
                self.mark_dead(gen, f"it stopped answering ({describe(e)})")
            else:
                if gen == self._gen and not self._dead.is_set():
                    self.state = "up"
                    self._ready.set()

        asyncio.get_running_loop().create_task(probe())

    def snapshot(self) -> dict[str, Any]:
        """What `team status` shows of this server."""
        up = self.up_since is not None and self.state in ("up", "checking")
        return {
            "state": self.state,
            "transport": self.cfg.transport,
            "sandbox": self.sandbox if self.cfg.transport == "stdio" else None,
            "tools": len(self.tools) if up else 0,
            "refused": dict(self.refused),
            "restarts": self.restarts,
            "last_error": self.last_error,
            "up_s": round(time.monotonic() - self.up_since, 1) if up and self.up_since else None,
        }


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


@asynccontextmanager
async def _watch_eof(transport: Any, on_eof: Callable[[], None]) -> AsyncIterator[Any]:
    """The transport with its read stream passed through, calling `on_eof` when it ends:
    a server killed while nobody calls it is restarted at once, not at the next call."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            try:
                async with send:
                    async for item in read:
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                on_eof()

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                yield receive, write
            finally:
                tg.cancel_scope.cancel()


def describe(e: BaseException) -> str:
    """One line for an exception, through anyio's exception groups."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(describe(x) for x in e.exceptions))
    if isinstance(e, FileNotFoundError) and e.filename:
        return f"{e.filename}: command not found"
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 300 else text[:299] + "…"
