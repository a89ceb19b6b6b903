"""team.toml -> pydantic models, with one clear line for every mistake."""

from __future__ import annotations

import json
import re
import tomllib
import typing
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from team.core.errors import UserError
from team.mcp.config import (
    TEAM_TOML_ONLY,
    McpServerConfig,
    check_server_name,
    is_tool_pattern,
)
from team.workspace.backend_spec import check_url
from team.workspace.filenames import CONFIG_FILE, MCP_JSON

AGENT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
SandboxMode = Literal["auto", "bwrap", "off"]

# The largest values team.toml takes: far above any real use, low enough that a typo'd
# digit is caught before it becomes an rlimit, a sleep or a request the API refuses.
DAY_S = 86_400
TIB_MB = 1_048_576
MAX_USD = 1_000_000.0
MAX_CHARS = 10_000_000
MAX_TOKENS_CONTEXT = 2_000_000


def check_name(v: str, what: str = "name") -> str:
    """The rule for every name in team.toml (it may become a folder, a key or a prefix)."""
    if not AGENT_NAME.match(v):
        raise ValueError(f"invalid {what} {v!r}: must match {AGENT_NAME.pattern}")
    return v


class ConfigError(UserError):
    """A team.toml problem, already phrased as the one line the user sees."""


class CompactionConfig(BaseModel):
    """How one agent's context is kept in bounds (docs/design.md, "Compaction")."""

    model_config = ConfigDict(extra="forbid")

    threshold: int | str = 50_000
    """Estimated context tokens above which auto-compaction runs before the next call,
    or a share of the model's context window ("80%"). Raised while the fixed prefix is
    within reach of it (docs/design.md, "Compaction")."""
    keep_recent: int = Field(3, ge=0, le=10_000)
    """Newest tool results that micro-compaction leaves alone."""
    preserve_tools: list[str] = Field(default_factory=lambda: ["read_file"])
    """Tools whose results are never replaced by placeholders."""
    min_chars: int = Field(100, ge=0, le=MAX_CHARS)
    """Results this short or shorter are left alone."""
    clear_at_least: int = Field(0, ge=0, le=MAX_TOKENS_CONTEXT)
    """Placeholders only advance when this many tokens clear at once."""
    micro_policy: Literal["cost", "eager"] = "cost"
    """When micro clears: "cost" in batches that pay for the cache rewrite they cause,
    "eager" (the reference design) as soon as the rules allow."""
    cache_ttl: Literal["5m", "1h"] = "5m"
    """How long the provider keeps a cached prefix; 1h writes cost 2x base input, not 1.25x."""
    micro: bool = True
    """Turn the micro layer off (for experiments)."""
    auto: bool = True
    """Turn the auto layer off (for experiments)."""
    result_cap: int = Field(30_000, ge=1_000, le=MAX_CHARS)
    """Characters of one tool result, message or note the model is shown: a longer one
    is kept whole in the agent's results folder, and the model gets its head, its tail
    and how to read the rest (`read_result`)."""

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold_tokens_or_share(cls, v: Any) -> int | str:
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v.strip())
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise ValueError(f'must be a number of tokens or a share like "80%", got {v!r}')
        if isinstance(v, int):
            if v <= 0:
                raise ValueError(f"must be a positive number of tokens, got {v}")
            if v > MAX_TOKENS_CONTEXT:
                raise ValueError(f"at most {MAX_TOKENS_CONTEXT:,} tokens, got {v:,}")
            return v
        share = _SHARE.match(v)
        if not share or not 0 < float(share[1]) <= 100:
            raise ValueError(f'must be a number of tokens or a share like "80%", got {v!r}')
        return f"{share[1]}%"


_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def threshold_tokens(threshold: int | str, window: int) -> int:
    """The threshold in tokens: itself, or its share of a `window` of that many tokens
    (the model's context window, `team.llm.prices.context_window`)."""
    if isinstance(threshold, int):
        return threshold
    return max(1, int(window * float(threshold.rstrip("%")) / 100))


