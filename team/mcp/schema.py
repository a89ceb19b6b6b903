"""What the Messages API accepts of a tool: its name, and its input schema.

One tool the API rejects fails every request that carries it with a 400, which would
stop the agent for good; so a server's tools are checked when it connects, and a tool
that would be rejected is not offered, with one line saying why (`team check` prints
them). The rules are the API's documented ones:

- tool names match ^[a-zA-Z0-9_-]{1,64}$ (the API now allows 128; 64 is what every
  client and older model accepts);
- `input_schema` is a JSON object whose root has "type": "object";
- no `oneOf`, `anyOf` or `allOf` at its top level (nested ones are fine);
- its property names match ^[a-zA-Z0-9_.-]{1,64}$.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PROPERTY_KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
PREFIX = "mcp__"


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>` as the model sees it, within the API's name rule.

    Characters the rule does not allow (MCP names may hold `.` or `/`) become `_`; a
    name past 64 characters keeps its head and ends in a hash of the whole, so two long
    names never meet.
    """
    name = f"{PREFIX}{server}__{re.sub(r'[^a-zA-Z0-9_-]', '_', tool)}"
    if len(name) <= 64:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


def schema_problem(schema: Any) -> str | None:
    """Why the Messages API would reject `schema` as a tool's input_schema, or None."""
    if not isinstance(schema, dict):
        return "its input schema is not a JSON object"
    if schema.get("type") != "object":
        return f'its input schema\'s root must have "type": "object" (not {schema.get("type")!r})'
    top = [k for k in ("oneOf", "anyOf", "allOf") if k in schema]
    if top:
        return f"its input schema has {'/'.join(top)} at the top level, which the API refuses"
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return "its input schema's properties are not an object"
    bad = [k for k in props if not PROPERTY_KEY.match(k)]
    if bad:
        return f"its input property names {bad} do not match {PROPERTY_KEY.pattern}"
    try:
        json.dumps(schema)
    except (TypeError, ValueError) as e:
        return f"its input schema is not JSON: {e}"
    return None
