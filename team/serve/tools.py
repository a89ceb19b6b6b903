"""What `team mcp` serves: the CLI's operations as MCP tools, transcripts as resources.

Each tool is the library call its `team ...` command makes (Teamwork for the board,
`post` for mail, `team_status`, the inbox reading, the conversation view, the stats),
on the workspace as it is at the call (team.toml is read each time), so it works
whether or not the team is up, as the CLI does. A user error is the tool's error
(`is_error` with the CLI's one line); nothing a client sends can stop the server.
Tools are plain functions: the SDK runs each in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from team.agents.runtime.control import team_status
from team.backends import post
from team.backends.base import open_backend
from team.core.errors import UserError
from team.core.events import optional_log
from team.mailbox import reading
from team.study.conversation_view import show_session
from team.study.stats import stats as compute_stats
from team.study.transcripts import list_transcripts
from team.teamwork import Crew, Teamwork, require_worker
from team.workspace.config import TeamConfig
from team.workspace.places import USER, Workspace

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
LOG_CHARS = 200_000  # of `log`'s answer: a client's context is not a terminal's scrollback

T = TypeVar("T")
Agent = Annotated[str, Field(description="An agent of the team, as named in team.toml.")]
TaskId = Annotated[int, Field(ge=1, description="A task's number on the board.")]


def build(ws: Workspace) -> MCPServer:
    """The server for the team in `ws`."""
    names = ws.load_config().names()  # a bad team.toml stops `team mcp` before it serves
    # log_level: MCPServer() would otherwise configure the process's logging at INFO
    server = MCPServer(
        "team",
        instructions=(
            "Steer a team of Claude agents: assign tasks, message agents, read the board, "
            "their status and the person's inbox (agent `user`), review plans."
        ),
        log_level="WARNING",
    )

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., T]], Callable[..., T]]:
        return server.tool(annotations=annotations)

    @tool(WRITES)
    def assign(
        subject: Annotated[str, Field(min_length=1, description="What to do, in one line.")],
        agent: Annotated[
            str | None, Field(description="Who does it; omit to leave it open for anyone.")
        ] = None,
        description: Annotated[str, Field(description="Details for whoever does it.")] = "",
    ) -> dict[str, Any]:
        """Add a task to the board, for an agent (delivered to its inbox) or for anyone."""
        with _user_errors(), _teamwork(ws) as tw:
            if agent is not None:
                require_worker(tw.config, agent)
            task, _ = tw.assign(subject, agent, description=description)
        return task.model_dump()

    @tool(WRITES)
    def send(
        to: Agent,
        text: Annotated[str, Field(min_length=1)],
        sender: Annotated[str, Field(description="Who it is from.")] = USER,
    ) -> str:
        """Deliver a message to an agent's inbox."""
        with _user_errors(), optional_log(ws.events_db) as sink:
            msg = post.send(ws, ws.load_config(), to, text, sender=sender, sink=sink)
        return f"sent {msg.id} to {to}"

    @tool(WRITES)
    def broadcast(text: Annotated[str, Field(min_length=1)], sender: str = USER) -> str:
        """Deliver a message to every agent but the sender."""
        with _user_errors(), optional_log(ws.events_db) as sink:
            sent = post.broadcast(ws, ws.load_config(), text, sender=sender, sink=sink)
        return f"sent to {', '.join(m.to for m in sent)}" if sent else "no recipients"

    @tool(READS)
    def tasks() -> list[dict[str, Any]]:
        """Every task on the board: id, subject, status, owner, what it waits on, result."""
        with _user_errors():
            return [t.model_dump() for t in _board(ws, ws.load_config()).list()]

    @tool(READS)
    def task(task_id: TaskId) -> dict[str, Any]:
        """One task, whole."""
        with _user_errors():
            return _board(ws, ws.load_config()).get(task_id).model_dump()

    @tool(READS)
    def status() -> dict[str, Any]:
        """Each agent's state, task, context, compactions, inbox and spend; the MCP
        servers the team uses; whether the team is up."""
        with _user_errors():
            return team_status(ws, ws.load_config())

    @tool(WRITES)
    def inbox(
        agent: Agent = USER,
        ack: Annotated[
            bool, Field(description="Mark what is returned as read (the user's inbox only).")
        ] = False,
        include_read: Annotated[bool, Field(description="Processed messages too.")] = False,
    ) -> list[dict[str, Any]]:
        """The messages in an inbox, oldest first; `user` is the person's own."""
        with _user_errors():
            config = ws.load_config()
            ws.require_agent(config, agent)
            backend = open_backend(ws, config)
            try:
                mailbox = backend.mailbox(agent)
                if ack:
                    with reading.taking(mailbox, agent) as taken:
                        return [_mail(m, "done") for m in taken]
                return [_mail(m, s) for m, s in reading.listing(mailbox, include_read)]
            finally:
                backend.close()

    @tool(READS)
    def log(
        agent: Agent,
        last: Annotated[int, Field(ge=1, le=500, description="How many entries.")] = 20,
    ) -> str:
        """The last entries of an agent's conversation, as `team log` shows them."""
        with _user_errors():
            config = ws.load_config()
            require_worker(config, agent)
            path = ws.session_log(agent)
            if not path.exists():
                raise UserError(f"{agent} has no conversation yet")
            _, chunks, _ = show_session(path, agent, config.compaction_for(agent))
        text = "\n".join(list(chunks)[-last:])
        return text if len(text) <= LOG_CHARS else "…" + text[-LOG_CHARS:]

    @tool(WRITES)
    def approve(task_id: TaskId, note: str | None = None) -> str:
        """Approve the plan waiting on a task; its owner goes ahead."""
        with _user_errors(), _teamwork(ws) as tw:
            done = tw.review_plan(task_id, True, note)
        return f"plan for task #{done.id} {done.plan_state}; {done.owner} is told"

    @tool(WRITES)
    def reject(task_id: TaskId, why: Annotated[str, Field(min_length=1)]) -> str:
        """Reject the plan waiting on a task; the reason goes back to its owner."""
        with _user_errors(), _teamwork(ws) as tw:
            done = tw.review_plan(task_id, False, why)
        return f"plan for task #{done.id} {done.plan_state}; {done.owner} is told"

    @tool(READS)
    def stats() -> dict[str, Any]:
        """Per-agent and team numbers: model calls, tokens, cost, compactions."""
        with _user_errors():
            model = ws.load_config().team.model
            return compute_stats(ws.events_db, model).to_dict()

    for name in names:  # one resource per agent: its archived transcripts
        server.resource(
            f"team://agents/{name}/transcripts",
            name=f"{name}-transcripts",
            description=f"{name}'s transcripts: the full segments its compactions archived",
            mime_type="application/json",
        )(_transcripts(ws, name))
    return server


def _transcripts(ws: Workspace, agent: str) -> Callable[[], str]:
    def read() -> str:
        with _user_errors():
            return json.dumps([f.to_dict() for f in list_transcripts(ws, agent)])

    return read


def _mail(msg: Any, status: str) -> dict[str, Any]:
    return {**msg.model_dump(mode="json", by_alias=True), "status": status}


def _board(ws: Workspace, config: TeamConfig) -> Any:
    return open_backend(ws, config).board()


@contextlib.contextmanager
def _user_errors() -> Iterator[None]:
    """The CLI's one line for a user error, as the tool's error."""
    try:
        yield
    except UserError as e:
        raise ToolError(str(e)) from None
    except OSError as e:
        raise ToolError(f"{e.strerror or e}" + (f": {e.filename}" if e.filename else "")) from None


@contextlib.contextmanager
def _teamwork(ws: Workspace) -> Iterator[Teamwork]:
    config = ws.load_config()
    with optional_log(ws.events_db) as sink:
        yield Teamwork(Crew(ws, config, _board(ws, config), sink))
