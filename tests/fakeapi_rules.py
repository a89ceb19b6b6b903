"""What the Messages API rejects, checked on the raw JSON (the cache is in fakeapi_cache).

Written from the API's documented rules, independently of `team.core.conversation`, so the fake
server checks our client instead of agreeing with it by construction.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
BLOCK_TYPES = {
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
}
TOOL_CHOICE_TYPES = {"auto", "any", "tool", "none"}
# Parameters of POST /v1/messages; anything else is "Extra inputs are not permitted".
TOP_LEVEL_KEYS = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "tools",
    "tool_choice",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "thinking",
    "cache_control",
    "service_tier",
    "container",
    "output_config",
    "inference_geo",
    "speed",
    "diagnostics",
}
MAX_BREAKPOINTS = 4


# ----------------------------------------------------------------------------- validation


def request_problems(body: Any, *, allow_prefill: bool = False) -> Iterator[str]:
    """Yield each reason the Messages API would answer this body with a 400, in order.

    Args:
        body: the parsed JSON body of POST /v1/messages.
        allow_prefill: accept a final assistant turn (some models do, newer ones answer
            400); a final assistant turn holding tool_use is rejected either way.
    """
    if not isinstance(body, dict):
        yield "body: Input should be a valid dictionary"
        return
    for key in sorted(set(body) - TOP_LEVEL_KEYS):
        yield f"{key}: Extra inputs are not permitted"
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            yield f"{key}: Field required"
    if "model" in body and (not isinstance(body["model"], str) or not body["model"]):
        yield "model: Input should be a non-empty string"
    max_tokens = body.get("max_tokens", 0)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        yield "max_tokens: Input should be a valid integer"
    elif max_tokens < 0:  # 0 is valid: it pre-warms the cache without generating
        yield "max_tokens: Input should be greater than or equal to 0"
    if body.get("stream"):
        yield "stream: this fake answers non-streaming requests only"
    breakpoints = 0
    if "cache_control" in body:
        breakpoints += 1
        yield from _cache_control_problems("cache_control", body["cache_control"])
    system = body.get("system")
    if isinstance(system, list):
        for i, block in enumerate(system):
            where = f"system.{i}"
            if not isinstance(block, dict) or block.get("type") != "text":
                yield f"{where}: system blocks must be text blocks"
                continue
            yield from _text_problems(where, block.get("text"))
            breakpoints += "cache_control" in block
            yield from _cache_control_problems(where, block.get("cache_control"))
    elif system is not None and not isinstance(system, str):
        yield "system: Input should be a valid string or list of text blocks"
    tool_names: set[str] = set()
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        yield "tools: Input should be a valid list"
        tools = []
    for i, tool in enumerate(tools or []):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            yield f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        elif name in tool_names:
            yield f"tools: Tool names must be unique. Duplicate: {name}"
        else:
            tool_names.add(name)
        if not isinstance(tool, dict):
            continue
        if tool.get("type") in (None, "custom"):  # server tools carry a versioned type instead
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                yield f"tools.{i}.input_schema: a JSON schema with type 'object' is required"
        breakpoints += "cache_control" in tool
        yield from _cache_control_problems(f"tools.{i}", tool.get("cache_control"))
    yield from _tool_choice_problems(body.get("tool_choice"), tools, tool_names)
    messages = body.get("messages")
    if "messages" in body:
        counted: list[int] = []
        yield from _messages_problems(messages, tools, tool_names, allow_prefill, counted)
        breakpoints += sum(counted)
    if breakpoints > MAX_BREAKPOINTS:
        yield (
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {breakpoints}."
        )


def _text_problems(where: str, text: Any) -> Iterator[str]:
    if not isinstance(text, str):
        yield f"{where}.text: Input should be a valid string"
    elif not text:
        yield f"{where}: text content blocks must be non-empty"
    elif not text.strip():
        yield f"{where}: text content blocks must contain non-whitespace text"


def _cache_control_problems(where: str, cc: Any) -> Iterator[str]:
    if cc is None:
        return
    if not isinstance(cc, dict) or cc.get("type") != "ephemeral":
        yield f"{where}.cache_control.type: Input should be 'ephemeral'"
    elif cc.get("ttl", "5m") not in ("5m", "1h"):
        yield f"{where}.cache_control.ttl: Input should be '5m' or '1h'"


def _tool_choice_problems(choice: Any, tools: Any, names: set[str]) -> Iterator[str]:
    if choice is None:
        return
    if not isinstance(choice, dict) or choice.get("type") not in TOOL_CHOICE_TYPES:
        yield "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"
    elif not tools:
        yield "tool_choice: tool_choice may only be specified while providing tools"
    elif choice["type"] == "tool" and str(choice.get("name")) not in names:
        yield f"tool_choice.name: no tool named {choice.get('name')!r} in tools"


def _messages_problems(
    messages: Any, tools: Any, tool_names: set[str], allow_prefill: bool, counted: list[int]
) -> Iterator[str]:
    if not isinstance(messages, list) or not messages:
        yield "messages: at least one message is required"
        return
    seen_ids: set[str] = set()
    prev_uses: list[str] = []
    for i, msg in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            yield f"{where}.role: Input should be 'user' or 'assistant'"
            prev_uses = []
            continue
        role, content = msg["role"], msg.get("content")
        if i == 0 and role != "user":
            yield "messages.0: the first message must use the user role"
        if isinstance(content, str):
            yield from _text_problems(where, content)
            content = [{"type": "text", "text": content or "x"}]
        elif not isinstance(content, list) or not content:
            yield f"{where}.content: content must be a non-empty string or list of blocks"
            content = []
        uses: list[str] = []
        answered: set[str] = set()
        seen_other = False
        for j, block in enumerate(content):
            at = f"{where}.content.{j}"
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in BLOCK_TYPES:
                yield f"{at}.type: unknown content block type {kind!r}"
                continue
            counted.append("cache_control" in block)
            yield from _cache_control_problems(at, block.get("cache_control"))
            if kind == "text":
                yield from _text_problems(at, block.get("text"))
            if kind == "tool_use":
                yield from _tool_use_problems(at, block, role, tools, tool_names, seen_ids)
                uses.append(str(block.get("id")))
            if kind == "tool_result":
                tid = block.get("tool_use_id")
                if not isinstance(tid, str):
                    yield f"{at}.tool_use_id: Input should be a valid string"
                elif role != "user":
                    yield f"{at}: tool_result blocks are only allowed in user messages"
                elif seen_other:
                    yield f"{at}: tool_result blocks must come before any other content"
                elif not tools:
                    yield (
                        "Requests which include `tool_use` or `tool_result` blocks must "
                        "define tools."
                    )
                elif tid not in prev_uses:
                    yield (
                        f"{at}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. "
                        "Each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message."
                    )
                elif tid in answered:
                    yield f"{at}: duplicate tool_result for tool_use_id {tid}"
                answered.add(tid)
                yield from _result_content_problems(at, block.get("content", ""))
            else:
                seen_other = True
        missing = [u for u in prev_uses if u not in answered]
        if missing:
            yield (
                f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                "a corresponding `tool_result` block in the next message."
            )
        prev_uses = uses
    last = messages[-1]
    if isinstance(last, dict) and last.get("role") == "assistant":
        if prev_uses:
            yield (
                "messages: the final assistant message has `tool_use` blocks without "
                "`tool_result` blocks after them (prefill cannot contain tool_use)"
            )
        elif not allow_prefill:
            yield (
                "messages: this model does not support assistant message prefill; "
                "the conversation must end with a user message"
            )
        else:
            final = last.get("content")
            tail = final if isinstance(final, str) else (final or [None])[-1]
            text = tail.get("text") if isinstance(tail, dict) else tail
            if isinstance(text, str) and text != text.rstrip():
                yield "messages: final assistant content cannot end with trailing whitespace"


def _tool_use_problems(
    at: str, block: dict, role: str, tools: Any, names: set[str], seen: set[str]
) -> Iterator[str]:
    uid, name = block.get("id"), block.get("name")
    if role != "assistant":
        yield f"{at}: tool_use blocks are only allowed in assistant messages"
    if not isinstance(uid, str) or not TOOL_USE_ID.match(uid):
        yield f"{at}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
    elif uid in seen:
        yield f"{at}: `tool_use` ids must be unique: {uid}"
    seen.add(str(uid))
    if not isinstance(block.get("input"), dict):
        yield f"{at}.input: Input should be a valid dictionary"
    if not tools:
        yield "Requests which include `tool_use` or `tool_result` blocks must define tools."
    elif not isinstance(name, str) or name not in names:
        yield f"{at}.name: tool_use names a tool not in `tools`: {name!r}"


def _result_content_problems(at: str, content: Any) -> Iterator[str]:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        yield f"{at}.content: Input should be a valid string or list of blocks"
        return
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            yield from _text_problems(f"{at}.content.{k}", part.get("text"))
        elif kind == "image":
            yield from _image_problems(f"{at}.content.{k}", part.get("source"))
        elif kind != "document":
            yield f"{at}.content.{k}.type: tool_result content must be text, image or document"


IMAGE_MEDIA_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
IMAGE_MAX_BYTES = 5 * 1024 * 1024


def _image_problems(at: str, source: Any) -> Iterator[str]:
    """An image block as the API documents it: a base64 source of one of four types."""
    if not isinstance(source, dict) or source.get("type") not in ("base64", "url"):
        yield f"{at}.source: Input should be a base64 or url image source"
        return
    if source["type"] == "url":
        return
    if source.get("media_type") not in IMAGE_MEDIA_TYPES:
        yield (
            f"{at}.source.media_type: Input should be 'image/jpeg', 'image/png', "
            "'image/gif' or 'image/webp'"
        )
    data = source.get("data")
    if not isinstance(data, str) or not data:
        yield f"{at}.source.data: base64 data is required"
        return
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        yield f"{at}.source.data: the image data is not valid base64"
        return
    if len(raw) > IMAGE_MAX_BYTES:
        yield f"{at}.source.data: image exceeds 5 MB maximum: {len(raw)} bytes"


# ---------------------------------------------------------------------------- the cache


def tokens(chars: int) -> int:
    """Estimated tokens of `chars` characters (about four per token)."""
    return (chars + 3) // 4
