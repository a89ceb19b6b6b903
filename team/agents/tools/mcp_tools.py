"""The MCP tools of one agent: the team's servers' tools its `mcp` list allows, called
through the team's pool, each call in the audit trail.

The toolbox runs them like its own tools (`Toolbox.run`), so what every tool result
goes through applies to them too; a call that gets no result (the server is down,
timed out, crashed) is an `is_error` result with one line the model can act on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from team.agents.tools.input import ToolResult
from team.core.events import AuditEvent, EventSink
from team.llm.base import ToolSpec
from team.mcp.adapter import McpTool, allowed
from team.mcp.pool import McpPool
from team.mcp.session import McpCallError

TARGET_CHARS = 2000  # of a call's arguments kept in the audit trail


class McpTools:
    """The MCP tools `agent` may call (`patterns`: its `mcp` list; None for every tool)."""

    def __init__(
        self, pool: McpPool, agent: str, patterns: list[str] | None, sink: EventSink | None
    ) -> None:
        self.pool = pool
        self.agent = agent
        self.sink = sink
        mine = allowed(patterns, pool.tools())
        self.tools: dict[str, McpTool] = {t.model_name: t for t in mine}
        self.specs = [ToolSpec(t.model_name, t.description, t.input_schema) for t in mine]
        """As the model sees them: they join the agent's fixed prefix."""

    def handles(self, name: str) -> bool:
        return name in self.tools

    def handler(self, name: str) -> Callable[[dict[str, Any]], ToolResult]:
        """What the toolbox runs for `name` (one of `handles`)."""
        return lambda input: self.run(name, input)

    def run(self, name: str, input: dict[str, Any]) -> ToolResult:
        tool = self.tools[name]
        start = time.monotonic()
        try:
            reply = self.pool.call(tool.server, tool.name, input)
        except McpCallError as e:
            self._audit(tool, input, e.kind, start, 0, str(e))
            return ToolResult(f"{name}: {e}", True)
        detail = reply.text[:300] if reply.is_error else None
        self._audit(tool, input, "error" if reply.is_error else "ok", start, reply.size, detail)
        return ToolResult(reply.text, reply.is_error, images=reply.images)

    def _audit(
        self,
        tool: McpTool,
        input: dict[str, Any],
        outcome: str,
        start: float,
        size: int,
        detail: str | None,
    ) -> None:
        if self.sink is None:
            return
        args = json.dumps(input, ensure_ascii=False, default=str)
        if len(args) > TARGET_CHARS:
            args = args[: TARGET_CHARS - 1] + "…"
        session = self.pool.sessions.get(tool.server)
        self.sink.emit(
            AuditEvent(
                self.agent,
                tool.model_name,
                f"{tool.name} {args}",
                outcome,
                duration_s=time.monotonic() - start,
                bytes=size,
                sandbox=session.sandbox if session is not None else "off",
                detail=detail,
                server=tool.server,
            )
        )
