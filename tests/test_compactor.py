import json
import threading

import pytest
from helpers import conversation, tool_round

from team.compaction.compactor import MAX_FAILURES, Compactor, SummaryLimits
from team.compaction.history import History
from team.compaction.transcripts import TranscriptStore, read_transcript
from team.core.conversation import Message, ToolResultBlock, validate
from team.core.events import AgentEvent, CompactionEvent, MemorySink
from team.llm.base import AgentFacts, ModelError, Usage
from team.llm.scripted import ScriptedModel, reply
from team.workspace.config import CompactionConfig

IDENTITY = (
    "<identity>You are 'alice', role: coder, team: demo. Teammates: bob (tester). "
    "Open tasks: #1 fix</identity>"
)


def summary_of(request):
    """A summariser stand-in that proves what it was given: it echoes the task ids seen."""
    text = request.messages[0].text()
    return reply(f"## Request and intent\nsaw {text.count('output of call')} results; task #1")


def make(tmp_path, agent="alice", model=None, budget=120_000, **cfg):
    sink = MemorySink()
    model = model or ScriptedModel(summary=summary_of)
    c = Compactor(
        CompactionConfig(**cfg),
        model,
        TranscriptStore(tmp_path / ".transcripts" / agent, tmp_path),
        sink,
        facts=AgentFacts(agent, "coder", "demo", (("bob", "tester"),)),
        summary=SummaryLimits(input_budget_tokens=budget),
    )
    return c, sink, model


def compact(c: Compactor, h: History, **kw) -> History | None:
    """Compact as the agent does: the record the compactor returns, folded."""
    rec = c.compact(h, identity=IDENTITY.replace("alice", c.agent), **kw)
    if rec is None:
        return None
    new = History(segment=h.segment)
    new.apply(rec)
    return new


def test_auto_triggers_above_the_threshold_and_not_below(tmp_path):
    c, _, _ = make(tmp_path, threshold=5000)
    h = History(conversation(10))  # ~10 * 80 tokens: below
    assert not c.should_auto(h)
    h = History(conversation(80))  # ~80 * 80 tokens: above
    assert c.should_auto(h)


def test_estimate_anchors_on_the_last_real_usage(tmp_path):
    c, _, _ = make(tmp_path)
    h = History([Message.user("hi")])
    h.append_response(Message.assistant("x" * 40), Usage(1000, 10, 500, 200))
    assert c.estimate(h) == 1710
    h.append_user(ToolResultBlock("a", "y" * 400, "bash"))
    assert c.estimate(h) == 1710 + 100


def test_transcript_holds_full_text_of_results_that_were_placeholders(tmp_path):
    c, sink, _ = make(tmp_path)
    h = History(conversation(8))
    view = c.view(h)
    hidden = [
        b.tool_use_id
        for m in view
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.content.startswith("[Previous")
    ]
    assert hidden
    new = compact(c, h, layer="auto", trigger="threshold")
    ev = sink.of(CompactionEvent)[-1]
    archived = read_transcript(tmp_path / ev.transcript)
    assert archived == h.messages  # full text, not the view
    full = {
        b.tool_use_id: b.content
        for m in archived
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }
    assert all(full[i].startswith("output of call") for i in hidden)
    assert new.messages[0].text().startswith(IDENTITY)
    assert ev.transcript in new.messages[0].text()


def test_summariser_sees_the_full_segment_not_the_view(tmp_path):
    c, _, model = make(tmp_path)
    h = History(conversation(8))
    c.view(h)
    compact(c, h, layer="auto", trigger="threshold")
    req = next(r for r in model.requests if r.purpose == "summary")
    assert req.messages[0].text().count("output of call") == 8
    assert "[Previous: used" not in req.messages[0].text()
    assert req.tool_choice == "none" and req.tools == []
    assert IDENTITY in req.system


def test_large_segments_are_summarised_in_chunks_that_cover_everything(tmp_path):
    model = ScriptedModel(
        summary=lambda r: reply(f"part with {r.messages[0].text().count('output of call')}")
    )
    c, _, _ = make(tmp_path, model=model, budget=750)  # ~3,000 chars: several chunks
    h = History(conversation(30))
    compact(c, h, layer="auto", trigger="threshold")
    parts = [
        r
        for r in model.requests
        if "part" in r.messages[0].text()[:60] and "Merge" not in r.messages[0].text()
    ]
    firsts = [r.messages[0].text() for r in model.requests if "Merge" not in r.messages[0].text()]
    assert sum(t.count("output of call") for t in firsts) == 30  # every result, once
    assert any("Merge" in r.messages[0].text() for r in model.requests)
    assert parts


def test_two_compactions_in_the_same_second_never_share_a_file(tmp_path):
    store = TranscriptStore(tmp_path / "t")
    paths = [store.write(conversation(1), "auto") for _ in range(20)]
    assert len(set(paths)) == 20
    names = sorted(p.name for p in paths)
    assert [int(n.split("-")[0]) for n in names] == list(range(1, 21))


