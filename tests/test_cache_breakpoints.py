"""Cache breakpoints through the real SDK against the fake API, and the same sequences
against the simulated cache: a micro clear of result k still reads everything before k.

The sequences are hand-made conversations of one tool call per reply, driven through the
real `Compactor` (its `prepare` before each call and `observe` after, as the agent loop
does), so the requests are exactly the ones an agent would send.
"""

from __future__ import annotations

import json
import urllib.request
from itertools import accumulate, pairwise

import pytest
from fakeapi import FakeMessagesAPI
from fakeapi_cache import LOOKBACK, blocks_of, prefix_tokens

from team.compaction.compactor import Compactor
from team.compaction.history import History
from team.compaction.transcripts import TranscriptStore
from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock
from team.core.events import MemorySink
from team.llm.anthropic_model import AnthropicModel
from team.llm.anthropic_request import request_params
from team.llm.base import AgentFacts, ModelRequest, Prefix, ToolSpec
from team.llm.sim import SimModel, cache_pieces
from team.workspace.config import CompactionConfig

SYSTEM = "You are 'alice', a coder on team demo. " + "Follow the house rules. " * 220
TOOLS = [ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {}})]


def rounds(n: int, size: int = 1200) -> list[list[Message]]:
    """n replies of one bash call each, and the user turn carrying each result."""
    out = []
    for i in range(n):
        call = Message("assistant", (TextBlock(f"step {i}"), ToolUseBlock(f"t{i}", "bash", {})))
        result = Message("user", (ToolResultBlock(f"t{i}", f"out {i} " + "y" * size, "bash"),))
        out.append([call, result])
    return out


class Pause:
    """The compactor's clock: the agent pauses past the 5-minute TTL before call `at`.

    The cost policy buys warm clears only with what clears already saved; a clear on
    a cold cache is free, so after the pause it has savings to spend.
    """

    def __init__(self, at: int = 6) -> None:
        self.at, self.calls = at, 0

    def __call__(self) -> float:
        return 1000.0 + (400.0 if self.calls >= self.at else 0.0)


def drive(model, config: CompactionConfig, n: int, tmp_path, out: dict | None = None):
    """Send the sequence through `model` as the agent loop would; (request, usage) each."""
    clock = Pause()
    compactor = Compactor(
        config,
        model,
        TranscriptStore(tmp_path / "transcripts"),
        MemorySink(),
        facts=AgentFacts("alice", "coder", "demo"),
        prefix=Prefix(SYSTEM, tuple(TOOLS)),
        clock=clock,
    )
    history = History(messages=[Message.user("Please work on task #1.")])
    sent = []
    for k, (call, result) in enumerate(rounds(n)):
        clock.calls = k
        prepared = compactor.prepare(history)
        view, breakpoints = prepared.view, prepared.breakpoints
        request = ModelRequest(
            system=SYSTEM, messages=view, tools=TOOLS, cache_breakpoints=breakpoints, agent="a"
        )
        usage = model.complete(request).usage
        compactor.observe(request, usage)
        sent.append((request, usage))
        history.append_response(call, usage)
        history.append_user(*result.content)
    if out is not None:
        out.update(compactor=compactor, history=history)
    return sent


def flat(request: ModelRequest) -> list[dict]:
    return [b.to_dict() for m in request.messages for b in m.content]


def shared_blocks(a: ModelRequest, b: ModelRequest) -> int:
    """How many message blocks `b` shares with `a` from the start."""
    n = 0
    for x, y in zip(flat(a), flat(b), strict=False):
        if x != y:
            break
        n += 1
    return n


def check_reads_the_longest_shared_prefix(sent, prefix_of) -> int:
    """Every request reads exactly what it shares with the one before; returns the clears."""
    clears = 0
    for (prev, _), (req, usage) in pairwise(sent):
        shared = shared_blocks(prev, req)
        ends = prefix_of(req)  # running tokens per block, tools and system first
        head = len(ends) - len(flat(req))
        assert usage.cache_read_tokens == ends[head + shared - 1]
        clears += shared < len(flat(prev))
    return clears


def fake_prefix(model_id: str):
    def prefix_of(req: ModelRequest) -> list[int]:
        return prefix_tokens(request_params(model_id, req))

    return prefix_of


def sim_prefix(req: ModelRequest) -> list[int]:
    pieces, _ = cache_pieces(req)
    return list(accumulate(p.tokens for p in pieces))


EAGER = CompactionConfig(micro_policy="eager", auto=False)
COST = CompactionConfig(auto=False)


@pytest.fixture
def api(monkeypatch):
    with FakeMessagesAPI() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-real")
        yield server


@pytest.mark.parametrize("config", [EAGER, COST], ids=["eager", "cost"])
def test_through_the_sdk_every_clear_still_reads_everything_before_it(api, config, tmp_path):
    sent = drive(AnthropicModel("claude-sonnet-4-5"), config, 30, tmp_path)
    assert api.rejections == []
    clears = check_reads_the_longest_shared_prefix(sent, fake_prefix("claude-sonnet-4-5"))
    assert clears >= (20 if config is EAGER else 2)
    for body in api.requests:
        assert sum(m is not None for _, m in blocks_of(body)) <= 4


