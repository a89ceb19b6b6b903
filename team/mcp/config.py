"""An MCP server as team.toml (`[mcp_servers.NAME]`) and `.mcp.json` describe it.

The shape is the ecosystem's `mcpServers` one (Claude Code, Claude Desktop, Cursor):
`command`, `args`, `env`, `cwd` for a stdio server, `url` and `headers` for streamable
HTTP; team adds a call `timeout`, a `connect_timeout`, and the sandbox settings. The
workspace reads both files (team.workspace.config); this module only knows one server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from team.core.errors import UserError

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
"""Short enough that `mcp__<server>__<tool>` leaves room for the tool's own name."""
TEAM_TOML_ONLY = ("sandbox",)
"""Keys only team.toml may set: a file an MCP client also writes must not loosen the sandbox."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpServerConfig(BaseModel):
    """One MCP server the agents may use."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio", "http", "streamable-http", "sse"] | None = None
    """The transport; by default stdio with a `command`, streamable HTTP with a `url`."""
    command: str | None = None
    """The program of a stdio server (found on PATH; a leading ~ is the home folder)."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Added to the few variables a stdio server gets (HOME, PATH, ...): API keys go here.
    `${VAR}` and `${VAR:-default}` are taken from the environment of `team up`, here and
    in command, args, cwd, url and headers."""
    cwd: str | None = None
    """Where a stdio server runs (default: the workspace)."""
    url: str | None = None
    """A streamable HTTP server's endpoint, e.g. http://127.0.0.1:8000/mcp."""
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(120.0, gt=0, le=86_400)
    """Seconds one tool call may take before the agent gets a timeout error."""
    connect_timeout: float = Field(30.0, gt=0, le=3_600)
    """Seconds to start the server and list its tools."""
    sandbox: Literal["auto", "bwrap", "off"] | None = None
    """A stdio server runs in the team's sandbox ([team] sandbox) unless this says "off"."""
    network: bool | None = None
    """Network for a sandboxed stdio server (default: [team] network)."""
    disabled: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if self.type == "sse":
            raise ValueError('SSE is not supported: use streamable HTTP (type "http")')
        if self.command is not None and self.url is not None:
            raise ValueError("give a command (stdio) or a url (streamable HTTP), not both")
        if self.transport == "stdio":
            if not (self.command or "").strip():
                raise ValueError("a stdio server needs a command")
        elif not self.url:
            raise ValueError(f"type {self.type!r} needs a url")
        elif urlsplit(self.url).scheme not in ("http", "https") and "${" not in self.url:
            raise ValueError(f"url must be http:// or https://, got {self.url!r}")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        if self.type in ("http", "streamable-http") or (self.type is None and self.url):
            return "http"
        return "stdio"

    def resolved(self, environ: Mapping[str, str]) -> McpServerConfig:
        """This config with every `${VAR}` taken from `environ`.

        Raises:
            UserError: a variable with no default is not set.
        """

        def one(text: str) -> str:
            return expand(text, environ)

        return self.model_copy(
            update={
                "command": os.path.expanduser(one(self.command)) if self.command else None,
                "args": [one(a) for a in self.args],
                "env": {k: one(v) for k, v in self.env.items()},
                "cwd": one(self.cwd) if self.cwd else None,
                "url": one(self.url) if self.url else None,
                "headers": {k: one(v) for k, v in self.headers.items()},
            }
        )


def expand(text: str, environ: Mapping[str, str]) -> str:
    """`text` with `${VAR}` and `${VAR:-default}` replaced, as Claude Code does.

    Raises:
        UserError: a variable with no default is not set.
    """

    def one(m: re.Match[str]) -> str:
        if m[1] in environ:
            return environ[m[1]]
        if m[2] is not None:
            return m[2]
        raise UserError(f"${{{m[1]}}} is not set")

    return _VAR.sub(one, text)


def is_tool_pattern(entry: str) -> bool:
    """An agent's `mcp` entry names tools (`mcp__git__git_*`, `*`), not a server (`git`)."""
    return entry.startswith("mcp__") or any(c in entry for c in "*?[")


def check_server_name(name: str) -> str:
    if not SERVER_NAME.match(name):
        raise ValueError(
            f"invalid MCP server name {name!r}: use letters, digits, '_' or '-' (at most 32)"
        )
    return name
