"""The fake Messages API is strict: raw JSON the real API rejects gets the API's 400."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pytest
from fakeapi import FakeMessagesAPI, ScriptedResponder, load_record

HERE = Path(__file__).parent
HEADERS = {
    "x-api-key": "sk-test-dummy",
    "anthropic-version": "2023-06-01",
    "content-type": "application/json",
}
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
TOOLS = [
    {"name": "bash", "description": "run a command", "input_schema": SCHEMA},
    {"name": "read_file", "description": "read a file", "input_schema": SCHEMA},
]


def valid() -> dict[str, Any]:
    """A request using every feature correctly: tools, a tool round, results first."""
    return {
        "model": "claude-test",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "You are 'alice'."}],
        "tools": copy.deepcopy(TOOLS),
        "messages": [
            {"role": "user", "content": "list the files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Listing."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "bash",
                        "input": {"command": "ls"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt b.txt"},
                    {"type": "text", "text": "go on"},
                ],
            },
        ],
    }


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{url}/v1/messages",
        data=data,
        method="POST",
        headers=HEADERS if headers is None else headers,
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def api():
    with FakeMessagesAPI() as server:
        yield server


def edit(fn) -> dict[str, Any]:
    body = valid()
    fn(body)
    return body


def msgs(body: dict) -> list[dict]:
    return body["messages"]


INVALID = {
    "missing model": (lambda b: b.pop("model"), "model: Field required"),
    "missing max_tokens": (lambda b: b.pop("max_tokens"), "max_tokens: Field required"),
    "missing messages": (lambda b: b.pop("messages"), "messages: Field required"),
    "negative max_tokens": (lambda b: b.update(max_tokens=-1), "greater than or equal to 0"),
    "string max_tokens": (lambda b: b.update(max_tokens="10"), "valid integer"),
    "no messages": (lambda b: b.update(messages=[]), "at least one message"),
    "first message assistant": (
        lambda b: msgs(b).insert(0, {"role": "assistant", "content": "hi"}),
        "first message must use the user role",
    ),
    "unknown role": (lambda b: msgs(b)[0].update(role="system"), "'user' or 'assistant'"),
    "empty content list": (lambda b: msgs(b)[0].update(content=[]), "non-empty"),
    "empty content string": (lambda b: msgs(b)[0].update(content=""), "must be non-empty"),
    "empty text block": (
        lambda b: msgs(b)[2]["content"][1].update(text=""),
        "text content blocks must be non-empty",
    ),
    "whitespace text block": (
        lambda b: msgs(b)[1]["content"][0].update(text=" \n"),
        "non-whitespace text",
    ),
    "tool_use without result": (
        lambda b: msgs(b)[2].update(content="no results here"),
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
    ),
    "result for unknown tool_use": (
        lambda b: msgs(b)[2]["content"][0].update(tool_use_id="toolu_9"),
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9",
    ),
    "result after text": (
        lambda b: msgs(b)[2]["content"].reverse(),
        "must come before any other content",
    ),
    "duplicate tool_use ids": (
        lambda b: (
            msgs(b)[1]["content"].append(dict(msgs(b)[1]["content"][1])),
            msgs(b)[2]["content"].insert(1, dict(msgs(b)[2]["content"][0])),
        ),
        "ids must be unique: toolu_1",
    ),
    "tool_result in assistant turn": (
        lambda b: msgs(b)[1]["content"].insert(
            0, {"type": "tool_result", "tool_use_id": "x", "content": "r"}
        ),
        "only allowed in user messages",
    ),
    "tool_use in user turn": (
        lambda b: msgs(b)[0].update(
            content=[{"type": "tool_use", "id": "toolu_0", "name": "bash", "input": {}}]
        ),
        "only allowed in assistant messages",
    ),
    "ends on assistant tool_use": (lambda b: msgs(b).pop(), "prefill cannot contain tool_use"),
    "plain prefill": (
        lambda b: msgs(b).append({"role": "assistant", "content": "Sure"}),
        "does not support assistant message prefill",
    ),
    "more than four cache breakpoints": (
        lambda b: (
            b["system"][0].update(cache_control={"type": "ephemeral"}),
            b["tools"][1].update(cache_control={"type": "ephemeral"}),
            *(
                blk.update(cache_control={"type": "ephemeral"})
                for m in msgs(b)[1:]
                for blk in m["content"]
            ),
        ),
        "A maximum of 4 blocks with cache_control may be provided. Found 6.",
    ),
    "top-level cache_control counts": (
        lambda b: (
            b.update(cache_control={"type": "ephemeral"}),
            *(
                blk.update(cache_control={"type": "ephemeral"})
                for m in msgs(b)[1:]
                for blk in m["content"]
            ),
        ),
        "Found 5.",
    ),
    "cache_control type": (
        lambda b: b["system"][0].update(cache_control={"type": "persistent"}),
        "cache_control.type: Input should be 'ephemeral'",
    ),
    "cache_control ttl": (
        lambda b: b["system"][0].update(cache_control={"type": "ephemeral", "ttl": "1d"}),
        "cache_control.ttl",
    ),
    "tool name with a space": (
        lambda b: b["tools"][0].update(name="run bash"),
        "tools.0.name: String should match",
    ),
    "tool name too long": (
        lambda b: b["tools"][1].update(name="x" * 65),
        "tools.1.name: String should match",
    ),
    "duplicate tool names": (
        lambda b: b["tools"][1].update(name="bash"),
        "Tool names must be unique",
    ),
    "tool without input_schema": (lambda b: b["tools"][0].pop("input_schema"), "input_schema"),
    "unknown tool_choice": (
        lambda b: b.update(tool_choice={"type": "sometimes"}),
        "tool_choice.type",
    ),
    "tool_choice names a missing tool": (
        lambda b: b.update(tool_choice={"type": "tool", "name": "fly"}),
        "no tool named 'fly'",
    ),
    "tool_choice without tools": (
        lambda b: (b.pop("tools"), b.update(messages=msgs(b)[:1], tool_choice={"type": "none"})),
        "tool_choice may only be specified while providing tools",
    ),
    "tool_use names a tool not in tools": (
        lambda b: msgs(b)[1]["content"][1].update(name="deploy"),
        "tool_use names a tool not in `tools`: 'deploy'",
    ),
    "tool blocks without tools": (lambda b: b.pop("tools"), "must define tools"),
    "unknown block type": (
        lambda b: msgs(b)[0].update(content=[{"type": "video", "url": "x"}]),
        "unknown content",
    ),
    "tool_use input not an object": (
        lambda b: msgs(b)[1]["content"][1].update(input="ls"),
        "input: Input should be",
    ),
    "unknown top-level key": (
        lambda b: b.update(cache_breakpoints=[1]),
        "cache_breakpoints: Extra inputs",
    ),
}


def test_a_valid_request_is_answered_in_the_api_shape(api):
    status, out = post(api.url, valid())
    assert status == 200, out
    msg = anthropic.types.Message.model_validate(out)  # the SDK's own model accepts it
    assert msg.role == "assistant" and msg.content[0].text == "OK"
    assert msg.stop_reason == "end_turn" and msg.usage.input_tokens > 0


@pytest.mark.parametrize("case", list(INVALID))
def test_rejects_what_the_real_api_rejects(api, case):
    mutate, expected = INVALID[case]
    before = len(api.rejections)
    status, out = post(api.url, edit(mutate))
    assert status == 400, f"{case}: accepted"
    assert out["type"] == "error"
    assert out["error"]["type"] == "invalid_request_error"
    assert expected in out["error"]["message"]
    assert len(api.rejections) == before + 1
    assert api.rejections[-1].error == out["error"]["message"]


def test_prefill_accepted_when_allowed_but_not_with_trailing_whitespace():
    with FakeMessagesAPI(allow_prefill=True) as server:
        body = valid()
        msgs(body).append({"role": "assistant", "content": "The answer is"})
        assert post(server.url, body)[0] == 200
        msgs(body)[-1]["content"] = "The answer is "
        status, out = post(server.url, body)
        assert status == 400 and "trailing whitespace" in out["error"]["message"]


def test_max_tokens_zero_prewarms_the_cache_without_output(api):
    body = edit(lambda b: b.update(max_tokens=0))
    body["system"][0]["cache_control"] = {"type": "ephemeral"}
    status, out = post(api.url, body)
    assert status == 200 and out["content"] == [] and out["stop_reason"] == "max_tokens"
    assert out["usage"]["cache_creation_input_tokens"] > 0


def test_credentials_and_version_headers_are_required(api):
    no_key = {k: v for k, v in HEADERS.items() if k != "x-api-key"}
    status, out = post(api.url, valid(), no_key)
    assert status == 401 and out["error"]["type"] == "authentication_error"
    no_version = {k: v for k, v in HEADERS.items() if k != "anthropic-version"}
    status, out = post(api.url, valid(), no_version)
    assert status == 400 and "anthropic-version" in out["error"]["message"]
    bearer = {**no_key, "authorization": "Bearer sk-test-dummy"}  # how SDK 2.x sends a key
    assert post(api.url, valid(), bearer)[0] == 200
    assert post(api.url, b"{not json")[0] == 400
    assert all(c.headers.get("x-api-key", "<redacted>") == "<redacted>" for c in api.calls)
    assert all("sk-test" not in json.dumps(c.headers) for c in api.calls)


def test_prompt_cache_writes_then_reads_the_marked_prefix():
    with FakeMessagesAPI() as server:
        body = valid()
        body["system"][0]["cache_control"] = {"type": "ephemeral"}
        first = post(server.url, body)[1]["usage"]
        second = post(server.url, body)[1]["usage"]
        assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 0
        assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
        assert second["cache_creation_input_tokens"] == 0
        assert second["input_tokens"] == first["input_tokens"]
        # A longer conversation marked further on reads the old prefix and writes the rest.
        msgs(body)[2]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        third = post(server.url, body)[1]["usage"]
        assert third["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
        assert third["cache_creation_input_tokens"] > 0
        # Changing the system prompt changes every prefix: nothing is read.
        body["system"][0]["text"] = "You are 'bob'."
        assert post(server.url, body)[1]["usage"]["cache_read_input_tokens"] == 0


def test_injected_failures_come_before_any_state_change():
    script = ScriptedResponder(["first", "second"])
    with FakeMessagesAPI(script, retry_after_ms=5) as server:
        server.fail_next(429, 529, 500)
        seen = [post(server.url, valid()) for _ in range(4)]
        assert [s for s, _ in seen] == [429, 529, 500, 200]
        assert [o["error"]["type"] for _, o in seen[:3]] == [
            "rate_limit_error",
            "overloaded_error",
            "api_error",
        ]
        assert seen[3][1]["content"][0]["text"] == "first"  # failures did not use up a reply
        assert [c.injected for c in server.calls] == [True, True, True, False]
        assert server.rejections == []


def test_seeded_failure_rate_is_reproducible():
    def statuses(seed: int) -> list[int]:
        with FakeMessagesAPI(failure_rate=0.5, seed=seed) as server:
            return [post(server.url, valid())[0] for _ in range(12)]

    run = statuses(7)
    assert run == statuses(7)
    assert 200 in run and set(run) - {200} and set(run) <= {200, 429, 529, 500}


def test_injected_failure_headers_keep_sdk_backoff_short():
    with FakeMessagesAPI(retry_after_ms=5) as server:
        server.fail_next(429)
        req = urllib.request.Request(
            f"{server.url}/v1/messages",
            method="POST",
            data=json.dumps(valid()).encode(),
            headers=HEADERS,
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        assert err.value.headers["retry-after-ms"] == "5"
        assert err.value.headers["retry-after"] == "0"


def test_tool_use_ids_are_filled_and_unique():
    reply = {"content": [{"type": "tool_use", "name": "bash", "input": {"command": "ls"}}]}
    with FakeMessagesAPI(lambda req: reply) as server:
        outs = [post(server.url, valid())[1] for _ in range(3)]
    ids = [o["content"][0]["id"] for o in outs]
    assert len(set(ids)) == 3 and all(o["stop_reason"] == "tool_use" for o in outs)


def test_runs_as_a_process_with_a_port_file_and_a_record(tmp_path):
    (tmp_path / "myreplies.py").write_text(
        "def reply(request):\n"
        "    n = len(request['messages'])\n"
        "    return {'content': [{'type': 'text', 'text': f'saw {n} messages'}]}\n"
    )
    port_file, record = tmp_path / "port", tmp_path / "calls.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "fakeapi.py"),
            "--port-file",
            str(port_file),
            "--responder",
            "myreplies:reply",
            "--record",
            str(record),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert port_file.exists(), proc.stderr.read() if proc.poll() is not None else "timeout"
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        status, out = post(url, valid())
        assert status == 200 and out["content"][0]["text"] == "saw 3 messages"
        assert post(url, edit(lambda b: b.pop("model")))[0] == 400
    finally:
        proc.terminate()
        stdout, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert "listening on http://127.0.0.1:" in stdout
    calls = load_record(record)
    assert [c["status"] for c in calls] == [200, 400]
    assert calls[1]["error"] == "model: Field required"
    assert "sk-test" not in record.read_text()
