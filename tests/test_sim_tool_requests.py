"""The simulator calls a tool a message names (use `NAME {json}`), so a sim team can be
given any tool to use, an MCP server's included."""

from __future__ import annotations

from team.core.conversation import InboxMail, Message, TextBlock
from team.llm.base import AgentFacts, ModelRequest, ToolSpec
from team.llm.sim_policy import decide, tool_requests

TOOLS = [
    ToolSpec(n, n, {"type": "object"})
    for n in ("claim_task", "complete_task", "bash", "mcp__time__convert_time")
]


def request(body: str, *, task: int | None = None) -> ModelRequest:
    kind = "task" if task is not None else "message"
    mail = InboxMail("user", kind, "m1", task, body)
    tasks = ((task, body[:80]),) if task is not None else ()
    facts = AgentFacts("alice", "coder", "t", (), tasks, (mail,))
    return ModelRequest(
        "You are 'alice'", [Message.user(TextBlock.of_mail(mail))], TOOLS, facts=facts
    )


def test_a_named_tool_is_called_with_its_json_arguments():
    args = '{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}'
    reply = decide(request(f"Please use `mcp__time__convert_time {args}` now"))
    assert (
        "mcp__time__convert_time",
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    ) in reply.calls
    assert "Using mcp__time__convert_time as asked." in reply.text


def test_in_a_task_the_claim_comes_first():
    reply = decide(request('use `mcp__time__convert_time {"time": "1"}`', task=3))
    assert [name for name, _ in reply.calls] == ["claim_task", "mcp__time__convert_time"]


def test_a_tool_it_lacks_or_arguments_that_are_not_json_get_a_line_not_a_call():
    reply = decide(request("use `mcp__git__status {}` and use `mcp__time__convert_time {oops}`"))
    assert all(name != "mcp__git__status" for name, _ in reply.calls)
    assert "I have no tool named mcp__git__status." in reply.text
    assert "The arguments for mcp__time__convert_time are not a JSON object." in reply.text


def test_tool_requests_reads_each_request():
    assert tool_requests('use `a {"x": [1, 2]}`, then use `b` and use `c {1}`') == [
        ("a", {"x": [1, 2]}),
        ("b", {}),
        ("c", None),
    ]
