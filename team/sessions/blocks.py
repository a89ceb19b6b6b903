"""Foreign content blocks in our conversation model, with nothing lost silently.

Our model has text, tool_use and tool_result blocks. The rest keeps its weight:
- a thinking block becomes text ("[thinking] ..."), so its tokens are still counted;
- an image becomes a placeholder text as heavy as the image is in tokens (Anthropic bills
  an image about width x height / 750 tokens, at most ~1,600 after its resize), padded
  with spaces, so the replay bills it without carrying the pixels;
- anything else unknown becomes text with its JSON, and is counted in the report.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections import Counter
from typing import Any

from team.core.conversation import Block, TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.base import CHARS_PER_TOKEN  # a placeholder's weight: the replay's estimate

IMAGE_MAX_TOKENS = 1600

# Tool names of the known agents, as ours (so preserve_tools = ["read_file"] means the
# same thing for every log). Names not listed are kept as recorded.
TOOL_NAMES: dict[str, str] = {
    # Claude Code
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "NotebookEdit": "edit_file",
    "Bash": "bash",
    # OpenAI Codex CLI
    "shell": "bash",
    "shell_command": "bash",
    "exec_command": "bash",
    "local_shell": "bash",
    "apply_patch": "edit_file",
    # Gemini CLI
    "run_shell_command": "bash",
    "read_many_files": "read_file",
    "replace": "edit_file",
    "edit": "edit_file",
    # ours and Gemini's own spellings map to themselves
    "read_file": "read_file",
    "write_file": "write_file",
    "edit_file": "edit_file",
    "bash": "bash",
}


def tool_name(name: str, renamed: Counter[str]) -> str:
    ours = TOOL_NAMES.get(name, name)
    if ours != name:
        renamed[f"{name} -> {ours}"] += 1
    return ours


def tool_arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments (an object, or its JSON text, as OpenAI-style logs write them).

    Arguments that are not a JSON object are kept whole under "arguments", so nothing of
    what the call carried is lost.
    """
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {"arguments": raw}
    return value if isinstance(value, dict) else {"arguments": value}


def image_tokens(source: dict[str, Any]) -> int:
    """Tokens an image costs: from its pixel size when the header says, else the cap."""
    data = source.get("data") if isinstance(source, dict) else None
    if isinstance(data, str) and data:
        try:
            head = base64.b64decode(data[:4096] + "=" * (-min(len(data), 4096) % 4))
        except (binascii.Error, ValueError):
            head = b""
        size = _pixel_size(head)
        if size:
            w, h = size
            scale = min(1.0, (1_150_000 / (w * h)) ** 0.5) if w * h else 1.0
            return max(1, min(IMAGE_MAX_TOKENS, int(w * scale * h * scale / 750)))
    return IMAGE_MAX_TOKENS


def _pixel_size(head: bytes) -> tuple[int, int] | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return struct.unpack("<HH", head[6:10])
    if head.startswith(b"\xff\xd8"):  # JPEG: walk the segments to a start-of-frame
        i = 2
        while i + 9 < len(head):
            if head[i] != 0xFF:
                return None
            marker, length = head[i + 1], struct.unpack(">H", head[i + 2 : i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", head[i + 5 : i + 9])
                return w, h
            i += 2 + length
    return None


def image_text(source: dict[str, Any], kept: Counter[str]) -> str:
    """The placeholder for an image: a label padded to the image's token weight."""
    kept["images"] += 1
    tokens = image_tokens(source)
    media = source.get("media_type", "image") if isinstance(source, dict) else "image"
    label = f"[image {media}, ~{tokens} tokens]"
    return label + " " * max(0, tokens * CHARS_PER_TOKEN - len(label))


def thinking_text(text: str, kept: Counter[str]) -> str | None:
    kept["thinking blocks"] += 1
    return f"[thinking]\n{text}" if text.strip() else None


def result_content(content: Any, kept: Counter[str]) -> str:
    """A tool result's content (a string, or a list of text and image blocks) as text."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    parts = []
    for c in content:
        if isinstance(c, dict) and c.get("type") == "text":
            parts.append(str(c.get("text", "")))
        elif isinstance(c, dict) and c.get("type") == "image":
            parts.append(image_text(c.get("source") or {}, kept))
        else:
            parts.append(json.dumps(c, ensure_ascii=False))
    return "\n".join(parts)


def anthropic_blocks(content: Any, kept: Counter[str], renamed: Counter[str]) -> list[Block]:
    """Messages-API content (a string or a list of blocks) in our model.

    Raises:
        ValueError: a block that is not an object.
    """
    if isinstance(content, str):
        return [TextBlock(content)]
    if not isinstance(content, list):
        raise ValueError(f"message content is {type(content).__name__}, not a list or text")
    out: list[Block] = []
    for b in content:
        if not isinstance(b, dict):
            raise ValueError("a content block is not a JSON object")
        kind = b.get("type")
        if kind == "text":
            out.append(TextBlock(str(b.get("text", ""))))
        elif kind == "tool_use" or kind == "server_tool_use":
            inp = b.get("input")
            name = tool_name(str(b.get("name", "")), renamed)
            out.append(
                ToolUseBlock(str(b.get("id", "")), name, inp if isinstance(inp, dict) else {})
            )
        elif kind == "tool_result":
            out.append(
                ToolResultBlock(
                    str(b.get("tool_use_id", "")),
                    result_content(b.get("content"), kept),
                    "",
                    bool(b.get("is_error", False)),
                )
            )
        elif kind == "thinking":
            text = thinking_text(str(b.get("thinking", "")), kept)
            if text:
                out.append(TextBlock(text))
        elif kind == "redacted_thinking":
            kept["thinking blocks"] += 1  # encrypted: no text to count
        elif kind == "image":
            out.append(TextBlock(image_text(b.get("source") or {}, kept)))
        else:
            kept[f"{kind} blocks (as text)"] += 1
            out.append(TextBlock(json.dumps(b, ensure_ascii=False)))
    return out


def name_results(turns: list[Any]) -> None:
    """Give every tool result the name of the call it answers (micro compaction uses it)."""
    names: dict[str, str] = {}
    for t in turns:
        for i, b in enumerate(t.blocks):
            if isinstance(b, ToolUseBlock):
                names[b.id] = b.name
            elif isinstance(b, ToolResultBlock) and not b.name and b.tool_use_id in names:
                t.blocks[i] = ToolResultBlock(
                    b.tool_use_id, b.content, names[b.tool_use_id], b.is_error
                )
