import copy

from helpers import conversation, tool_round

from team.compaction.micro import CallCost, MicroCompactor
from team.core.conversation import Message, ToolResultBlock, ToolUseBlock, validate
from team.workspace.config import CompactionConfig


def results(view):
    return [b for m in view for b in m.content if isinstance(b, ToolResultBlock)]


def micro(**kw):
    """The reference (eager) policy unless told otherwise: these tests pin its rules."""
    return MicroCompactor(CompactionConfig(**{"micro_policy": "eager", **kw}))


def test_old_results_become_the_exact_placeholder_and_three_newest_stay():
    msgs = conversation(6)
    out = micro().view(msgs)
    contents = [r.content for r in results(out.view)]
    assert contents[:3] == ["[Previous: used bash]"] * 3
    assert all(c.startswith("output of call") for c in contents[3:])
    assert out.newly_cleared == 3
    validate(out.view)


def test_stored_history_is_unchanged():
    msgs = conversation(6)
    before = copy.deepcopy([m.to_dict() for m in msgs])
    micro().view(msgs)
    assert [m.to_dict() for m in msgs] == before


def test_all_results_of_a_five_call_batch_the_model_has_not_seen_are_kept():
    msgs = conversation(4)
    uses = tuple(ToolUseBlock(f"b{i}", "bash", {}) for i in range(5))
    msgs.append(Message("assistant", uses))
    msgs.append(
        Message("user", tuple(ToolResultBlock(f"b{i}", "y" * 500, "bash") for i in range(5)))
    )
    view = micro().view(msgs).view
    batch = results(view)[-5:]
    assert all(r.content == "y" * 500 for r in batch)
    # every older result is beyond the 3 newest and has been seen: all replaced
    assert all(r.content == "[Previous: used bash]" for r in results(view)[:-5])


def test_read_file_results_are_never_replaced():
    msgs = conversation(2)
    for i in range(10, 16):
        msgs += tool_round(i, "read_file", "file text " * 50)
    view = micro().view(msgs).view
    assert all(r.content == "file text " * 50 for r in results(view) if r.name == "read_file")
    assert [r.content for r in results(view) if r.name == "bash"] == ["[Previous: used bash]"] * 2


def test_results_of_100_chars_or_fewer_are_kept():
    msgs = [Message.user("go")]
    for i in range(8):
        msgs += tool_round(i, "bash", "z" * 100 if i % 2 else "z" * 101)
    view = micro().view(msgs).view
    for i, r in enumerate(results(view)[:-3]):
        assert r.content == ("z" * 100 if i % 2 else "[Previous: used bash]")


def test_placeholders_are_stable_and_only_new_ones_are_reported():
    mc = micro()
    msgs = conversation(6)
    assert mc.view(msgs).newly_cleared == 3
    assert mc.view(msgs).newly_cleared == 0
    msgs += tool_round(99)
    again = mc.view(msgs)
    assert again.newly_cleared == 1
    assert sum(r.content.startswith("[Previous") for r in results(again.view)) == 4


def test_clear_at_least_advances_only_in_big_steps():
    # each result is ~80 tokens; with clear_at_least=300 the first clear waits for 4 of them
    mc = micro(clear_at_least=300)
    msgs = conversation(4, size=300)  # 1 candidate (~80 tokens) beyond the 3 newest
    assert mc.view(msgs).newly_cleared == 0
    cleared_steps = []
    for i in range(4, 16):
        msgs += tool_round(i)
        out = mc.view(msgs)
        if out.newly_cleared:
            cleared_steps.append((out.newly_cleared, out.tokens_cleared))
            assert out.tokens_cleared >= 300
    assert cleared_steps and all(n >= 4 for n, _ in cleared_steps)
    # between clears the view keeps its prefix byte-identical (so a provider cache survives)
    before = mc.view(msgs).view
    msgs += tool_round(100)  # one more result: not enough to clear anything new
    after = mc.view(msgs)
    assert after.newly_cleared == 0
    assert after.view[: len(before)] == before


def test_micro_off_sends_everything():
    msgs = conversation(6)
    assert micro(micro=False).view(msgs).view == msgs


