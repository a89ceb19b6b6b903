"""Property: whatever the conversation, what we send is valid and identity comes first."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from team.compaction.compactor import Compactor
from team.compaction.history import History
from team.compaction.micro import MicroCompactor
from team.compaction.transcripts import TranscriptStore
from team.core.conversation import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_user,
    validate,
)
from team.core.events import MemorySink
from team.llm.base import AgentFacts
from team.llm.scripted import ScriptedModel, reply
from team.workspace.config import CompactionConfig

TOOLS = ["bash", "read_file", "write_file", "send_message", "compact"]

turn = st.tuples(
    st.lists(st.tuples(st.sampled_from(TOOLS), st.integers(0, 600)), max_size=5),  # calls
    st.booleans(),  # assistant also says something
    st.lists(st.text(min_size=1, max_size=40).filter(str.strip), max_size=2),  # inbox between
)


@st.composite
def conversations(draw):
    msgs = [Message.user(draw(st.text(min_size=1, max_size=50).filter(str.strip)))]
    n = 0
    for calls, says, inbox in draw(st.lists(turn, max_size=25)):
        blocks = [TextBlock("thinking")] if says or not calls else []
        uses = []
        for name, _ in calls:
            n += 1
            uses.append(ToolUseBlock(f"toolu_{n}", name, {"i": n}))
        msgs.append(Message("assistant", tuple(blocks + uses)))
        results = [
            ToolResultBlock(u.id, "r" * size or "(empty)", u.name)
            for u, (_, size) in zip(uses, calls, strict=True)
        ]
        texts = [
            TextBlock(f'<message from="bob" type="message" id="m{i}">{t}</message>')
            for i, t in enumerate(inbox)
        ]
        if not results and not texts:
            texts = [TextBlock("continue")]
        append_user(msgs, *results)
        append_user(msgs, *texts)
    return msgs


configs = st.builds(
    CompactionConfig,
    keep_recent=st.integers(0, 6),
    min_chars=st.integers(0, 200),
    clear_at_least=st.sampled_from([0, 0, 50, 400]),
    preserve_tools=st.sampled_from([["read_file"], [], ["bash", "read_file"]]),
)


@settings(max_examples=200, deadline=None)
@given(conversations(), configs)
def test_the_micro_view_is_always_valid(msgs, cfg):
    validate(msgs)
    mc = MicroCompactor(cfg)
    for cut in range(1, len(msgs) + 1, 2):  # grow the conversation turn by turn
        validate(mc.view(msgs[:cut]).view)


IDENTITY = "<identity>You are 'alice', role: coder, team: demo. Open tasks: none</identity>"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(conversations(), configs)
def test_every_post_compaction_context_is_valid_and_starts_with_identity(tmp_path, msgs, cfg):
    compactor = Compactor(
        cfg,
        ScriptedModel(summary=reply("## Current work\nthe parser")),
        TranscriptStore(tmp_path / "t"),
        MemorySink(),
        facts=AgentFacts("alice", "coder", "demo"),
    )
    h = History(list(msgs))
    for layer in ("auto", "manual", "auto"):
        rec = compactor.compact(h, identity=IDENTITY, layer=layer, trigger="test")
        assert rec is not None
        h.apply(rec)
        validate(h.messages)
        validate(compactor.view(h))
        first = h.messages[0].text()
        assert first.startswith("<identity>You are 'alice', role: coder")
        h.messages += msgs[1:5] if len(msgs) > 4 and msgs[4].role == "user" else []
        validate(h.messages)
