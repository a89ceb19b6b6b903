"""Prompt-cache benchmark: what the breakpoints achieve against an ideal cache, and what
one agent's default compaction bills against the reference design with no caching.

Workloads, one agent each, one tool call per reply (as real agents make them), driven
through the real `Compactor` (prepare before each call, observe after, auto-compaction
folded in as the agent loop does) on the simulated cache (`SimModel`, block granularity,
the API's 20-block lookback and 1,024-token minimum):

- single: 40 read_file calls (1-6k chars), 30 bash calls (0.5-4k), one reply with 4
  parallel bash calls, auto threshold 50k;
- long: a recorded-like session of 300 replies and ~200k characters of tool output;
- the Claude Code fixtures of `bench/session_fixtures.py`, replayed as
  `team experiment --replay` does.

Printed per workload and strategy:
- achieved / ideal: billed input with our breakpoints over an ideal cache on the very
  same requests (any number of breakpoints: every request reads the longest prefix it
  shares with any earlier one and writes the rest). Target <= 1.1.
- default / uncached reference: billed input of the default strategy over the reference
  strategy (eager micro) billed with no prompt caching at all. Target <= 0.3.
- x manual-only: over micro and auto off, at the end and at the worst of every shorter
  ending of the same session. Target <= 1: the default never costs more.

    .venv/bin/python bench/bench_cache.py
"""

from __future__ import annotations

import hashlib
import random
import tempfile
from itertools import accumulate
from pathlib import Path

from team.compaction.compactor import Compactor
from team.compaction.history import History
from team.compaction.records import UserTurn
from team.compaction.transcripts import TranscriptStore
from team.core.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock
from team.core.events import MemorySink
from team.llm.base import AgentFacts, ModelRequest, Prefix, ToolSpec
from team.llm.prices import READ, WRITE_5M, billed_input
from team.llm.sim import SimModel, cache_pieces
from team.workspace.config import CompactionConfig

SYSTEM = "You are 'alice', a coder on team bench. " + "Follow the house rules. " * 200
TOOLS = [
    ToolSpec(n, f"The {n} tool.", {"type": "object", "properties": {}})
    for n in ("bash", "read_file", "write_file", "send_message", "complete_task", "compact")
]
Round = tuple[Message, Message]


def _text(rng: random.Random, chars: int) -> str:
    words = ["def", "return", "self", "value", "import", "test", "error", "path", "line"]
    out, n = [], 0
    while n < chars:
        w = rng.choice(words) + ("\n" if rng.random() < 0.1 else " ")
        out.append(w)
        n += len(w)
    return "".join(out)[:chars]


def _round(i: int, calls: list[tuple[str, int]], rng: random.Random) -> Round:
    uses = tuple(ToolUseBlock(f"t{i}_{k}", name, {"n": i}) for k, (name, _) in enumerate(calls))
    call = Message("assistant", (TextBlock(f"Step {i}: next."), *uses))
    results = tuple(
        ToolResultBlock(u.id, _text(rng, size), u.name)
        for u, (_, size) in zip(uses, calls, strict=True)
    )
    return call, Message("user", results)


def single(seed: int = 1) -> list[Round]:
    rng = random.Random(seed)
    kinds = [("read_file", rng.randint(1000, 6000)) for _ in range(40)]
    kinds += [("bash", rng.randint(500, 4000)) for _ in range(30)]
    rng.shuffle(kinds)
    rounds = [_round(i, [k], rng) for i, k in enumerate(kinds)]
    rounds.insert(35, _round(99, [("bash", rng.randint(500, 3000)) for _ in range(4)], rng))
    return rounds


def long(seed: int = 2, replies: int = 300, chars: int = 200_000) -> list[Round]:
    rng = random.Random(seed)
    sizes = [rng.expovariate(1.0) for _ in range(replies)]
    scale = chars / sum(sizes)
    tools = ["bash", "read_file", "bash", "write_file", "bash"]
    return [
        _round(i, [(rng.choice(tools), max(40, int(s * scale)))], rng) for i, s in enumerate(sizes)
    ]


def drive(
    rounds: list[Round],
    config: CompactionConfig,
    cached_summary: bool = True,
    system: str = SYSTEM,
    sink: MemorySink | None = None,
) -> list[tuple[ModelRequest, object]]:
    """The requests one agent sends over the rounds, and their usage (summaries included).

    `system`: the agent's system prompt (a long one is a large fixed prefix); `sink`
    collects the compactor's events."""
    model = SimModel()
    sent: list[tuple[ModelRequest, object]] = []
    summaries: list[object] = []

    class Recording:
        name = "sim"

        def complete(self, request: ModelRequest):
            response = model.complete(request)
            if request.purpose == "summary":
                summaries.append(response.usage)
            return response

    with tempfile.TemporaryDirectory() as tmp:
        compactor = Compactor(
            config,
            Recording(),
            TranscriptStore(Path(tmp)),
            sink if sink is not None else MemorySink(),
            facts=AgentFacts("alice", "coder", "bench"),
            # with the prefix the summary is asked on the agent's cached prefix
            prefix=Prefix(system, tuple(TOOLS)) if cached_summary else None,
        )
        history = History(messages=[Message.user("Please work on task #1.")])
        for call, result in rounds:
            if compactor.should_auto(history):
                rec = compactor.compact(
                    history,
                    identity="You are 'alice'.",
                    layer="auto",
                    trigger="threshold",
                )
                if rec is not None:
                    history.apply(rec)
            prepared = compactor.prepare(history)
            view, breakpoints = prepared.view, prepared.breakpoints
            request = ModelRequest(
                system=system,
                messages=view,
                tools=TOOLS,
                cache_breakpoints=breakpoints,
                agent="alice",
            )
            usage = model.complete(request).usage
            compactor.observe(request, usage)
            sent.append((request, usage))
            history.append_response(call, usage)
            history.apply(UserTurn(result.content, ()))
    return sent + [(None, u) for u in summaries]


