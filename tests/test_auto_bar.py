"""Compaction that knows what it cannot shrink (issue 25): the auto bar counts the fixed
prefix and the fresh context a compaction leaves, two auto compactions are always the
set growth apart, and one that frees little pauses auto (manual and a prompt too long
still compact)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from team.compaction.auto import MIN_FREED, Bar, growth, min_growth, reach_line
from team.compaction.compactor import Compactor
from team.compaction.history import History
from team.compaction.records import AssistantTurn, UserTurn
from team.compaction.transcripts import TranscriptStore
from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock
from team.core.events import AgentEvent, CompactionEvent, MemorySink
from team.llm.base import AgentFacts, ModelRequest, Prefix, Usage
from team.llm.scripted import ScriptedModel, reply
from team.workspace.config import CompactionConfig

IDENTITY = "<identity>You are 'alice', role: coder, team: demo.</identity>"


def compactor(
    tmp_path, *, prefix_tokens=None, summary="## Current work\nthe parser", clock=None, **cfg
):
    sink = MemorySink()
    extra = {"clock": clock} if clock is not None else {}
    c = Compactor(
        CompactionConfig(**cfg),
        ScriptedModel(summary=reply(summary)),
        TranscriptStore(tmp_path / ".transcripts" / "alice", tmp_path),
        sink,
        facts=AgentFacts("alice", "coder", "demo"),
        prefix=Prefix("You are 'alice'.", ()),
        prefix_tokens=prefix_tokens,
        **extra,
    )
    return c, sink


def test_the_bar_is_the_threshold_while_a_compaction_there_frees_a_quarter_of_it():
    assert Bar(50_000, 8_000).at == 50_000 and not Bar(50_000, 8_000).raised
    assert Bar(50_000, 37_500).at == 50_000  # frees 12,500: well under the threshold
    assert Bar(50_000, 38_000).at == 63_000  # within reach: base + half the threshold


def test_a_prefix_near_or_above_the_threshold_raises_the_bar_past_what_it_can_free():
    bar = Bar(50_000, 60_000)
    assert bar.at == 85_000 and bar.raised  # a compaction there frees 25k, not 0
    assert bar.at - bar.base == growth(50_000) == 25_000
    huge = Bar(50_000, 150_000)  # so large that 25k would free under a fifth
    assert (huge.at - huge.base) / huge.at >= MIN_FREED
    line = reach_line("alice", 60_000, 50_000)
    assert line is not None and "\n" not in line
    assert "60,000" in line and "50,000" in line and "90,096" in line  # 60k + summary + 25k
    assert reach_line("bob", 5_000, 50_000) is None


def tool_turn(i: int, chars: int) -> tuple[Message, UserTurn]:
    use = ToolUseBlock(f"toolu_{i}", "bash", {"command": f"step {i}"})
    call = Message("assistant", (TextBlock(f"step {i}"), use))
    return call, UserTurn((ToolResultBlock(use.id, "x" * chars, "bash"),))


def test_a_60k_prefix_on_a_50k_threshold_compacts_once_per_25k_of_growth(tmp_path):
    c, sink = compactor(tmp_path, threshold=50_000, prefix_tokens=60_000, micro=False)
    h = History([Message.user("work on task #1")])
    autos = 0
    for i in range(400):
        if c.should_auto(h):
            rec = c.compact(h, identity=IDENTITY, layer="auto", trigger="threshold")
            h.apply(rec)
            autos += 1
        call, result = tool_turn(i, 2_000)  # ~500 tokens a reply at 4 chars a token
        context = c.estimate(h)
        h.apply(AssistantTurn(call, Usage(input_tokens=context, output_tokens=20)))
        h.apply(result)
    grown = 400 * 500
    assert autos <= grown // 25_000  # before the fix: one on nearly every call
    assert autos >= 2  # and it does compact: the context would grow without bound
    assert not c.paused and not sink.of(AgentEvent)


@st.composite
def records(draw):
    """Any sequence of turns, with any usage the provider might report."""
    out = []
    for i in range(draw(st.integers(1, 60))):
        chars = draw(st.integers(0, 40_000))
        reported = draw(st.one_of(st.none(), st.integers(0, 300_000)))
        kind = draw(st.sampled_from(["tool", "tool", "tool", "manual", "too_long"]))
        pause = draw(st.sampled_from([5, 5, 5, 400]))  # seconds: now and then the cache expires
        out.append((i, chars, reported, kind, pause))
    return out


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records(),
    st.sampled_from([2_000, 10_000, 50_000]),
    st.sampled_from([None, 0, 5_000, 60_000, 150_000]),
    st.sampled_from([0, 0, 40_000]),
)
def test_no_records_make_two_auto_compactions_without_the_set_growth(
    tmp_path, recs, threshold, prefix_tokens, hidden
):
    """`hidden`: tokens every call is billed that the compactor is not told of (a prefix
    it cannot see): the growth is counted from what the provider said the context was."""
    now = [0.0]
    c, _ = compactor(
        tmp_path, threshold=threshold, prefix_tokens=prefix_tokens, clock=lambda: now[0]
    )
    h = History([Message.user("start")])
    left: int | None = None  # the context the last auto compaction left, as reported
    measured = False
    for i, chars, reported, kind, pause in recs:
        now[0] += pause
        if c.should_auto(h):
            before = c.estimate(h)
            if left is not None:
                assert before - left >= min_growth(threshold), (before, left)
            if not c.planner.cold():
                assert before >= threshold  # on a warm cache, never below the threshold
            rec = c.compact(h, identity=IDENTITY, layer="auto", trigger="threshold")
            assert rec is not None
            h.apply(rec)
            left, measured = rec.tokens_after, False
        call, result = tool_turn(i, chars)
        usage = Usage(input_tokens=(c.estimate(h) + hidden) if reported is None else reported)
        c.observe(ModelRequest(system="", messages=list(h.messages)), usage)  # as the agent
        h.apply(AssistantTurn(call, usage))
        if left is not None and not measured:
            left, measured = max(left, usage.input_total), True
        h.apply(result)
        if kind == "manual" or kind == "too_long":  # these compact whatever the bar says
            layer, trigger = ("manual", "tool") if kind == "manual" else ("auto", "prompt_too_long")
            rec = c.compact(h, identity=IDENTITY, layer=layer, trigger=trigger)
            assert rec is not None
            h.apply(rec)
            left = None  # the next threshold compaction is measured from here on


def test_a_compaction_that_frees_little_pauses_auto_once_and_manual_still_works(tmp_path):
    # a summary as large as what it replaces: the compaction frees next to nothing
    c, sink = compactor(tmp_path, threshold=2_000, summary="## Current work\n" + "y" * 9_000)
    h = History([Message.user("start")])
    for i in range(6):
        call, result = tool_turn(i, 1_600)
        h.apply(AssistantTurn(call, Usage(input_tokens=c.estimate(h))))
        h.apply(result)
    assert c.should_auto(h)
    h.apply(c.compact(h, identity=IDENTITY, layer="auto", trigger="threshold"))
    assert c.paused and "freed only" in c.gate.reason
    paused = [e for e in sink.of(AgentEvent) if e.kind == "auto_paused"]
    assert len(paused) == 1 and "manual compact" in paused[0].detail
    for i in range(6, 60):  # however far it grows, auto waits
        call, result = tool_turn(i, 1_600)
        h.apply(AssistantTurn(call, Usage(input_tokens=c.estimate(h))))
        h.apply(result)
        assert not c.should_auto(h)
    assert len([e for e in sink.of(AgentEvent) if e.kind == "auto_paused"]) == 1
    c.summariser.model.summary = reply("## Current work\nshort again")
    assert c.compact(h, identity=IDENTITY, layer="manual", trigger="tool") is not None
    assert not c.paused
    assert [e.kind for e in sink.of(AgentEvent)] == ["auto_paused", "auto_resumed"]
    assert sum(e.layer == "manual" and e.success for e in sink.of(CompactionEvent)) == 1


def test_on_an_expired_cache_auto_compacts_three_quarters_of_the_way_to_the_threshold(tmp_path):
    # the next call writes the whole context again anyway: a summary now costs about the
    # same, and saves rewriting (then reading) the part it removes
    now = [0.0]
    c, _ = compactor(tmp_path, threshold=50_000, prefix_tokens=10_000, clock=lambda: now[0])
    h = History([Message.user("start")])
    call, result = tool_turn(0, 4 * 33_000)  # ~43k tokens of context with the prefix
    usage = Usage(input_tokens=c.estimate(h))
    c.observe(ModelRequest(system="", messages=list(h.messages)), usage)
    h.apply(AssistantTurn(call, usage))
    h.apply(result)
    bar = c.bar(h)
    assert not bar.raised and bar.cold_at < c.estimate(h) < bar.at == 50_000
    now[0] += 60
    assert not c.should_auto(h)  # warm: the threshold
    now[0] += 600
    assert c.should_auto(h)  # expired
    raised = Bar(50_000, 45_000)
    assert raised.raised and raised.cold_at == raised.at  # a raised bar keeps its growth


def test_past_the_bar_on_a_warm_cache_auto_rents_until_the_reads_pay_for_a_summary(tmp_path):
    # a run may end right after a compaction: with nothing saved yet, auto waits until
    # what it would have saved (0.1x the context above what it leaves, per call) has
    # come to what it costs; never past a quarter of the threshold over the bar
    c, _ = compactor(tmp_path, threshold=50_000, prefix_tokens=20_000, clock=lambda: 0.0)
    h = History([Message.user("start")])

    def call(i: int, chars: int) -> bool:
        turn, result = tool_turn(i, chars)
        usage = Usage(input_tokens=c.estimate(h))
        c.observe(ModelRequest(system="", messages=list(h.messages)), usage)
        h.apply(AssistantTurn(turn, usage))
        h.apply(result)
        return c.should_auto(h)

    assert not call(0, 4 * 29_000)  # ~49k: under the bar
    assert c.micro.banked == 0 and not c.planner.cold()
    assert not call(1, 4 * 2_000)  # past it: one call of rent does not pay yet
    assert c.should_auto(h) is False  # asked twice for one call: counted once
    # the loss: a ~5k fresh context at 1.25x, 0.1x the 20k prefix, the 1.5k request,
    # ~9.9k; the rent: 0.1x the ~26k above the ~25k a compaction leaves, per call
    due = next(i for i in range(2, 12) if call(i, 4 * 100))
    assert due == 4  # the fourth call past the bar: 4 x 2.6k of rent
    h2 = History([Message.user("start")])
    c2, _ = compactor(tmp_path, threshold=50_000, prefix_tokens=20_000, clock=lambda: 0.0)
    turn, result = tool_turn(0, 4 * 45_000)  # a quarter of the threshold past the bar
    usage = Usage(input_tokens=c2.estimate(h2))
    c2.observe(ModelRequest(system="", messages=list(h2.messages)), usage)
    h2.apply(AssistantTurn(turn, usage))
    h2.apply(result)
    assert c2.should_auto(h2)
