"""The seam between an agent and whatever answers it: the `Model` protocol."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from team.core.conversation import Block, Message

if TYPE_CHECKING:
    from team.core.conversation import InboxMail

CHARS_PER_TOKEN = 4
"""The estimate before an agent's own calls calibrate it (team.compaction.tokens)."""


def chars_to_tokens(chars: int) -> int:
    """The one token estimate from characters, rounded up."""
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it (name, purpose, JSON schema of its input)."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_api(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


@dataclass(frozen=True)
class Prefix:
    """What every request of an agent carries before its messages: the system prompt and
    the tools. It does not change during a run, so it is the prompt cache's first entry."""

    system: str = ""
    tools: tuple[ToolSpec, ...] = ()

    def chars(self) -> int:
        """Its size as sent, which the token estimate counts before the messages."""
        return len(self.system) + sum(len(json.dumps(t.to_api())) for t in self.tools)


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model call, as the Messages API reports them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def input_total(self) -> int:
        """Everything the call read: input + cache read + cache write."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def context_tokens(self) -> int:
        """Everything the call saw plus what it wrote: the size of the context after it."""
        return self.input_total + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


CacheTTL = Literal["5m", "1h"]
CachePoint = int | tuple[int, int]
"""Where a cached prefix ends: `i` is the last block of message i, `(i, j)` block j of it."""


def cache_block(point: CachePoint, messages: list[Message]) -> tuple[int, int]:
    """The (message, block) a `CachePoint` names.

    Raises:
        ValueError: it is outside `messages` (a caller's bookkeeping bug).
    """
    i, j = (point, -1) if isinstance(point, int) else point
    if not 0 <= i < len(messages):
        raise ValueError(f"cache breakpoint {point} is outside the {len(messages)} messages")
    n = len(messages[i].content)
    j = n - 1 if j == -1 else j
    if not 0 <= j < n:
        raise ValueError(f"cache breakpoint {point} is outside message {i}'s {n} blocks")
    return i, j


@dataclass(frozen=True, slots=True)
class AgentFacts:
    """What the agent's prompts tell the model, as data (docs/design.md, "What the model sees").

    The system prompt and the identity block are rendered from these facts
    (`team.agents.words.identity`), and a model that is code (the simulator) reads them here
    instead of parsing that prose back, the way pydantic-ai's `FunctionModel` gets its
    `AgentInfo`. `tasks` are the open tasks the agent owns that are not blocked (a task
    whose plan waits for review included); `new_mail` the inbox messages that arrived
    in the request's newest user turn. A summary request carries the identity only.
    """

    name: str
    role: str
    team: str
    teammates: tuple[tuple[str, str], ...] = ()
    """(name, role) of every other agent."""
    tasks: tuple[tuple[int, str], ...] = ()
    """(id, subject) of the open tasks the agent owns and can act on."""
    new_mail: tuple[InboxMail, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call. `messages` must already pass `conversation.validate`.

    `cache_breakpoints` are where stable prefixes worth caching end (see `CachePoint`;
    at most 4 in all, counting the system prompt's), and `cache_ttl` how long they live.
    `purpose` is "agent" for a turn and "summary" for a compaction summary. `facts` are
    for models that are code (the simulator): never sent to a provider.
    """

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 8000
    tool_choice: Literal["auto", "none"] = "auto"
    cache_breakpoints: tuple[CachePoint, ...] = ()
    cache_system: bool = True
    cache_ttl: CacheTTL = "5m"
    purpose: Literal["agent", "summary"] = "agent"
    agent: str = ""
    facts: AgentFacts | None = None
    focus: str | None = None
    """A summary's focus (`compact{focus}`), as data; its prose is in the request too."""
    segment: tuple[Message, ...] = ()
    """A summary's segment as stored (full text, each block's data), for models that are
    code: the mail and the board's notes a summary must keep. Never sent."""


@dataclass(frozen=True, slots=True)
class ModelResponse:
    content: tuple[Block, ...]
    stop_reason: str
    usage: Usage

    def message(self) -> Message:
        return Message("assistant", self.content)


class ModelError(Exception):
    """A call that failed; the subclass says what the caller should do next.

    A plain `ModelError` is treated as transient. `reason` is a few words for a status
    line ("overloaded (529)"); `retry_after` is the server's hint in seconds, if any.
    """

    def __init__(self, message: str, *, reason: str = "", retry_after: float | None = None):
        super().__init__(message)
        self.reason = reason or message
        self.retry_after = retry_after


class TransientModelError(ModelError):
    """Worth retrying after a backoff: rate limits, overload, 5xx, timeouts, connections."""


class PermanentModelError(ModelError):
    """Retrying cannot help (bad credentials, no permission, unknown model, a bad request):
    the agent stops with this error instead of retrying for ever."""


class PromptTooLong(ModelError):
    """The request does not fit the model's context window: compact, then go on."""


class Model(Protocol):
    """Anything that can answer a `ModelRequest`. Implementations must be thread-safe."""

    name: str

    def complete(self, request: ModelRequest) -> ModelResponse: ...
