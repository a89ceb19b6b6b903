"""Per-call cost of the compaction pipeline (micro view + estimate + validate).

Run: .venv/bin/python bench/bench_compaction.py

For histories of 100, 1,000 and 10,000 messages (~50k tokens at 1,000), prints ms per
call, the growth factor per 10x messages, and the ratio against a baseline measured in
the same run: turning the same history into API JSON (`to_api`), which every call has to
do anyway. Target: linear or better, under 5 ms per call at 1,000 messages.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from team.compaction.compactor import Compactor
from team.compaction.history import History
from team.compaction.transcripts import TranscriptStore
from team.core.conversation import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    to_api,
    validate,
)
from team.core.events import MemorySink
from team.llm.base import AgentFacts
from team.llm.scripted import ScriptedModel
from team.workspace.config import CompactionConfig


def history(n_messages: int) -> History:
    """Tool loops of ~200 tokens per message pair: ~50k tokens at 1,000 messages."""
    msgs = [Message.user("Work on task #1.")]
    i = 0
    while len(msgs) < n_messages - 1:
        name = "read_file" if i % 5 == 0 else "bash"
        msgs.append(
            Message(
                "assistant",
                (TextBlock("Next step."), ToolUseBlock(f"t{i}", name, {"command": "ls -la"})),
            )
        )
        msgs.append(Message("user", (ToolResultBlock(f"t{i}", "line of output\n" * 25, name),)))
        i += 1
    h = History(msgs[:-1] if msgs[-1].role == "assistant" else msgs)
    h.usage_tokens, h.usage_index = 40_000, max(0, len(h.messages) - 4)
    return h


def per_call(fn, min_time: float = 0.5) -> float:
    fn()
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < min_time:
        fn()
        n += 1
    return elapsed / n * 1000


def main() -> None:
    print(
        f"{'messages':>9} {'tokens~':>8} {'pipeline ms':>12} {'to_api ms':>10} "
        f"{'ratio':>6} {'growth/10x':>11}"
    )
    prev = None
    for n in (100, 1_000, 10_000):
        h = history(n)
        compactor = Compactor(
            CompactionConfig(),
            ScriptedModel(),
            TranscriptStore(Path(tempfile.gettempdir()) / "bench-transcripts"),
            MemorySink(),
            facts=AgentFacts("bench", "bench", "bench"),
        )

        def pipeline(h=h, compactor=compactor):
            view = compactor.view(h)  # the micro view, as the agent loop asks for it
            compactor.should_auto(h)  # the estimate against the threshold
            validate(view)

        ms = per_call(pipeline)
        base = per_call(lambda h=h: to_api(h.messages))
        tokens = sum(m.chars() for m in h.messages) // 4
        growth = f"{ms / prev:.1f}x" if prev else "-"
        print(f"{n:>9,} {tokens:>8,} {ms:>12.3f} {base:>10.3f} {ms / base:>6.2f} {growth:>11}")
        prev = ms


if __name__ == "__main__":
    main()