# -- the cost policy (the default) --------------------------------------------------------


def cost_call(msgs, *, sent=None, calls=10, growth=200.0, auto_at=50_000, cold=False, ctx=None):
    sent = len(msgs) - 2 if sent is None else sent
    context = ctx if ctx is not None else sum(m.chars() for m in msgs) // 4
    return CallCost(context, sent, calls, growth, auto_at, cold)


def test_cost_policy_is_the_default_and_waits_while_a_clear_would_not_pay():
    mc = MicroCompactor(CompactionConfig())
    msgs = conversation(5)  # 2 results (~80 tokens each) are clearable
    out = mc.view(msgs, cost_call(msgs))
    # rewriting ~3 rounds after them costs more than the reads it has wasted so far
    assert out.newly_cleared == 0
    assert out.view == msgs


def test_cost_policy_never_buys_a_warm_clear_with_savings_it_has_not_made():
    # Every batch here would pay over the calls left, but the session may end on the
    # next call: with nothing saved yet a rewrite could only make the run dearer.
    mc = MicroCompactor(CompactionConfig())
    msgs = conversation(4)
    for i in range(4, 40):
        msgs += tool_round(i)
        assert mc.view(msgs, cost_call(msgs)).newly_cleared == 0
    assert mc.banked == 0


def test_cost_policy_clears_in_batches_paid_for_by_what_earlier_clears_saved():
    mc = MicroCompactor(CompactionConfig())
    msgs = conversation(5)
    assert mc.view(msgs, cost_call(msgs, cold=True)).newly_cleared == 2  # free: cold cache
    clears = []
    for i in range(5, 60):
        msgs += tool_round(i)
        banked = mc.banked
        out = mc.view(msgs, cost_call(msgs))
        if out.newly_cleared:
            clears.append(out)
            extra = (1.25 - 0.1) * out.rewrite_tokens
            assert 0 < extra <= banked  # bought with savings already made
            assert 0.1 * out.tokens_cleared * 10 >= extra * 0.5  # and it pays again
        assert mc.banked >= 0
    assert clears, "never cleared"
    assert all(c.newly_cleared >= 3 for c in clears)  # batches, not one result a call
    assert len(clears) < 55 // 3


def test_cost_policy_clears_everything_for_free_when_the_cache_is_cold():
    mc = MicroCompactor(CompactionConfig())
    msgs = conversation(5)
    out = mc.view(msgs, cost_call(msgs, cold=True))
    assert out.newly_cleared == 2 and out.rewrite_tokens == 0


def test_cost_policy_clears_before_the_context_crosses_the_auto_threshold_if_it_can_pay():
    msgs = conversation(5)
    mc = MicroCompactor(CompactionConfig())
    mc.banked = 1_000.0  # what earlier clears saved
    assert mc.view(msgs, cost_call(msgs, ctx=45_000, auto_at=50_000)).newly_cleared == 0
    assert mc.view(msgs, cost_call(msgs, ctx=49_900, auto_at=50_000)).newly_cleared == 2
    # with nothing saved, the summary (which reads the cached prefix) is left to run
    poor = MicroCompactor(CompactionConfig())
    assert poor.view(msgs, cost_call(msgs, ctx=49_900, auto_at=50_000)).newly_cleared == 0


def test_cost_policy_does_not_clear_when_the_segment_is_about_to_end():
    mc = MicroCompactor(CompactionConfig())
    mc.banked = 1e9  # it could pay: the calls left are what decide
    msgs = conversation(4)
    for i in range(4, 20):
        msgs += tool_round(i)
        # context growth says the auto threshold is a call away (but not the next one)
        out = mc.view(msgs, cost_call(msgs, ctx=46_000, growth=3_500.0, auto_at=50_000))
        assert out.newly_cleared == 0


def test_next_clear_is_the_oldest_clearable_result_not_yet_cleared():
    mc = micro()
    msgs = conversation(6)
    assert mc.next_clear(msgs) == (2, 0)  # the first result
    mc.view(msgs)  # clears the three oldest
    assert mc.next_clear(msgs) == (8, 0)  # the fourth result, still kept
