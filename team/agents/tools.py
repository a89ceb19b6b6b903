"""The tools the model sees (DESIGN §5): their specs, and a `Toolbox` that runs them.

`compact`, `idle` and `read_inbox` change the agent's own loop, so the loop handles them
(`LOOP_TOOLS`); everything else runs here. `Toolbox.run` never raises: every failure
comes back as an `is_error` result with one line the model can act on.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from team.agents import fs_tools
from team.agents.sandbox import Sandbox
from team.agents.shell import run_command
from team.config import TeamConfig
from team.errors import UserError
from team.events import AgentEvent, AuditEvent, EventSink
from team.llm.base import ToolSpec
from team.mailbox import post
from team.tasks import TaskBoard
from team.workspace import Workspace

log = logging.getLogger(__name__)

LOOP_TOOLS = frozenset({"compact", "idle", "read_inbox"})
AGENT_MSG_TYPES = ("message", "task")  # shutdown types are for the runtime and the CLI
"""Tools the agent loop handles itself; `Toolbox.run` refuses them."""


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model as a `tool_result`."""

    content: str
    is_error: bool = False


class ToolInputError(UserError):
    """The model called a tool with missing or wrong-typed input."""


def _spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": props, "required": required}
    return ToolSpec(name, description, schema)


def _str(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


def tool_specs() -> list[ToolSpec]:
    """All twelve tools, with the reference design's names and input schemas."""
    return [
        _spec(
            "bash",
            "Run a shell command (bash) in the workspace root. Output (stdout+stderr) is "
            "capped and the command is killed after a timeout. When the team is "
            "sandboxed, only the workspace is writable (.team/ and .transcripts/ are "
            "not), /tmp is private, secrets are hidden and there is no network.",
            {"command": _str("The command line to run.")},
            ["command"],
        ),
        _spec(
            "read_file",
            "Read a text file in the workspace. Path relative to the workspace root.",
            {
                "path": _str("File path, relative to the workspace root."),
                "limit": {"type": "integer", "minimum": 1, "description": "Most lines to read."},
            },
            ["path"],
        ),
        _spec(
            "write_file",
            "Create or overwrite a file in the workspace (parent folders are created). "
            "Files under .team/ and .transcripts/ are off limits.",
            {
                "path": _str("File path, relative to the workspace root."),
                "content": _str("The whole new content of the file."),
            },
            ["path", "content"],
        ),
        _spec(
            "edit_file",
            "Replace old_text with new_text in a workspace file. old_text must occur "
            "exactly once: include enough surrounding text to make it unique.",
            {
                "path": _str("File path, relative to the workspace root."),
                "old_text": _str("The exact text to replace (must match once)."),
                "new_text": _str("The text to put in its place."),
            },
            ["path", "old_text", "new_text"],
        ),
        _spec(
            "compact",
            "Compact your context now: the conversation so far is archived and replaced "
            "by a summary. Use it between tasks or when the context grows large.",
            {"focus": _str("What the summary should keep in detail (optional).")},
            [],
        ),
        _spec(
            "send_message",
            "Send a message to one teammate's inbox.",
            {
                "to": _str("The teammate's name."),
                "content": _str("The message text."),
                "msg_type": {
                    "type": "string",
                    "enum": list(AGENT_MSG_TYPES),
                    "description": 'Message type (default "message").',
                },
            },
            ["to", "content"],
        ),
        _spec(
            "broadcast",
            "Send the same message to every teammate.",
            {"content": _str("The message text.")},
            ["content"],
        ),
        _spec(
            "read_inbox",
            "Read the messages waiting in your inbox now (they also arrive by themselves "
            "before your next turn).",
            {},
            [],
        ),
        _spec(
            "list_tasks",
            "List the task board as JSON: id, subject, status, owner, result.",
            {},
            [],
        ),
        _spec(
            "claim_task",
            "Claim a task: it becomes yours and in progress. Fails if another agent "
            "owns it or it is completed.",
            {"task_id": {"type": "integer", "description": "The task's id (#N)."}},
            ["task_id"],
        ),
        _spec(
            "complete_task",
            "Mark one of your tasks completed, with a short result.",
            {
                "task_id": {"type": "integer", "description": "The task's id (#N)."},
                "result": _str("What was done, in a sentence or two (optional)."),
            },
            ["task_id"],
        ),
        _spec(
            "idle",
            "End your turn and wait for new messages or tasks.",
            {},
            [],
        ),
    ]


class Toolbox:
    """Runs one agent's tools against the workspace, the mailbox and the task board."""

    def __init__(
        self,
        ws: Workspace,
        agent: str,
        config: TeamConfig,
        board: TaskBoard,
        *,
        sink: EventSink | None = None,
        bash_timeout: float = 60.0,
        output_cap: int = 50_000,
        stop: threading.Event | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        """Args: `stop`, when set, kills a running `bash` command (team shutdown);
        `sandbox`, the agent's (default: the one team.toml gives it)."""
        self.ws = ws
        self.agent = agent
        self.config = config
        self.board = board
        self.sink = sink
        self.bash_timeout = bash_timeout
        self.output_cap = output_cap
        self.stop = stop
        self.sandbox = sandbox or Sandbox.for_agent(ws, config, agent)
        self.scope = self.sandbox.scope
        # a handler returns the text of a success, or a whole ToolResult when it decides
        self._handlers: dict[str, Callable[[dict[str, Any]], str | ToolResult]] = {
            "bash": self._bash,
            "read_file": self._read_file,
            "write_file": self._write_file,
            "edit_file": self._edit_file,
            "send_message": self._send_message,
            "broadcast": self._broadcast,
            "list_tasks": self._list_tasks,
            "claim_task": self._claim_task,
            "complete_task": self._complete_task,
        }

    def run(self, name: str, input: dict[str, Any]) -> ToolResult:
        """Run one tool call. Never raises: failures are `is_error` results."""
        if name in LOOP_TOOLS:
            return ToolResult(f"{name} is handled by the agent loop, not the toolbox", True)
        handler = self._handlers.get(name)
        if handler is None:
            known = ", ".join(s.name for s in tool_specs())
            return ToolResult(f"unknown tool {name!r} (tools: {known})", True)
        if not isinstance(input, dict):
            return ToolResult(f"{name}: input must be a JSON object", True)
        try:
            out = handler(input)
            return out if isinstance(out, ToolResult) else ToolResult(out)
        except UserError as e:  # TaskError, PathError, ToolInputError, unknown agent
            return ToolResult(f"{name}: {e}", True)
        except OSError as e:
            where = f" ({e.filename})" if e.filename else ""
            return ToolResult(f"{name}: {e.strerror or e}{where}", True)
        except Exception as e:
            # A bug in a tool must cost the model one call, not the agent its thread.
            log.exception("tool %s failed for %s", name, self.agent)
            return ToolResult(f"{name}: internal error: {type(e).__name__}: {e}", True)

    # -- tools -------------------------------------------------------------------

    def _bash(self, input: dict[str, Any]) -> ToolResult:
        command = _need_str(input, "command")
        if not command.strip():
            raise ToolInputError("command is empty")
        start = time.monotonic()
        res = run_command(
            command,
            self.scope.root,
            timeout=self.bash_timeout,
            output_cap=self.output_cap,
            stop=self.stop,
            sandbox=self.sandbox,
        )
        if res.output_limit is not None:
            outcome = "output_limit"
        elif res.timed_out or res.stopped:
            outcome = "timeout" if res.timed_out else "stopped"
        else:
            outcome = "ok" if res.exit_code == 0 else "failed"
        self._audit("bash", command, outcome, start, res.total, exit_code=res.exit_code)
        killed = res.timed_out or res.stopped or res.output_limit is not None
        return ToolResult(res.render(self.bash_timeout), is_error=killed)

    def _read_file(self, input: dict[str, Any]) -> str:
        limit = _opt_int(input, "limit")
        if limit is not None and limit < 1:
            raise ToolInputError("limit must be at least 1")
        path = _need_str(input, "path")
        return fs_tools.read_text(self.scope, path, limit=limit, cap=self.output_cap)

    def _write_file(self, input: dict[str, Any]) -> str:
        path, content = _need_str(input, "path"), _need_str(input, "content")
        return self._audited_write("write_file", path, fs_tools.write_text, content)

    def _edit_file(self, input: dict[str, Any]) -> str:
        path = _need_str(input, "path")
        old, new = _need_str(input, "old_text"), _need_str(input, "new_text")
        return self._audited_write("edit_file", path, fs_tools.edit_text, old, new)

    def _audited_write(self, tool: str, path: str, write: Callable[..., str], *args: str) -> str:
        start = time.monotonic()
        try:
            out = write(self.scope, path, *args)
        except (UserError, OSError) as e:
            outcome = "refused" if isinstance(e, fs_tools.PathError) else "failed"
            self._audit(tool, path, outcome, start, 0, detail=str(e))
            raise
        size = fs_tools.resolve_inside(self.scope, path).stat().st_size
        self._audit(tool, path, "ok", start, size)
        return out

    def _audit(
        self,
        tool: str,
        target: str,
        outcome: str,
        start: float,
        size: int,
        *,
        exit_code: int | None = None,
        detail: str | None = None,
    ) -> None:
        if self.sink is None:
            return
        took = time.monotonic() - start
        self.sink.emit(
            AuditEvent(
                self.agent,
                tool,
                target,
                outcome,
                exit_code=exit_code,
                duration_s=took,
                bytes=size,
                sandbox=self.sandbox.mode,
                detail=detail,
            )
        )

    def _send_message(self, input: dict[str, Any]) -> str:
        to, content = _need_str(input, "to"), _need_str(input, "content")
        msg_type = _opt_str(input, "msg_type") or "message"
        if msg_type not in AGENT_MSG_TYPES:
            # shutdown is the runtime's business: a teammate must not stop another one
            kinds = ", ".join(AGENT_MSG_TYPES)
            raise ToolInputError(f"unknown msg_type {msg_type!r} (one of: {kinds})")
        if to == self.agent:
            raise ToolInputError("you cannot send a message to yourself")
        msg = post.send(
            self.ws, self.config, to, content, sender=self.agent, type=msg_type, sink=self.sink
        )
        return f"sent to {to} (id {msg.id})"

    def _broadcast(self, input: dict[str, Any]) -> str:
        content = _need_str(input, "content")
        sent = post.broadcast(self.ws, self.config, content, sender=self.agent, sink=self.sink)
        if not sent:
            return "no teammates to broadcast to"
        return f"broadcast to {', '.join(m.to for m in sent)}"

    def _list_tasks(self, input: dict[str, Any]) -> str:
        return json.dumps([t.model_dump() for t in self.board.list()], indent=1)

    def _claim_task(self, input: dict[str, Any]) -> str:
        task = self.board.claim(_need_int(input, "task_id"), self.agent)
        self._event("claimed", f"#{task.id} {task.subject}")
        return f"claimed task #{task.id}: {task.subject}"

    def _complete_task(self, input: dict[str, Any]) -> str:
        task_id = _need_int(input, "task_id")
        task = self.board.complete(task_id, self.agent, _opt_str(input, "result"))
        self._event("completed", f"#{task.id} {task.subject}")
        return f"completed task #{task.id}: {task.subject}"

    def _event(self, kind: str, detail: str) -> None:
        if self.sink is not None:
            self.sink.emit(AgentEvent(self.agent, kind, detail))


# -- input checks: one clear line for each way a model gets an input wrong -------------


def _need_str(input: dict[str, Any], key: str) -> str:
    if key not in input:
        raise ToolInputError(f"missing required input {key!r}")
    value = input[key]
    if not isinstance(value, str):
        raise ToolInputError(f"{key!r} must be a string, got {type(value).__name__}")
    return value


def _opt_str(input: dict[str, Any], key: str) -> str | None:
    if input.get(key) is None:
        return None
    return _need_str(input, key)


def _need_int(input: dict[str, Any], key: str) -> int:
    if key not in input:
        raise ToolInputError(f"missing required input {key!r}")
    value = input[key]
    # Models sometimes quote numbers ("3", "#3"); accept those, refuse true/1.5/"abc".
    if isinstance(value, str) and value.strip().lstrip("#").isdigit():
        return int(value.strip().lstrip("#"))
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"{key!r} must be an integer, got {value!r}")
    return value


def _opt_int(input: dict[str, Any], key: str) -> int | None:
    if input.get(key) is None:
        return None
    return _need_int(input, key)