class LimitsConfig(BaseModel):
    """What one sandboxed `bash` command may use (see team.sandbox.limits)."""

    model_config = ConfigDict(extra="forbid")

    cpu_s: int = Field(300, gt=0, le=DAY_S)
    """CPU seconds each process of a command may use."""
    memory_mb: int = Field(8192, gt=0, le=TIB_MB)
    """Memory each process may write to (RLIMIT_DATA), in MiB."""
    processes: int = Field(512, gt=0, le=65_536)
    """Processes (and threads) one command may run at once."""
    file_mb: int = Field(1024, gt=0, le=TIB_MB)
    """Largest file a command may write, in MiB."""
    output_mb: int = Field(64, gt=0, le=4096)
    """Output a command may print before it is killed, in MiB."""


class AgentConfig(BaseModel):
    """One named agent."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Becomes a folder name, so it must match ^[a-z][a-z0-9_-]{0,31}$."""
    role: str
    prompt: str = ""
    compaction: dict[str, Any] = Field(default_factory=dict)
    """Overrides of any [compaction] key for this agent alone."""
    budget_usd: float | None = Field(None, gt=0, le=MAX_USD)
    """Dollars (list price, team.llm.prices) this agent may spend; then it stops taking work."""
    sandbox: SandboxMode | None = None
    """This agent's sandbox mode, when it differs from [team] sandbox."""
    network: bool | None = None
    """Network access for this agent's commands, when it differs from [team] network."""
    plan_approval: bool = False
    """Submit a plan (`submit_plan`) for each task and wait for it to be approved."""
    mcp: list[str] | None = None
    """The MCP tools this agent sees: server names ("git"), tool names or glob patterns on
    them ("mcp__git__git_status", "mcp__git__*"). Default: every server's tools; [] none."""

    @field_validator("name")
    @classmethod
    def _name_is_a_folder(cls, v: str) -> str:
        check_name(v, "agent name")
        if v == "user":
            raise ValueError("'user' is reserved for the person at the CLI")
        return v

    @field_validator("role")
    @classmethod
    def _role_not_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("role must not be empty")
        return v


class TeamSection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "team"
    model: str = "sim"
    """An Anthropic model id, or "sim" for the offline simulator."""
    max_tokens: int = Field(8000, gt=0, le=128_000)
    budget_usd: float | None = Field(None, gt=0, le=MAX_USD)
    """Dollars the whole team may spend; once reached, every agent stops taking work."""
    sandbox: SandboxMode = "auto"
    """Confine `bash`: "bwrap" (bubblewrap, or refuse to start), "auto" (bubblewrap when
    it works here, otherwise unconfined with one warning at `team up`), "off"."""
    network: bool = False
    """Let sandboxed commands reach the network."""
    deny_read: list[str] = Field(default_factory=list)
    """Paths commands and file tools may not read, on top of the built-in secrets list
    (~ is the home folder; relative paths are taken from the workspace root)."""
    backend: str = "files"
    """Where inboxes, tasks and leases live: "files" (this machine's .team/) or a Redis URL,
    "redis://host:port/db", for a team spread over several machines. TEAM_BACKEND overrides."""
    lease_seconds: float = Field(15.0, ge=1.0, le=3600.0)
    """Redis backend: how long an agent's lease outlives a node that died without a word."""

    lead: str | None = None
    """The agent that coordinates: it gets `team goal`, idle and task notices, plans."""
    isolation: Literal["shared", "worktree"] = "shared"
    """`worktree`: each agent works in its own git worktree (.team/worktrees/<agent>)."""

    @field_validator("name")
    @classmethod
    def _team_name(cls, v: str) -> str:
        return check_name(v, "team name")

    @field_validator("lead")
    @classmethod
    def _lead_name(cls, v: str | None) -> str | None:
        return v if v is None else check_name(v, "agent name")

    @field_validator("backend")
    @classmethod
    def _backend_known(cls, v: str) -> str:
        return check_url(v)


