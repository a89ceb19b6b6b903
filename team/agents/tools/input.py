"""What every tool shares: its result, its spec builder, and the checks of its input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from team.core.conversation import TaskNote
from team.core.errors import UserError
from team.core.images import ImageBlock
from team.llm.base import ToolSpec


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model as a `tool_result`: its text, and what it did to the
    board as data (`tasks`), which the loop, replay and the simulator read instead of
    the text. `images` go back after the text (an MCP tool's screenshot)."""

    content: str
    is_error: bool = False
    tasks: tuple[TaskNote, ...] = ()
    images: tuple[ImageBlock, ...] = ()


class ToolInputError(UserError):
    """The model called a tool with missing or wrong-typed input."""


def spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    schema = {"type": "object", "properties": props, "required": required}
    return ToolSpec(name, description, schema)


def text(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


# -- input checks: one clear line for each way a model gets an input wrong -------------


def need_str(input: dict[str, Any], key: str) -> str:
    if key not in input:
        raise ToolInputError(f"missing required input {key!r}")
    value = input[key]
    if not isinstance(value, str):
        raise ToolInputError(f"{key!r} must be a string, got {type(value).__name__}")
    return value


def opt_str(input: dict[str, Any], key: str) -> str | None:
    if input.get(key) is None:
        return None
    return need_str(input, key)


def need_int(input: dict[str, Any], key: str) -> int:
    if key not in input:
        raise ToolInputError(f"missing required input {key!r}")
    value = input[key]
    # Models sometimes quote numbers ("3", "#3"); accept those, refuse true/1.5/"abc".
    if isinstance(value, str) and value.strip().lstrip("#").isdigit():
        return int(value.strip().lstrip("#"))
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"{key!r} must be an integer, got {value!r}")
    return value


def opt_int(input: dict[str, Any], key: str) -> int | None:
    if input.get(key) is None:
        return None
    return need_int(input, key)