@pytest.mark.parametrize("config", [EAGER, COST], ids=["eager", "cost"])
def test_the_same_sequences_against_the_sim_cache(config, tmp_path):
    sent = drive(SimModel(), config, 30, tmp_path)
    clears = check_reads_the_longest_shared_prefix(sent, sim_prefix)
    assert clears >= (20 if config is EAGER else 2)


def test_the_old_breakpoints_lose_the_prefix_on_every_clear(api, tmp_path):
    """Why: with marks only on the last two messages, a clear three results back reads
    nothing past the results (the failure the planner fixes)."""
    sent = drive(SimModel(), EAGER, 12, tmp_path)  # the same requests, an empty fake cache
    model = AnthropicModel("claude-sonnet-4-5")
    # tools, system and the first user message: everything before the first result
    before_results = fake_prefix("claude-sonnet-4-5")(sent[0][0])[len(TOOLS) + 1]
    old = [
        ModelRequest(
            system=SYSTEM,
            messages=req.messages,
            tools=TOOLS,
            cache_breakpoints=tuple(
                i for i in (len(req.messages) - 3, len(req.messages) - 1) if i >= 0
            ),
        )
        for req, _ in sent
    ]
    usages = [model.complete(r).usage for r in old][6:]
    assert all(u.cache_read_tokens <= before_results for u in usages)
    assert all(u.cache_read_tokens > before_results for _, u in sent[6:])  # the planner


def body(model: str, n_blocks: int, marks: list[int], size: int = 400) -> dict:
    content = [{"type": "text", "text": f"block {i} " + "z" * size} for i in range(n_blocks)]
    for i in marks:
        content[i]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": model,
        "max_tokens": 10,
        "system": [{"type": "text", "text": "system"}],
        "messages": [{"role": "user", "content": content}],
    }


def post(api, payload: dict) -> dict:
    req = urllib.request.Request(
        f"{api.url}/v1/messages",
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["usage"]


def test_fake_api_looks_back_20_blocks_from_a_breakpoint():
    for extra, hit in ((LOOKBACK, True), (LOOKBACK + 1, False)):
        with FakeMessagesAPI() as server:
            post(server, body("claude-sonnet-4-5", 10, [9]))
            grown = post(server, body("claude-sonnet-4-5", 10 + extra, [9 + extra]))
            cached = prefix_tokens(body("claude-sonnet-4-5", 10, []))[-1]
            assert grown["cache_read_input_tokens"] == (cached if hit else 0)


def test_fake_api_minimum_depends_on_the_model(api):
    payload = body("claude-sonnet-4-5", 20, [19])  # about 2,100 tokens
    assert 1024 < prefix_tokens(payload)[-1] < 4096
    assert post(api, payload)["cache_creation_input_tokens"] > 0
    for model in ("claude-opus-4-5", "claude-haiku-4-5-20251001"):
        usage = post(api, {**payload, "model": model})
        assert usage["cache_creation_input_tokens"] == 0 and usage["cache_read_input_tokens"] == 0


def test_fake_api_entries_expire_after_their_ttl(monkeypatch):
    now = [0.0]
    with FakeMessagesAPI(clock=lambda: now[0]) as server:
        short = body("claude-sonnet-4-5", 12, [11])
        long = json.loads(json.dumps(short))
        long["messages"][0]["content"][11]["cache_control"]["ttl"] = "1h"
        long["messages"][0]["content"][0]["text"] += " (the 1h copy)"
        assert post(server, short)["cache_creation"]["ephemeral_5m_input_tokens"] > 0
        assert post(server, long)["cache_creation"]["ephemeral_1h_input_tokens"] > 0
        now[0] += 301
        assert post(server, short)["cache_read_input_tokens"] == 0
        assert post(server, long)["cache_read_input_tokens"] > 0


def test_a_summary_reads_the_agents_cached_prefix_and_carries_the_cleared_text(api, tmp_path):
    def summary_responder(body):
        return {"content": [{"type": "text", "text": "## Request and intent\nFix it."}]}

    api.responder = summary_responder
    parts: dict = {}
    sent = drive(AnthropicModel("claude-sonnet-4-5"), EAGER, 12, tmp_path, parts)
    compactor, history = parts["compactor"], parts["history"]
    rec = compactor.compact(
        history,
        identity="You are 'alice'.",
        layer="manual",
        trigger="tool",
    )
    assert rec is not None and "Fix it." in rec.first.text()
    body = api.requests[-1]
    assert body["tool_choice"] == {"type": "none"} and [t["name"] for t in body["tools"]] == [
        "bash"
    ]
    usage = api.answered[-1].response["usage"]
    last_request, _ = sent[-1]
    # everything the last agent call sent is read back from the cache
    assert usage["cache_read_input_tokens"] == fake_prefix("claude-sonnet-4-5")(last_request)[-1]
    ask = body["messages"][-1]["content"][-1]["text"]
    placeholders = [
        b["tool_use_id"]
        for m in body["messages"]
        for b in m["content"]
        if b.get("type") == "tool_result" and b["content"].startswith("[Previous: used")
    ]
    assert placeholders
    for m in history.messages:
        for b in m.content:
            if isinstance(b, ToolResultBlock) and b.tool_use_id in placeholders:
                assert b.content in ask  # the full text, not the placeholder