class HooksConfig(BaseModel):
    """Shell commands run at points of the team's work, with JSON on stdin (docs/design.md)."""

    model_config = ConfigDict(extra="forbid")

    task_completed: str | None = None
    """Runs before a task is marked completed; exit 2 refuses the completion."""
    teammate_idle: str | None = None
    """Runs when an agent is about to go idle; exit 2 keeps it working."""
    timeout: float = Field(60.0, gt=0, le=DAY_S)
    """Seconds a hook may run before it is killed (and counted as passed, with a warning)."""


class TeamConfig(BaseModel):
    """The whole team.toml."""

    model_config = ConfigDict(extra="forbid")

    team: TeamSection = Field(default_factory=TeamSection)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    agents: list[AgentConfig] = Field(min_length=1)
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """The MCP servers the agents may use (with the ones of `.mcp.json` beside team.toml)."""

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, v: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in v:
            check_name(name, "MCP server name")
        return v

    def agent(self, name: str) -> AgentConfig:
        for a in self.agents:
            if a.name == name:
                return a
        raise KeyError(name)

    def names(self) -> list[str]:
        return [a.name for a in self.agents]

    def compaction_for(self, name: str) -> CompactionConfig:
        """The team's [compaction] with this agent's overrides applied."""
        overrides = self.agent(name).compaction
        if not overrides:
            return self.compaction
        return CompactionConfig.model_validate({**self.compaction.model_dump(), **overrides})


