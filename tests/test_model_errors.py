"""How AnthropicModel classifies failures, through the real SDK against the local fake API.

The agent loop acts on the class: a permanent error stops the agent, a transient one is
retried after a backoff the loop controls, a prompt-too-long one is compacted away.
"""

from __future__ import annotations

import socket

import pytest
from fakeapi import FakeMessagesAPI

from team.core.conversation import Message
from team.llm.anthropic_model import AnthropicModel
from team.llm.base import (
    ModelRequest,
    PermanentModelError,
    PromptTooLong,
    TransientModelError,
)

KEY = "sk-test-dummy-0123456789"


@pytest.fixture(autouse=True)
def offline_env(monkeypatch, tmp_path):
    for var in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def request(text: str = "hello") -> ModelRequest:
    return ModelRequest(system="You are 'alice'.", messages=[Message.user(text)])


def fail_once(monkeypatch, status: int) -> tuple[Exception, FakeMessagesAPI]:
    with FakeMessagesAPI(retry_after_ms=1500) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        api.fail_next(status)
        with pytest.raises(Exception) as err:
            AnthropicModel("claude-test-1").complete(request())
    return err.value, api


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (401, "authentication failed (401)"),
        (403, "permission denied (403)"),
        (404, "not found (404)"),
    ],
)
def test_permanent_errors_are_not_retried(monkeypatch, status, reason):
    err, api = fail_once(monkeypatch, status)
    assert isinstance(err, PermanentModelError)
    assert len(api.calls) == 1  # nobody retries what cannot succeed
    assert err.reason == reason
    line = str(err)
    assert line.startswith(f"Anthropic API error {status} ") and "\n" not in line
    assert KEY not in line


@pytest.mark.parametrize("status", [429, 500, 529])
def test_transient_errors_carry_the_servers_retry_hint(monkeypatch, status):
    err, api = fail_once(monkeypatch, status)
    assert isinstance(err, TransientModelError)
    # the SDK does not sleep on its own: the loop waits, where a stop can interrupt it
    assert len(api.calls) == 1
    assert err.retry_after == pytest.approx(1.5)
    assert f"({status})" in err.reason


def test_a_prompt_over_the_window_is_prompt_too_long(monkeypatch):
    with FakeMessagesAPI(context_window=1000) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        model = AnthropicModel("claude-test-1")
        assert model.complete(request("short")).content
        with pytest.raises(PromptTooLong) as err:
            model.complete(request("word " * 2000))
    assert "prompt is too long" in str(err.value)
    assert err.value.reason == "prompt too long"


def test_a_request_over_the_byte_limit_is_prompt_too_long(monkeypatch):
    err, _ = fail_once(monkeypatch, 413)
    assert isinstance(err, PromptTooLong)


def test_no_server_is_transient(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    with pytest.raises(TransientModelError) as err:
        AnthropicModel("claude-test-1").complete(request())
    assert err.value.reason == "cannot connect"
