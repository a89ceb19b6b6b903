"""The pieces of MCP that need no server: names, schema rules, allow-lists, ${VAR}s."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from team.core.errors import UserError
from team.mcp.adapter import McpTool, allowed, offered, reply_of
from team.mcp.config import McpServerConfig, expand
from team.mcp.schema import TOOL_NAME, schema_problem, tool_name


def test_tool_names_fit_the_api_and_never_collide():
    assert tool_name("git", "git_status") == "mcp__git__git_status"
    assert tool_name("fs", "read.file/v2") == "mcp__fs__read_file_v2"
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert len(long_a) == 64 and TOOL_NAME.match(long_a) and long_a != long_b


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "object", "properties": {"a": {"anyOf": [{}, {}]}}}, None),  # nested: fine
        ({"type": "array"}, '"type": "object"'),
        ({"type": "object", "oneOf": [{}]}, "oneOf at the top level"),
        ({"type": "object", "properties": {"a b": {}}}, "property names ['a b']"),
        ({"type": "object", "properties": {"k" * 65: {}}}, "property names"),
        ("nope", "not a JSON object"),
    ],
)
def test_schema_rules(schema, why):
    got = schema_problem(schema)
    assert got is None if why is None else why in got


def tool(server, name, schema=None, description=""):
    return SimpleNamespace(
        name=name,
        title=None,
        description=description,
        input_schema=schema or {"type": "object"},
    )


def test_offered_refuses_what_the_api_would_and_two_tools_with_one_model_name():
    tools = [tool("s", "a.b"), tool("s", "a_b"), tool("s", "bad", {"type": "object", "allOf": []})]
    offer, refused = offered("s", tools)
    assert [t.model_name for t in offer] == ["mcp__s__a_b"]
    assert set(refused) == {"a_b", "bad"}


def test_allow_lists():
    tools = [
        McpTool("git", "git_status", "mcp__git__git_status", "", {}),
        McpTool("git", "git_log", "mcp__git__git_log", "", {}),
        McpTool("time", "now", "mcp__time__now", "", {}),
    ]
    names = lambda patterns: [t.model_name for t in allowed(patterns, tools)]  # noqa: E731
    assert names(None) == [t.model_name for t in tools]
    assert names([]) == []
    assert names(["time"]) == ["mcp__time__now"]
    assert names(["mcp__git__git_log", "mcp__time__*"]) == ["mcp__git__git_log", "mcp__time__now"]


def test_results_other_than_text_and_images_are_named():
    content = [
        SimpleNamespace(type="text", text="hello"),
        SimpleNamespace(type="audio", data="AAAA", mime_type="audio/wav"),
        SimpleNamespace(type="resource_link", name="doc", uri="file:///x"),
        SimpleNamespace(type="image", data="AAAA", mime_type="image/bmp"),
    ]
    reply = reply_of(SimpleNamespace(content=content, is_error=False, structured_content=None))
    assert reply.text.splitlines() == [
        "hello",
        "[audio audio/wav, 3 bytes: not shown to the model]",
        "[resource link doc: file:///x]",
        "[image image/bmp] not shown to the model: image/bmp is not one the API takes",
    ]
    assert reply.images == ()
    empty = reply_of(SimpleNamespace(content=[], is_error=False, structured_content={"n": 1}))
    assert empty.text == '{"n": 1}'


def test_variables():
    assert expand("${A}-${B:-two}", {"A": "one"}) == "one-two"
    with pytest.raises(UserError, match=r"\$\{C\} is not set"):
        expand("${C}", {})
    cfg = McpServerConfig(command="~/bin/srv", url=None, headers={}).resolved({})
    assert not cfg.command.startswith("~")
