"""Between MCP and the model: a server's tools as tool specs, a call's result as text and images.

A tool is offered as `mcp__<server>__<tool>` with the server's own description and input
schema, unless the Messages API would refuse it (team.mcp.schema). A result keeps its
text, its images (base64, as the API takes them) and whether the tool failed; the other
kinds of content (audio, resources) are named in the text, since the API takes none of
them in a tool result. An agent's allow-list (`mcp = [...]` in team.toml) picks its tools.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from typing import Any

from team.core.images import ImageBlock
from team.mcp.config import is_tool_pattern
from team.mcp.schema import TOOL_NAME, schema_problem, tool_name

MAX_DESCRIPTION = 4000
"""Characters of a tool's description the model is shown (some servers paste manuals)."""


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of one server: its own name there, and what the model is shown of it
    (`mcp__<server>__<tool>`, the description, the input schema)."""

    server: str
    name: str
    model_name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """What a call returned: its text, its images, whether the tool failed, and its size in
    bytes (text as UTF-8, images decoded) for the audit trail."""

    text: str
    images: tuple[ImageBlock, ...] = ()
    is_error: bool = False

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8", "replace")) + sum(i.bytes for i in self.images)


def offered(server: str, tools: list[Any]) -> tuple[list[McpTool], dict[str, str]]:
    """The tools of `server` the model may be offered, and why each other one is not.

    `tools` are the SDK's `Tool` objects (`name`, `description`, `input_schema`).
    """
    out: list[McpTool] = []
    refused: dict[str, str] = {}
    names: set[str] = set()
    for t in tools:
        name = tool_name(server, t.name)
        why = schema_problem(t.input_schema)
        if why is None and not TOOL_NAME.match(name):
            why = f"its name {name!r} does not match {TOOL_NAME.pattern}"
        if why is None and name in names:
            why = f"its name {name!r} is the model's name of another tool of this server"
        if why is not None:
            refused[t.name] = why
            continue
        names.add(name)
        description = (t.description or t.title or f"{t.name} (MCP server {server})").strip()
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 1] + "…"
        out.append(McpTool(server, t.name, name, description, dict(t.input_schema)))
    return out, refused


def allowed(patterns: list[str] | None, tools: list[McpTool]) -> list[McpTool]:
    """The tools an agent's `mcp` list lets it see: all of them when it has no list; a
    server's name takes its every tool, a tool's name (`mcp__git__git_status`) or a glob
    pattern (`mcp__git__*`) the tools whose model-facing name it matches."""
    if patterns is None:
        return list(tools)
    return [t for t in tools if any(_matches(p, t) for p in patterns)]


def _matches(pattern: str, tool: McpTool) -> bool:
    if not is_tool_pattern(pattern):
        return pattern == tool.server
    return fnmatch.fnmatchcase(tool.model_name, pattern)


def reply_of(result: Any) -> Reply:
    """An SDK `CallToolResult` as a `Reply`."""
    parts: list[str] = []
    images: list[ImageBlock] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "image":
            _image(block.mime_type, block.data, parts, images)
        elif kind == "resource":
            res = block.resource
            mime = getattr(res, "mime_type", None) or ""
            if getattr(res, "text", None) is not None:
                parts.append(f"[resource {res.uri}]\n{res.text}")
            elif mime.startswith("image/"):
                _image(mime, res.blob, parts, images)
            else:
                size = len(getattr(res, "blob", "") or "") * 3 // 4
                parts.append(f"[resource {res.uri} ({mime or 'binary'}, {size:,} bytes)]")
        elif kind == "resource_link":
            parts.append(f"[resource link {block.name}: {block.uri}]")
        elif kind == "audio":
            size = len(block.data or "") * 3 // 4
            parts.append(f"[audio {block.mime_type}, {size:,} bytes: not shown to the model]")
        else:
            parts.append(f"[{kind or 'unknown'} content: not shown to the model]")
    structured = getattr(result, "structured_content", None)
    if not parts and not images and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    text = "\n".join(parts)
    if not text.strip() and not images:
        text = "(the tool returned nothing)"
    return Reply(text, tuple(images), bool(result.is_error))


def _image(mime: str, data: str, parts: list[str], images: list[ImageBlock]) -> None:
    """Keep an image the API takes; name one it would refuse (the whole request would fail)."""
    image = ImageBlock.of(mime or "", data or "")
    why = image.problem()
    if why is None:
        images.append(image)
    else:
        parts.append(f"{image.describe()} not shown to the model: {why}")