def test_two_agents_compacting_at_once_never_share_a_file(tmp_path):
    results = {}

    def work(agent):
        c, sink, _ = make(tmp_path, agent=agent)
        for _ in range(5):
            compact(c, History(conversation(4)), layer="auto", trigger="threshold")
        results[agent] = [e.transcript for e in sink.of(CompactionEvent)]

    threads = [threading.Thread(target=work, args=(a,)) for a in ("alice", "bob", "carol")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [p for ps in results.values() for p in ps]
    assert len(every) == 15 and len(set(every)) == 15
    for agent, ps in results.items():
        assert all(p.startswith(f".transcripts/{agent}/") for p in ps)


def test_manual_compaction_passes_focus_to_the_summariser(tmp_path):
    c, sink, model = make(tmp_path)
    compact(c, History(conversation(3)), layer="manual", trigger="tool", focus="the parser bug")
    req = next(r for r in model.requests if r.purpose == "summary")
    assert "the parser bug" in req.system
    assert sink.of(CompactionEvent)[-1].layer == "manual"


def test_identity_is_first_after_the_first_second_and_third_compaction(tmp_path):
    c, _, _ = make(tmp_path)
    h = History(conversation(5))
    for n in range(3):
        h = compact(c, h, layer="auto", trigger="threshold")
        assert h.segment == n + 1
        assert h.messages[0].text().startswith("<identity>You are 'alice', role: coder")
        validate(h.messages)
        h.messages += tool_round(100 + n)[0:2]  # keep working in the new segment


def test_unseen_content_is_carried_into_the_new_context(tmp_path):
    c, _, _ = make(tmp_path)
    msgs = conversation(3)
    msgs[-1] = Message(
        "user", msgs[-1].content + (Message.user('<message from="bob">ping</message>').content)
    )
    new = compact(c, History(msgs), layer="auto", trigger="threshold")
    assert "ping" in new.messages[0].text()


def test_a_failed_summary_leaves_the_history_byte_identical(tmp_path):
    model = ScriptedModel(summary=ModelError("529 overloaded"))
    c, sink, _ = make(tmp_path, model=model)
    h = History(conversation(6))
    before = json.dumps([m.to_dict() for m in h.messages])
    assert compact(c, h, layer="auto", trigger="threshold") is None
    assert json.dumps([m.to_dict() for m in h.messages]) == before
    ev = sink.of(CompactionEvent)[-1]
    assert not ev.success and "529" in ev.error
    assert not (tmp_path / ".transcripts" / "alice").exists() or not list(
        (tmp_path / ".transcripts" / "alice").glob("*.jsonl")
    )


def test_auto_pauses_after_three_failures_until_a_manual_compact(tmp_path):
    model = ScriptedModel(summary=ModelError("boom"))
    c, sink, _ = make(tmp_path, model=model, threshold=100)
    h = History(conversation(10))
    for _ in range(MAX_FAILURES):
        assert c.should_auto(h)
        assert compact(c, h, layer="auto", trigger="threshold") is None
    assert c.paused and not c.should_auto(h)
    assert [e.kind for e in sink.of(AgentEvent)] == ["auto_paused"]
    model.summary = reply("## Request and intent\nrecovered")
    new = compact(c, h, layer="manual", trigger="tool")
    assert new is not None and not c.paused
    assert c.should_auto(History(conversation(10)))


def test_an_empty_summary_is_a_failure(tmp_path):
    c, _, _ = make(tmp_path, model=ScriptedModel(summary=reply(" ")))
    assert compact(c, History(conversation(3)), layer="auto", trigger="threshold") is None


@pytest.mark.parametrize("layer", ["auto", "manual"])
def test_compaction_event_has_the_fields_people_study(tmp_path, layer):
    c, sink, _ = make(tmp_path)
    compact(c, History(conversation(6)), layer=layer, trigger="x")
    ev = sink.of(CompactionEvent)[-1]
    assert ev.agent == "alice" and ev.layer == layer and ev.success
    assert ev.tokens_before > ev.tokens_after > 0
    assert ev.messages_before == 13 and ev.messages_after == 1
    assert ev.summary_chars > 0 and ev.duration_s >= 0 and ev.retention is not None


def test_a_transcript_that_cannot_be_written_is_a_failed_compaction(tmp_path):
    c, sink, _ = make(tmp_path)
    (tmp_path / ".transcripts").write_text("not a folder")  # the archive cannot be created
    h = History(conversation(6))
    before = json.dumps([m.to_dict() for m in h.messages])
    assert compact(c, h, layer="auto", trigger="threshold") is None
    assert json.dumps([m.to_dict() for m in h.messages]) == before
    ev = sink.of(CompactionEvent)[-1]
    assert not ev.success and "transcript" in ev.error


def test_a_fresh_context_above_the_threshold_does_not_compact_on_every_call(tmp_path):
    c, _, _ = make(tmp_path, threshold=150)
    h = compact(c, History(conversation(6)), layer="auto", trigger="threshold")
    assert h.floor > 150  # identity + summary alone are above this tiny threshold
    h.messages += tool_round(50, output="x" * 120)
    assert not c.should_auto(h)  # must grow by half the threshold first
    for i in range(51, 60):
        h.messages += tool_round(i)
    assert c.should_auto(h)
