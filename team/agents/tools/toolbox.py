"""The tools the model sees: their specs, and a `Toolbox` that runs them.

Names and schemas are a contract (docs/design.md, "What the model sees").

`compact`, `idle` and `read_inbox` change the agent's own loop, so the loop handles them
(`LOOP_TOOLS`); everything else runs here. `Toolbox.run` never raises: every failure
comes back as an `is_error` result with one line the model can act on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from team.agents.session.results import ResultNotFound, Results
from team.agents.tools import fs_tools, git_tool
from team.agents.tools.input import ToolInputError, ToolResult, spec, text
from team.agents.tools.input import need_str as _need_str
from team.agents.tools.input import opt_int as _opt_int
from team.agents.tools.input import opt_str as _opt_str
from team.agents.tools.mcp_tools import McpTools
from team.agents.tools.shell import run_command
from team.agents.tools.task_specs import task_specs
from team.agents.tools.task_tools import TaskTools
from team.backends import post
from team.core.errors import UserError
from team.core.events import AuditEvent
from team.llm.base import ToolSpec
from team.sandbox.bwrap import Sandbox
from team.teamwork import Crew, Teamwork
from team.workspace.config import AgentConfig, CompactionConfig, TeamConfig
from team.workspace.places import Workspace

log = logging.getLogger(__name__)

LOOP_TOOLS = frozenset({"compact", "idle", "read_inbox"})
AGENT_MSG_TYPES = ("message", "task")  # shutdown types are for the runtime and the CLI
"""Tools the agent loop handles itself; `Toolbox.run` refuses them."""


def tool_specs(agent: AgentConfig | None = None, team: TeamConfig | None = None) -> list[ToolSpec]:
    """The tools `agent` sees: the reference design's twelve, with their names and input
    schemas, plus the board tools (create_task, update_task; submit_plan under plan
    approval, review_plan for the lead)."""
    git = [GIT_COMMIT_SPEC] if offers_git_commit(agent, team) else []
    return [*_base_specs(), *git, *task_specs(agent, team)]


def offers_git_commit(agent: AgentConfig | None, team: TeamConfig | None) -> bool:
    """`git_commit` is offered in the shared workspace with the sandbox not turned off
    for the agent: there its `.git` is read-only to the agent's own commands. A worktree
    agent commits with its own git; an unsandboxed one can too."""
    if agent is None or team is None or team.team.isolation != "shared":
        return False
    return (agent.sandbox or team.team.sandbox) != "off"


GIT_COMMIT_SPEC = spec(
    "git_commit",
    "Commit in the workspace's git repository (its .git is read-only to your own "
    "commands, so commit here). With paths: those files and folders are staged (new, "
    "changed or deleted) and committed; without: every tracked file that changed. You "
    "are the author. Hooks do not run.",
    {
        "message": text("The commit message."),
        "paths": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Files or folders to commit, relative to the workspace root.",
        },
    },
    ["message"],
)


def _base_specs() -> list[ToolSpec]:
    return [
        spec(
            "bash",
            "Run a shell command (bash) in the workspace root. Output (stdout+stderr) is "
            "capped and the command is killed after a timeout. When the team is "
            "sandboxed, only the workspace is writable (.team/ and .transcripts/ are "
            "not), /tmp is private, secrets are hidden and there is no network.",
            {"command": text("The command line to run.")},
            ["command"],
        ),
        spec(
            "read_file",
            "Read a text file in the workspace. Path relative to the workspace root.",
            {
                "path": text("File path, relative to the workspace root."),
                "limit": {"type": "integer", "minimum": 1, "description": "Most lines to read."},
            },
            ["path"],
        ),
        spec(
            "read_result",
            "Read part of a tool result, message or note that was too long to show whole "
            "(its head and tail were shown, with its id). offset and limit count characters.",
            {
                "id": text("The id the cut result names."),
                "offset": {"type": "integer", "minimum": 0, "description": "First character."},
                "limit": {"type": "integer", "minimum": 1, "description": "Most characters."},
            },
            ["id"],
        ),
        spec(
            "write_file",
            "Create or overwrite a file in the workspace (parent folders are created). "
            "Files under .team/ and .transcripts/ are off limits.",
            {
                "path": text("File path, relative to the workspace root."),
                "content": text("The whole new content of the file."),
            },
            ["path", "content"],
        ),
        spec(
            "edit_file",
            "Replace old_text with new_text in a workspace file. old_text must occur "
            "exactly once: include enough surrounding text to make it unique.",
            {
                "path": text("File path, relative to the workspace root."),
                "old_text": text("The exact text to replace (must match once)."),
                "new_text": text("The text to put in its place."),
            },
            ["path", "old_text", "new_text"],
        ),
        spec(
            "compact",
            "Compact your context now: the conversation so far is archived and replaced "
            "by a summary. Use it between tasks or when the context grows large.",
            {"focus": text("What the summary should keep in detail (optional).")},
            [],
        ),
        spec(
            "send_message",
            "Send a message to one teammate's inbox.",
            {
                "to": text("The teammate's name."),
                "content": text("The message text."),
                "msg_type": {
                    "type": "string",
                    "enum": list(AGENT_MSG_TYPES),
                    "description": 'Message type (default "message").',
                },
            },
            ["to", "content"],
        ),
        spec(
            "broadcast",
            "Send the same message to every teammate.",
            {"content": text("The message text.")},
            ["content"],
        ),
        spec(
            "read_inbox",
            "Read the messages waiting in your inbox now (they also arrive by themselves "
            "before your next turn).",
            {},
            [],
        ),
        spec(
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
        crew: Crew,
        agent: str,
        *,
        root: Path | None = None,
        sandbox: Sandbox | None = None,
        stop: threading.Event | None = None,
        bash_timeout: float = 60.0,
        output_cap: int = 50_000,
        mcp: McpTools | None = None,
        results: Results | None = None,
    ) -> None:
        """Args:
        crew: the team it works in (workspace, team.toml, board, events, inboxes).
        root: where this agent works (bash's folder, the file tools' root): the
            workspace, or the agent's own git worktree. Defaults to the workspace root.
        sandbox: the agent's (default: the one team.toml gives it, writable at `root`).
        stop: when set, kills a running `bash` command (team shutdown).
        mcp: the MCP tools this agent may call (team.agents.tools.mcp_tools).
        results: where the agent's cut results are kept whole (`read_result`); default
            its results folder under the workspace.
        """
        ws, config = crew.ws, crew.config
        self.ws = ws
        self.agent = agent
        self.config = config
        self.sink = crew.sink
        self.bash_timeout = bash_timeout
        self.output_cap = output_cap
        self.stop = stop
        self.inboxes = crew.inboxes
        self.mcp = mcp
        if results is None:
            known = agent in config.names()
            cap = (config.compaction_for(agent) if known else CompactionConfig()).result_cap
            results = Results(ws.results_dir(agent), cap)
        self.results = results
        if sandbox is None:
            own = root is not None and Path(root).resolve() != ws.root
            protected = Workspace(Path(root)).protected if own else None
            sandbox = Sandbox.for_agent(ws, config, agent, root=root, protected=protected)
        self.sandbox = sandbox
        self.scope = self.sandbox.scope
        self.root = self.scope.root
        self.tasks = TaskTools(Teamwork(crew), agent, root=self.root)
        # a handler returns the text of a success, or a whole ToolResult when it decides
        self._handlers: dict[str, Callable[[dict[str, Any]], str | ToolResult]] = {
            "bash": self._bash,
            "read_file": self._read_file,
            "read_result": self._read_result,
            "write_file": self._write_file,
            "edit_file": self._edit_file,
            "send_message": self._send_message,
            "broadcast": self._broadcast,
            **self.tasks.handlers,
        }
        if offers_git_commit(self._agent_config(), config):
            self._handlers["git_commit"] = self._git_commit

    def run(self, name: str, input: dict[str, Any]) -> ToolResult:
        """Run one tool call. Never raises: failures are `is_error` results."""
        if name in LOOP_TOOLS:
            return ToolResult(f"{name} is handled by the agent loop, not the toolbox", True)
        handler = self._handlers.get(name)
        if handler is None and self.mcp is not None and self.mcp.handles(name):
            handler = self.mcp.handler(name)  # an MCP tool: through here like every tool
        if handler is None:
            specs = [*tool_specs(self._agent_config(), self.config), *self._mcp_specs()]
            known = ", ".join(s.name for s in specs)
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
        # The row is written before the command runs: one that fills the disk or kills
        # the process still has its record; its outcome's row follows (docs/design.md,
        # "The audit trail").
        self._audit("bash", command, "started", start, 0)
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

    def _git_commit(self, input: dict[str, Any]) -> ToolResult:
        """git on the host for the agent, audited like a bash command (git_tool)."""
        message = git_tool.check_message(input.get("message"))
        target = message.splitlines()[0][:200] if message.strip() else ""
        start = time.monotonic()
        try:
            self._plan_gate()
            paths = git_tool.check_paths(self.root, input.get("paths"))
            git_tool.repo_of(self.root)
        except git_tool.GitRefused as e:
            self._audit("git_commit", target, "refused", start, 0, detail=str(e))
            raise
        target = " ".join([target, "--", *paths]) if paths else target
        self._audit("git_commit", target, "started", start, 0)
        res = git_tool.commit(self.root, self.agent, message, paths, timeout=self.bash_timeout)
        outcome = "ok" if res.ok else "failed"
        self._audit("git_commit", target, outcome, start, len(res.output), exit_code=res.exit_code)
        text = res.output[: self.output_cap] or "(no output)"
        return ToolResult(text if res.ok else f"git exited {res.exit_code}: {text}", not res.ok)

    def _read_file(self, input: dict[str, Any]) -> str:
        limit = _opt_int(input, "limit")
        if limit is not None and limit < 1:
            raise ToolInputError("limit must be at least 1")
        path = _need_str(input, "path")
        return fs_tools.read_text(self.scope, path, limit=limit, cap=self.output_cap)

    def _read_result(self, input: dict[str, Any]) -> str:
        offset, limit = _opt_int(input, "offset") or 0, _opt_int(input, "limit")
        try:
            return self.results.read(_need_str(input, "id").strip(), offset, limit)
        except (ResultNotFound, ValueError) as e:
            raise ToolInputError(str(e)) from None

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
            self._plan_gate()
            out = write(self.scope, path, *args)
        except (UserError, OSError) as e:
            outcome = "refused" if isinstance(e, fs_tools.PathError) else "failed"
            self._audit(tool, path, outcome, start, 0, detail=str(e))
            raise
        size = fs_tools.size_of(self.scope, path)
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
            self.ws,
            self.config,
            to,
            content,
            sender=self.agent,
            type=msg_type,
            sink=self.sink,
            backend=self.inboxes,
        )
        return f"sent to {to} (id {msg.id})"

    def _broadcast(self, input: dict[str, Any]) -> str:
        content = _need_str(input, "content")
        sent = post.broadcast(
            self.ws, self.config, content, sender=self.agent, sink=self.sink, backend=self.inboxes
        )
        if not sent:
            return "no teammates to broadcast to"
        return f"broadcast to {', '.join(m.to for m in sent)}"

    def _plan_gate(self) -> None:
        why = self.tasks.plan_gate()
        if why is not None:
            raise ToolInputError(why)

    def _mcp_specs(self) -> list[ToolSpec]:
        return self.mcp.specs if self.mcp is not None else []

    def _agent_config(self) -> AgentConfig | None:
        try:
            return self.config.agent(self.agent)
        except KeyError:
            return None


__all__ = ["LOOP_TOOLS", "ToolInputError", "ToolResult", "Toolbox", "tool_specs"]