def ideal(sent) -> float:
    """Billed input of the same requests on a cache with a breakpoint at every block."""
    seen: set[bytes] = set()
    total = 0.0
    for request, usage in sent:
        if request is None:  # a summary: billed as it was
            total += billed_input(usage)
            continue
        pieces, _ = cache_pieces(request)
        ends = list(accumulate(p.tokens for p in pieces))
        digests, h = [], b""
        for p in pieces:
            h = hashlib.blake2b(h + p.text.encode(), digest_size=16).digest()
            digests.append(h)
        read = 0
        for k in range(len(pieces) - 1, -1, -1):
            if digests[k] in seen and ends[k] >= 1024:
                read = ends[k]
                break
        seen.update(digests)
        total += WRITE_5M * (ends[-1] - read) + READ * read
    return total


def billed(sent) -> float:
    return sum(billed_input(u) for _, u in sent)


def uncached(sent) -> float:
    return sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for _, u in sent)


STRATEGIES = {
    "default": CompactionConfig(),
    "reference": CompactionConfig(micro_policy="eager"),
    "manual-only": CompactionConfig(micro=False, auto=False),
}


def worst_ending(rounds: list[Round], step: int) -> tuple[float, int]:
    """The highest default / manual-only over sessions cut after every `step` replies:
    a session may end anywhere, and the default must not cost more wherever it does."""
    worst = (0.0, 0)
    for k in range(step, len(rounds) + 1, step):
        ratio = billed(drive(rounds[:k], STRATEGIES["default"])) / billed(
            drive(rounds[:k], STRATEGIES["manual-only"])
        )
        worst = max(worst, (ratio, k))
    return worst


def fixtures() -> None:
    """The one-tool-per-reply Claude Code fixtures, replayed as `team experiment --replay`
    replays them (calibrated to their usage), the 300-reply ones written if missing."""
    import session_fixtures as sf

    from team.sessions.study import replay_log
    from team.study.experiment import STRATEGIES as ALL

    chosen = tuple(s for s in ALL if s.name in STRATEGIES)
    print(f"\nfixtures ({sf.HERE}), replayed: default x manual-only, x reference")
    for shape in sf.SHAPES:
        path = sf.HERE / f"{shape.name}.jsonl"
        if not path.exists():
            sf.write(shape, sf.HERE)
        exp = replay_log(path, threshold=50_000, strategies=chosen).experiment
        d, m = exp.get("default"), exp.get("manual-only")
        print(
            f"{shape.name:<18} {shape.replies:>3} replies {shape.tool_chars:>8,} chars  "
            f"x manual-only {d.billed_input / m.billed_input:.2f}  "
            f"x ref {exp.ratio('default'):.2f}  (micro {d.compactions.get('micro', 0)}, "
            f"auto {d.compactions.get('auto', 0)})"
        )


def main() -> None:
    for name, rounds, step in (("single", single(), 5), ("long", long(), 20)):
        out = sum(len(b.content) for _, r in rounds for b in r.content)
        print(f"\n{name}: {len(rounds)} replies, {out:,} chars of tool output")
        runs = {s: drive(rounds, cfg) for s, cfg in STRATEGIES.items()}
        ref_uncached = uncached(runs["reference"])
        manual = billed(runs["manual-only"])
        print(
            f"{'strategy':<12} {'billed':>10} {'ideal':>10} {'ach/ideal':>9} "
            f"{'x uncached ref':>15} {'x manual-only':>14}"
        )
        for s, sent in runs.items():
            b, i = billed(sent), ideal(sent)
            print(
                f"{s:<12} {b:>10,.0f} {i:>10,.0f} {b / i:>9.2f} {b / ref_uncached:>15.2f} "
                f"{b / manual:>14.2f}"
            )
        ratio, at = worst_ending(rounds, step)
        print(
            f"reference uncached: {ref_uncached:,.0f}; default x manual-only at its worst "
            f"session end (every {step} replies): {ratio:.3f} after {at}"
        )
        print("(targets: ach/ideal <= 1.1; default x uncached ref <= 0.3; x manual-only <= 1)")
    fixtures()


if __name__ == "__main__":
    main()