def _loc(parts: tuple[Any, ...]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out or "(top level)"


def _keys_at(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys the model allows where `loc` points (for "did you mean")."""
    model: Any = root
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return []
        kinds = [field.annotation, *typing.get_args(field.annotation)]
        model = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
        if model is None:
            return []
    return list(model.model_fields)


def _unknown(err: dict[str, Any], root: type[BaseModel], prefix: str = "") -> str:
    """`unknown table [[agent]] (did you mean [[agents]]?)`, `team.colour: unknown key`."""
    import difflib

    *where, key = err["loc"]
    value = err.get("input")
    near = difflib.get_close_matches(str(key), _keys_at(root, tuple(where)), n=1, cutoff=0.6)
    if not where and not prefix and isinstance(value, dict | list):
        table = f"[[{key}]]" if isinstance(value, list) else f"[{key}]"
        hint = f" (did you mean {table.replace(str(key), near[0])}?)" if near else ""
        return f"unknown table {table}{hint}"
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"{prefix}{_loc(err['loc'])}: unknown key{hint}"


def _describe(err: dict[str, Any]) -> str:
    kind = err["type"]
    if kind == "missing":
        return "required key is missing"
    if kind in ("less_than_equal", "less_than"):
        most = err["ctx"]["le" if kind == "less_than_equal" else "lt"]
        return f"at most {most:,}, got {err['input']!r}"
    msg = err["msg"]
    return msg.removeprefix("Value error, ")


def _first_error(e: ValidationError, root: type[BaseModel], prefix: str = "") -> str:
    """One line for the error the user should fix first: an unknown key or table before
    anything else (`[[agent]]` is why `agents` is missing)."""
    errors = e.errors()
    unknown = [err for err in errors if err["type"] == "extra_forbidden"]
    if unknown:
        return _unknown(unknown[0], root, prefix)
    err = errors[0]
    return f"{prefix}{_loc(err['loc'])}: {_describe(err)}"


def parse_config(
    data: dict[str, Any],
    source: str = CONFIG_FILE,
    mcp_json: dict[str, McpServerConfig] | None = None,
) -> TeamConfig:
    """Check a parsed team.toml; `mcp_json` are the servers of `.mcp.json` (team.toml's
    own win on a name both define)."""
    try:
        cfg = TeamConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: {_first_error(e, TeamConfig)}") from None
    if mcp_json:
        cfg.mcp_servers = {**mcp_json, **cfg.mcp_servers}
    seen: set[str] = set()
    for i, a in enumerate(cfg.agents):
        if a.name in seen:
            raise ConfigError(f"{source}: agents[{i}].name: duplicate agent name {a.name!r}")
        seen.add(a.name)
        try:
            cfg.compaction_for(a.name)
        except ValidationError as e:
            line = _first_error(e, CompactionConfig, f"agents[{i}].compaction.")
            raise ConfigError(f"{source}: {line}") from None
        for pattern in a.mcp or ():
            if not is_tool_pattern(pattern) and pattern not in cfg.mcp_servers:
                known = ", ".join(cfg.mcp_servers) or "none are configured"
                raise ConfigError(
                    f"{source}: agents[{i}].mcp: {pattern!r} is not an MCP server here "
                    f"(servers: {known}; tools are named mcp__<server>__<tool>)"
                )
    lead = cfg.team.lead
    if lead is not None and lead not in seen:
        known = ", ".join(cfg.names())
        raise ConfigError(f"{source}: team.lead: {lead!r} is not an agent here (agents: {known})")
    return cfg


def load_config(path: Path) -> TeamConfig:
    """Read and check a team.toml; every problem raises `ConfigError` with one line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (run `team init` to write one)") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: TOML syntax error: {e}") from None
    return parse_config(data, str(path), read_mcp_json(path.parent / MCP_JSON))


def read_mcp_json(path: Path) -> dict[str, McpServerConfig]:
    """The servers of Claude Code's `.mcp.json` (`{"mcpServers": {NAME: {...}}}`), or none
    when there is no such file. Raises `ConfigError` with one line for a bad one."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:  # not JSON, or not UTF-8
        raise ConfigError(f"{path}: not valid JSON: {e}") from None
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: expected {{"mcpServers": {{NAME: {{...}}}}}}')
    out: dict[str, McpServerConfig] = {}
    for name, entry in servers.items():
        where = f"{path}: mcpServers.{name}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected an object")
        for key in TEAM_TOML_ONLY:
            if key in entry:
                raise ConfigError(f"{where}.{key}: only team.toml may set this")
        try:
            check_server_name(name)
            out[name] = McpServerConfig.model_validate(entry)
        except ValueError as e:  # pydantic's ValidationError is one too
            if isinstance(e, ValidationError):
                err = e.errors()[0]
                at = f".{_loc(err['loc'])}" if err["loc"] else ""
                raise ConfigError(f"{where}{at}: {_describe(err)}") from None
            raise ConfigError(f"{where}: {e}") from None
    return out


def render_config(
    name: str, model: str, agents: list[tuple[str, str]], threshold: int = 50_000
) -> str:
    """A team.toml for `team init`, written by a TOML library so any value round-trips.

    String formatting broke on a quote in a role (`--agents 'a:co"der'`); tomli_w escapes
    quotes, backslashes, newlines and control characters as TOML requires.
    """
    doc = {
        "team": {"name": name, "model": model, "max_tokens": 8000},
        "compaction": {
            "threshold": threshold,
            "keep_recent": 3,
            "preserve_tools": ["read_file"],
            "min_chars": 100,
        },
        "agents": [{"name": agent, "role": role} for agent, role in agents],
    }
    parse_config(doc)  # never write a file we would refuse to read
    # Each agent as its own [[agents]] table, as the README shows it (tomli_w would inline
    # short ones); the values are still written by tomli_w, only the headers are ours.
    head = {k: v for k, v in doc.items() if k != "agents"}
    parts = [CONFIG_HEADER + tomli_w.dumps(head)]
    parts += ["[[agents]]\n" + tomli_w.dumps(a) for a in doc["agents"]]
    text = "\n".join(parts)
    if tomllib.loads(text) != doc:  # belt and braces: what we read back is what we meant
        raise ConfigError("team.toml would not read back as written")
    return text


CONFIG_HEADER = """\
# The team: see README.md (team.toml) for every key.
# model: an Anthropic model id, or "sim" for the offline simulator.

"""
