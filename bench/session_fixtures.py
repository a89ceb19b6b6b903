"""Claude Code session logs of one-tool-per-reply work, for `team experiment --replay`.

Real agents make about one tool call per reply, and real Claude Code sessions run to
hundreds of replies and ~200k characters of tool output. These are made-up sessions in
that shape, written in Claude Code's own JSONL (one line per content block, linked by
`parentUuid`, a `toolUseResult` on each result line, usage on each reply), so the
importer reads them as it reads a real log and the replay calibrates on their usage:

- a fixed prefix of ~21k tokens (Claude Code's system prompt and tools) and 2.6
  characters per token, as real logs show; `cc-prefix-60k` carries 60k tokens of it
  (many MCP tool schemas, a long role file), above the 50k threshold by itself;
- Read, Bash, Grep, Edit, Write calls with heavy-tailed output sizes scaled to the
  session's total; now and then a message from the person; a few pauses longer than
  the 5-minute cache lifetime;
- usage as the API would bill it: the previous call's prefix read, the rest written,
  everything written again after a pause.

Seeded, so a file is a pure function of its parameters. The small ones are committed
(`bench/fixtures/`, used by the tests); the 300-reply ones are written on demand:

    .venv/bin/python bench/session_fixtures.py            # every fixture, into bench/fixtures/
    .venv/bin/python bench/session_fixtures.py --out DIR  # elsewhere
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PREFIX_TOKENS = 21_000
CHARS_PER_TOKEN = 2.6
T0 = 1_764_590_400.0  # 2025-12-01T12:00:00Z
MODEL = "claude-sonnet-4-5-20250929"
HERE = Path(__file__).resolve().parent / "fixtures"

# tool -> (share of the calls, relative mean output size)
TOOLS = {
    "Read": (0.34, 2.2),
    "Bash": (0.30, 1.0),
    "Grep": (0.14, 0.6),
    "Edit": (0.16, 0.35),
    "Write": (0.06, 0.05),
}
WORDS = tuple(
    [
        "def",
        "return",
        "self",
        "value",
        "import",
        "test",
        "error",
        "path",
        "line",
        "config",
        "items",
        "total",
        "result",
        "assert",
        "raise",
        "except",
        "yield",
        "async",
        "await",
        "class",
        "None",
        "True",
        "False",
        "len",
        "range",
        "dict",
        "list",
    ]
)


@dataclass(frozen=True)
class Shape:
    """One fixture: its file name and the session's size."""

    name: str
    replies: int
    tool_chars: int
    seed: int
    committed: bool = False
    prefix_tokens: int = PREFIX_TOKENS


SHAPES = (
    Shape("cc-one-tool-300", 300, 200_000, 11),
    Shape("cc-one-tool-300b", 300, 210_000, 12),
    Shape("cc-one-tool-71", 71, 60_000, 13, committed=True),
    # 40 replies of large outputs: the policy before the bank billed 1.03x manual-only here
    Shape("cc-one-tool-40", 40, 100_000, 23, committed=True),
    # a fixed prefix above the threshold: the compaction storm of issue 25 (every reply
    # compacted, 1.5x the bill of never compacting) unless the bar counts the prefix
    Shape("cc-prefix-60k", 120, 240_000, 31, committed=True, prefix_tokens=60_000),
)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _code(rng: random.Random, chars: int) -> str:
    lines, n = [], 0
    while n < chars:
        indent = "    " * rng.randint(0, 3)
        line = indent + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
        lines.append(line)
        n += len(line) + 1
    return "\n".join(lines)[:chars]


def _call(rng: random.Random, tool: str, i: int, chars: int) -> tuple[dict[str, Any], str]:
    """A tool call's input and its output of about `chars` characters."""
    path = f"src/pkg/mod_{rng.randint(1, 40)}.py"
    if tool == "Read":
        body = _code(rng, chars)
        numbered = "\n".join(f"{k + 1:>6}\t{line}" for k, line in enumerate(body.split("\n")))
        return {"file_path": f"/home/me/proj/{path}"}, numbered
    if tool == "Bash":
        cmd = rng.choice(["pytest -q", "ruff check .", "git diff", "ls -la src/pkg", "make"])
        return {"command": cmd, "description": f"step {i}"}, _code(rng, chars)
    if tool == "Grep":
        hits = []
        while sum(len(h) + 1 for h in hits) < chars:
            hits.append(f"{path}:{rng.randint(1, 400)}:{_code(rng, rng.randint(20, 70))}")
        return {"pattern": rng.choice(WORDS), "output_mode": "content"}, "\n".join(hits)[:chars]
    if tool == "Edit":
        old, new = rng.choice(WORDS), rng.choice(WORDS)
        head = f"The file /home/me/proj/{path} has been updated. Here's the result of running "
        head += "`cat -n` on a snippet of the edited file:\n"
        return {"file_path": f"/home/me/proj/{path}", "old_string": old, "new_string": new}, (
            head + _code(rng, max(0, chars - len(head)))
        )
    return {"file_path": f"/home/me/proj/{path}", "content": _code(rng, 300)}, (
        f"File created successfully at: /home/me/proj/{path}"
    )


