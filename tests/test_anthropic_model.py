"""AnthropicModel end to end through the real SDK against the local fake Messages API."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from fakeapi import FakeMessagesAPI, ScriptedResponder

from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock, append_user
from team.core.errors import UserError
from team.llm import make_model
from team.llm.anthropic_model import AnthropicModel
from team.llm.base import ModelError, ModelRequest, ToolSpec

KEY = "sk-test-dummy-0123456789"
BASH = ToolSpec(
    "bash",
    "Run a shell command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
READ = ToolSpec(
    "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
)
CREDENTIAL_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "ANTHROPIC_FEDERATION_RULE_ID",
    "ANTHROPIC_ORGANIZATION_ID",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_CONFIG_DIR",
)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(autouse=True)
def offline_env(monkeypatch, tmp_path):
    """Every test: a dummy key, no profiles from disk, and a base URL that is never remote."""
    for var in CREDENTIAL_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # the SDK looks for profiles under ~/.config
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", closed_port_url())


def serve(monkeypatch, api: FakeMessagesAPI) -> FakeMessagesAPI:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    return api


def request(*messages: Message, **kw) -> ModelRequest:
    kw.setdefault("system", "You are 'alice', role: coder, team: demo.")
    return ModelRequest(messages=list(messages) or [Message.user("hello")], **kw)


def test_text_round_trip_and_request_shape(monkeypatch):
    with serve(monkeypatch, FakeMessagesAPI(ScriptedResponder(["Hello, I am alice."]))) as api:
        model = AnthropicModel("claude-test-1")
        resp = model.complete(request(max_tokens=321))
    assert model.name == "claude-test-1"
    assert resp.content == (TextBlock("Hello, I am alice."),)
    assert resp.stop_reason == "end_turn"
    assert resp.message() == Message.assistant("Hello, I am alice.")
    [call] = api.calls
    assert call.status == 200 and call.headers["authorization"] == "<redacted>"
    body = call.body
    assert body["model"] == "claude-test-1" and body["max_tokens"] == 321
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are 'alice', role: coder, team: demo.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert "tools" not in body and "tool_choice" not in body
    usage = call.response["usage"]
    assert resp.usage.input_tokens == usage["input_tokens"] > 0
    assert resp.usage.output_tokens == usage["output_tokens"] > 0
    assert resp.usage.cache_write_tokens == usage["cache_creation_input_tokens"] > 0


def test_tool_loop_round_trip_stays_valid(monkeypatch):
    replies = [
        {
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig"},
                {"type": "text", "text": "\n\n"},  # whitespace: must not reach history
                {"type": "tool_use", "id": "toolu_a1", "name": "bash", "input": {"command": "ls"}},
            ],
            "stop_reason": "tool_use",
        },
        "Two files.",
    ]
    with serve(monkeypatch, FakeMessagesAPI(ScriptedResponder(replies))) as api:
        model = AnthropicModel("claude-test-1")
        history = [Message.user("list the files")]
        first = model.complete(request(*history, tools=[BASH, READ]))
        assert first.content == (ToolUseBlock("toolu_a1", "bash", {"command": "ls"}),)
        assert first.stop_reason == "tool_use"
        history.append(first.message())
        append_user(history, ToolResultBlock("toolu_a1", "a.txt\nb.txt", name="bash"))
        second = model.complete(request(*history, tools=[BASH, READ]))
    assert second.content == (TextBlock("Two files."),)
    assert api.rejections == [] and len(api.answered) == 2
    sent = api.requests[1]["messages"][2]["content"][0]
    assert sent == {"type": "tool_result", "tool_use_id": "toolu_a1", "content": "a.txt\nb.txt"}
    assert [t["name"] for t in api.requests[1]["tools"]] == ["bash", "read_file"]


def test_usage_maps_cache_read_and_write(monkeypatch):
    with serve(monkeypatch, FakeMessagesAPI()):
        model = AnthropicModel("claude-test-1")
        first = model.complete(request()).usage
        second = model.complete(request()).usage
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 0
    assert second.cache_read_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    reported = {
        "content": [{"type": "text", "text": "ok"}],
        "usage": {
            "input_tokens": 11,
            "output_tokens": 5,
            "cache_read_input_tokens": 7,
            "cache_creation_input_tokens": 3,
        },
    }
    with serve(monkeypatch, FakeMessagesAPI(lambda req: reported)):
        usage = AnthropicModel("claude-test-1").complete(request()).usage
    assert (usage.input_tokens, usage.output_tokens) == (11, 5)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (7, 3)
    assert usage.context_tokens == 26


def conversation(turns: int) -> list[Message]:
    msgs = [Message.user("start")]
    for i in range(turns):
        msgs += [Message.assistant(f"step {i}"), Message.user(f"go on {i}")]
    return msgs


def marked(body: dict) -> list[int]:
    return [
        i for i, m in enumerate(body["messages"]) if any("cache_control" in b for b in m["content"])
    ]


def test_cache_breakpoints_go_on_the_last_block_and_never_exceed_four(monkeypatch):
    with serve(monkeypatch, FakeMessagesAPI()) as api:
        model = AnthropicModel("claude-test-1")
        two_blocks = [Message.user("start", "second block"), *conversation(1)[1:]]
        model.complete(request(*two_blocks, cache_breakpoints=(0, 2)))
        model.complete(request(*conversation(4), cache_breakpoints=(0, 2, 4, 6, 8)))
        model.complete(
            request(*conversation(4), cache_breakpoints=(8, 0, 2, 4, 6, 6), cache_system=False)
        )
    assert api.rejections == []
    first, second, third = api.requests
    assert marked(first) == [0, 2]
    assert "cache_control" not in first["messages"][0]["content"][0]
    assert first["messages"][0]["content"][1]["cache_control"] == {"type": "ephemeral"}
    assert marked(second) == [4, 6, 8]  # the system prompt holds the fourth breakpoint
    assert marked(third) == [2, 4, 6, 8] and "cache_control" not in third["system"][0]
    with pytest.raises(ValueError, match="outside"):
        model.params(request(cache_breakpoints=(3,)))


def test_tool_choice_none_sends_tools_but_forbids_using_them(monkeypatch):
    with serve(monkeypatch, FakeMessagesAPI()) as api:
        model = AnthropicModel("claude-test-1")
        model.complete(request(tools=[BASH], tool_choice="none", purpose="summary"))
        model.complete(request(tool_choice="none", system=""))  # no tools: neither key sent
    assert api.rejections == []
    with_tools, without = api.requests
    assert with_tools["tool_choice"] == {"type": "none"}
    assert with_tools["tools"][0]["name"] == "bash"
    assert "tools" not in without and "tool_choice" not in without and "system" not in without


def test_retries_through_429_529_500_then_succeeds(monkeypatch):
    with serve(monkeypatch, FakeMessagesAPI(ScriptedResponder(["finally"]))) as api:
        api.fail_next(429, 529, 500)
        started = time.monotonic()
        resp = AnthropicModel("claude-test-1", max_retries=4).complete(request())
        elapsed = time.monotonic() - started
    assert resp.content == (TextBlock("finally"),)
    assert [c.status for c in api.calls] == [429, 529, 500, 200]
    assert [c.headers["x-stainless-retry-count"] for c in api.calls] == ["0", "1", "2", "3"]
    assert elapsed < 5


def test_permanent_500_becomes_one_line_model_error(monkeypatch):
    api = FakeMessagesAPI(failure_rate=1.0, failure_statuses=(500,))
    with serve(monkeypatch, api), pytest.raises(ModelError) as err:
        AnthropicModel("claude-test-1", max_retries=2).complete(request())
    msg = str(err.value)
    assert len(api.calls) == 3  # the first attempt and the SDK's two retries
    assert "\n" not in msg and KEY not in msg
    assert msg.startswith("Anthropic API error 500 api_error: injected api_error")
    assert "after 2 retries" in msg


def test_invalid_request_400_is_a_model_error_without_retries(monkeypatch):
    dangling = [Message.user("go"), Message.assistant(ToolUseBlock("toolu_x", "bash", {}))]
    with serve(monkeypatch, FakeMessagesAPI()) as api, pytest.raises(ModelError) as err:
        AnthropicModel("claude-test-1").complete(request(*dangling, tools=[BASH]))
    msg = str(err.value)
    assert len(api.calls) == 1 and api.rejections[0].error in msg
    assert msg.startswith("Anthropic API error 400 invalid_request_error: ")
    assert "\n" not in msg and KEY not in msg and "retries" not in msg


def test_unreachable_api_is_a_model_error():
    with pytest.raises(ModelError, match=r"cannot reach the Anthropic API at http://127\.0\.0\.1"):
        AnthropicModel("claude-test-1", max_retries=0).complete(request())


def test_slow_api_times_out_as_model_error(monkeypatch):
    release = threading.Event()

    def slow(req):
        release.wait(5)
        return {"content": [{"type": "text", "text": "late"}]}

    with serve(monkeypatch, FakeMessagesAPI(slow)):
        try:
            with pytest.raises(ModelError, match="timed out"):
                AnthropicModel("claude-test-1", max_retries=0, timeout=0.3).complete(request())
        finally:
            release.set()


def test_missing_api_key_is_a_user_error(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(UserError) as err:
        AnthropicModel("claude-test-1")
    assert str(err.value) == (
        "ANTHROPIC_API_KEY is not set; set it, or run offline with --model sim"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    with pytest.raises(UserError):
        make_model("claude-sonnet-4-5")
    # A config dir without a profile: the SDK's own complaint is kept, on the same line.
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(UserError) as err:
        AnthropicModel("claude-test-1")
    assert str(err.value).startswith("ANTHROPIC_API_KEY is not set; set it")
    assert "\n" not in str(err.value)


def test_make_model_builds_the_named_model(monkeypatch):
    model = make_model("claude-sonnet-4-5")
    assert isinstance(model, AnthropicModel) and model.name == "claude-sonnet-4-5"
    monkeypatch.delenv("ANTHROPIC_API_KEY")  # the simulator needs no key
    assert type(make_model("sim")).__name__ == "SimModel"


def test_concurrent_calls_from_many_threads(monkeypatch):
    reply = {"content": [{"type": "tool_use", "name": "bash", "input": {"command": "pwd"}}]}
    with serve(monkeypatch, FakeMessagesAPI(lambda req: reply)) as api:
        model = AnthropicModel("claude-test-1")
        results: list = []
        errors: list = []

        def agent(n: int) -> None:
            try:
                for i in range(4):
                    results.append(
                        model.complete(
                            request(
                                Message.user(f"agent {n} step {i}"), tools=[BASH], agent=f"a{n}"
                            )
                        )
                    )
            except Exception as e:  # surfaced below: a thread's failure must fail the test
                errors.append(e)

        threads = [threading.Thread(target=agent, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
    assert errors == [] and len(results) == 24 and api.rejections == []
    ids = {r.content[0].id for r in results}
    assert len(ids) == 24