class _Log:
    """Claude Code lines, with the usage the API would have reported for each reply."""

    def __init__(self, session: str, prefix_tokens: int = PREFIX_TOKENS) -> None:
        self.session = session
        self.prefix_tokens = prefix_tokens
        self.lines: list[dict[str, Any]] = []
        self.n = 0
        self.t = T0
        self.context = 0  # characters of conversation the next call reads
        self.cached = 0  # tokens the previous call left in the cache
        self.last_call = -1e9
        self.parent: str | None = None

    def line(self, kind: str, **fields: Any) -> str:
        self.n += 1
        uid = f"{self.session[:8]}-{self.n:06d}"
        self.lines.append(
            {
                "parentUuid": self.parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/me/proj",
                "sessionId": self.session,
                "version": "2.0.30",
                "gitBranch": "main",
                "type": kind,
                "uuid": uid,
                "timestamp": _iso(self.t),
                **fields,
            }
        )
        self.parent = uid
        return uid

    def user(self, content: Any, **extra: Any) -> None:
        self.t += 1
        self.context += len(json.dumps(content))
        self.line("user", message={"role": "user", "content": content}, **extra)

    def reply(self, n: int, blocks: list[dict[str, Any]], output_tokens: int) -> None:
        seen = int(self.prefix_tokens + self.context / CHARS_PER_TOKEN)
        cold = self.t - self.last_call > 300
        read = 0 if cold else min(self.cached, seen)
        self.last_call = self.t
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": seen - 3 - read,
            "cache_read_input_tokens": read,
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }
        mid = f"msg_{self.session[:8]}_{n:04d}"
        for b in blocks:
            msg = {
                "model": MODEL,
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [b],
                "stop_reason": None,
                "usage": usage,
            }
            self.line("assistant", message=msg, requestId=f"req_{mid}")
        self.context += sum(len(json.dumps(b)) for b in blocks)
        self.cached = seen
        self.t += 3 + output_tokens / 60  # the reply streams


def session(shape: Shape) -> list[dict[str, Any]]:
    """The lines of one fixture."""
    rng = random.Random(shape.seed)
    log = _Log(f"f1x7{shape.seed:04d}-{shape.replies:04d}-4a1e-9c3b-5e55", shape.prefix_tokens)
    names = list(TOOLS)
    tools = rng.choices(names, weights=[TOOLS[t][0] for t in names], k=shape.replies - 1)
    raw = [rng.paretovariate(1.6) * TOOLS[t][1] for t in tools]
    scale = shape.tool_chars / sum(raw)
    log.user("The tests in tests/test_pkg.py fail since the refactor; find out why and fix it.")
    for i, (tool, size) in enumerate(zip(tools, raw, strict=True)):
        text = rng.choice(["Let me look at that.", "Next, checking this.", "Running it.", ""])
        use = {"type": "tool_use", "id": f"toolu_{shape.seed:02d}{i:04d}", "name": tool}
        tool_input, output = _call(rng, tool, i, max(40, int(size * scale)))
        use["input"] = tool_input
        blocks = ([{"type": "text", "text": text}] if text else []) + [use]
        log.reply(i, blocks, rng.randint(40, 400))
        log.t += rng.uniform(1, 25)  # the tool runs
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": output}
        log.user([result], toolUseResult={"stdout": output[:200], "stderr": ""})
        if rng.random() < 0.03:  # the person steps in, perhaps after a pause
            log.t += rng.choice([20, 60, 900])
            log.user(rng.choice(["keep going", "also check the docs", "why is that failing?"]))
    log.reply(shape.replies, [{"type": "text", "text": "The tests pass now."}], 80)
    return log.lines


def write(shape: Shape, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{shape.name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in session(shape)))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into")
    parser.add_argument("--committed", action="store_true", help="only the committed ones")
    args = parser.parse_args()
    for shape in SHAPES:
        if shape.committed or not args.committed:
            path = write(shape, args.out)
            print(f"{path}: {shape.replies} replies, {shape.tool_chars:,} chars of tool output")


if __name__ == "__main__":
    main()
