"""Small session logs in other agents' formats, written by hand for the import tests.

Each builder writes one file and returns it. The Claude Code log has what real ones have:
parallel tool calls whose lines branch, a thinking block, an image, a redo branch, a
resumed session (the conversation copied under a second root), a subagent sidechain and
a `compact_boundary`. `claude_code(..., replies=N)` grows it to any size for benchmarks.
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

T0 = 1_764_000_000.0  # 2025-11-24T16:00:00Z
PREFIX_TOKENS = 20_000  # the recorded agent's system prompt and tools
CHARS_PER_TOKEN = 3.3  # how the fake usage below counts the conversation


def png(width: int, height: int) -> str:
    """A PNG header with that pixel size (enough for a reader to size the image)."""
    head = (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height)
    )
    return base64.b64encode(head + b"\x08\x02\x00\x00\x00" + b"\x00" * 64).decode()


def _iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


class _Claude:
    """Writes Claude Code lines, and fakes the usage the API would have reported."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.lines: list[dict[str, Any]] = []
        self.n = 0
        self.t = T0
        self.context = 0  # chars of the conversation the next call sees
        self.last_call = -1e9

    def _uuid(self) -> str:
        self.n += 1
        return f"{self.session[:4]}-{self.n:06d}"

    def line(self, parent: str | None, kind: str, **fields: Any) -> str:
        uid = self._uuid()
        self.t += 7
        self.lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": "/home/me/proj",
                "sessionId": self.session,
                "version": "2.0.30",
                "type": kind,
                "uuid": uid,
                "timestamp": _iso(self.t),
                **fields,
            }
        )
        return uid

    def user(self, parent: str | None, content: Any, **extra: Any) -> str:
        self.context += len(json.dumps(content))
        return self.line(parent, "user", message={"role": "user", "content": content}, **extra)

    def reply(self, parent: str, msg_id: str, blocks: list[dict[str, Any]], **extra: Any) -> str:
        """One reply, one line per block, chained, all with the same usage."""
        seen = int(PREFIX_TOKENS + self.context / CHARS_PER_TOKEN)
        # after 5 minutes without a call the cache has expired: everything is written again
        cold = self.t - self.last_call > 300
        self.last_call = self.t
        write = seen - 4 if cold else min(300, seen - 4)
        usage = {
            "input_tokens": 4,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": seen - 4 - write,
            "output_tokens": 120,
        }
        for b in blocks:
            msg = {
                "model": "claude-sonnet-4-5-20250929",
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [b],
                "stop_reason": None,
                "usage": usage,
            }
            parent = self.line(parent, "assistant", message=msg, requestId=f"req_{msg_id}", **extra)
        self.context += sum(len(json.dumps(b)) for b in blocks)
        return parent


def claude_code(path: Path, *, replies: int = 0, result_chars: int = 600) -> Path:
    """The hand-written session (5 replies on the final path), plus `replies` more."""
    c = _Claude("5e55-0001")
    body = "def add(a, b):\n    return a - b\n" + "# padding line\n" * (result_chars // 15)
    # -- root 1: the first run of the session (a resume copies it below) ---------------
    u1 = c.user(None, "Fix the failing test in src/app.py")
    a = c.reply(u1, "msg_01", [{"type": "text", "text": "Looking."}])
    c.user(a, "never mind")  # the first run ends here; the resume starts over
    # -- root 2: the resumed session, the conversation copied under a new root ---------
    c.context = 0
    u1 = c.user(None, "Fix the failing test in src/app.py")
    a = c.reply(
        u1,
        "msg_02",
        [
            {
                "type": "thinking",
                "thinking": "Read the code and run the tests at once.",
                "signature": "sig",
            },
            {"type": "text", "text": "I'll read the file and run the tests."},
        ],
    )
    use1 = c.reply(
        a,
        "msg_02",
        [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Read",
                "input": {"file_path": "/home/me/proj/src/app.py"},
            }
        ],
    )
    use2 = c.reply(
        use1,
        "msg_02",
        [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "pytest -q"}}],
    )
    # parallel calls: each result hangs off its own call's line
    c.user(
        use1,
        [{"type": "tool_result", "tool_use_id": "toolu_1", "content": body}],
        toolUseResult={"type": "text"},
    )
    r2 = c.user(
        use2, [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "1 failed: test_add"}]
    )
    a = c.reply(
        r2,
        "msg_03",
        [
            {"type": "text", "text": "add subtracts; fixing it."},
            {
                "type": "tool_use",
                "id": "toolu_3",
                "name": "Edit",
                "input": {"file_path": "src/app.py", "old_string": "a - b", "new_string": "a + b"},
            },
        ],
    )
    r3 = c.user(
        a,
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_3",
                "content": "The file src/app.py has been updated.",
            }
        ],
    )
    fork = c.reply(r3, "msg_04", [{"type": "text", "text": "Fixed: add now adds."}])
    # a redo: the first follow-up was abandoned, the second one is the conversation
    x = c.user(fork, "add a docstring")
    c.reply(x, "msg_05x", [{"type": "text", "text": "(abandoned)"}])
    c.context -= len(json.dumps("add a docstring")) + len(
        json.dumps({"type": "text", "text": "(abandoned)"})
    )
    u2 = c.user(
        fork,
        [
            {"type": "text", "text": "Now add a test like in this screenshot."},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": png(800, 600)},
            },
        ],
    )
    a = c.reply(
        u2,
        "msg_05",
        [
            {
                "type": "tool_use",
                "id": "toolu_4",
                "name": "Task",
                "input": {"description": "find tests", "prompt": "find the tests of add"},
            }
        ],
    )
    # the subagent's sidechain, inline (older Claude Code)
    s1 = c.line(
        None,
        "user",
        isSidechain=True,
        agentId="ab12cd34",
        message={"role": "user", "content": "find the tests of add"},
    )
    s2 = c.line(
        s1,
        "assistant",
        isSidechain=True,
        agentId="ab12cd34",
        message={
            "id": "msg_s1",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_s1",
                    "name": "Grep",
                    "input": {"pattern": "def test_add"},
                }
            ],
            "usage": {"input_tokens": 900, "output_tokens": 20},
        },
    )
    s3 = c.line(
        s2,
        "user",
        isSidechain=True,
        agentId="ab12cd34",
        message={
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_s1",
                    "content": "tests/test_app.py:3:def test_add():",
                }
            ],
        },
    )
    c.line(
        s3,
        "assistant",
        isSidechain=True,
        agentId="ab12cd34",
        message={
            "id": "msg_s2",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "tests/test_app.py"}],
            "usage": {"input_tokens": 950, "output_tokens": 8},
        },
    )
    r4 = c.user(
        a,
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_4",
                "content": [{"type": "text", "text": "tests/test_app.py"}],
            }
        ],
    )
    last = c.reply(
        r4, "msg_06", [{"type": "text", "text": "The test is in tests/test_app.py; added a case."}]
    )
    parent = last
    for i in range(replies):  # more of the same, for benchmarks
        u = c.user(parent, [{"type": "text", "text": f"step {i}: run it again"}])
        use = c.reply(
            u,
            f"msg_b{i}",
            [
                {
                    "type": "tool_use",
                    "id": f"toolu_b{i}",
                    "name": "Bash",
                    "input": {"command": "pytest -q"},
                }
            ],
        )
        r = c.user(use, [{"type": "tool_result", "tool_use_id": f"toolu_b{i}", "content": body}])
        parent = c.reply(r, f"msg_c{i}", [{"type": "text", "text": f"step {i} passes."}])
    # Claude Code compacts: a new root pointing back at the last line, then the summary
    b = c.line(
        None,
        "system",
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid=parent,
        compactMetadata={"trigger": "manual", "preTokens": 31_000},
    )
    s = c.user(
        b,
        "This session is being continued from a previous conversation. Summary: fixed add.",
        isCompactSummary=True,
    )
    c.context = 200
    u3 = c.user(s, "thanks, commit it")
    c.reply(u3, "msg_07", [{"type": "text", "text": "Committed."}])
    path.write_text("".join(json.dumps(line) + "\n" for line in c.lines))
    return path


def claude_code_never_compacted(path: Path, *, replies: int = 40) -> Path:
    """One agent, one root, one tool call per reply, recorded usage consistent with its
    text: what a calibration must reproduce."""
    c = _Claude("ca11-0002")
    body = "x = 1\n" * 150
    parent = c.user(None, "Work through the steps.")
    for i in range(replies):
        use = c.reply(
            parent,
            f"msg_{i}",
            [
                {"type": "text", "text": f"Step {i}: reading."},
                {
                    "type": "tool_use",
                    "id": f"toolu_{i}",
                    "name": "Read",
                    "input": {"file_path": f"src/m{i}.py"},
                },
            ],
        )
        c.t += 60 if i % 10 else 3600  # an hour's pause now and then: the cache expires
        parent = c.user(
            use, [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": body}]
        )
    c.reply(parent, "msg_end", [{"type": "text", "text": "All steps read."}])
    path.write_text("".join(json.dumps(line) + "\n" for line in c.lines))
    return path


def break_line(path: Path, line: int) -> Path:
    """Cut one line of a JSONL log in half, as a bad copy would."""
    lines = path.read_text().split("\n")
    lines[line - 1] = lines[line - 1][: len(lines[line - 1]) // 2]
    path.write_text("\n".join(lines))
    return path


def codex(path: Path) -> Path:
    def ln(t: float, kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": _iso(T0 + t), "type": kind, "payload": payload})

    def usage(inp: int, cached: int) -> dict[str, Any]:
        last = {
            "input_tokens": inp,
            "cached_input_tokens": cached,
            "output_tokens": 50,
            "reasoning_output_tokens": 30,
            "total_tokens": inp + 80,
        }
        return {
            "type": "token_count",
            "info": {"last_token_usage": last, "total_token_usage": last},
        }

    rows = [
        ln(
            0,
            "session_meta",
            {"id": "c0dex", "cwd": "/p", "instructions": "Be brief.", "cli_version": "0.46.0"},
        ),
        ln(0, "turn_context", {"model": "gpt-5-codex", "cwd": "/p"}),
        ln(
            1,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "List the files and show setup.cfg"}],
            },
        ),
        ln(1, "event_msg", {"type": "user_message", "message": "List the files"}),
        ln(
            2,
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "**Listing**"}],
                "encrypted_content": "gAAA",
            },
        ),
        ln(
            2,
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["ls"]}),
                "call_id": "call_1",
            },
        ),
        ln(
            2,
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["cat", "setup.cfg"]}),
                "call_id": "call_2",
            },
        ),
        ln(3, "event_msg", usage(3000, 0)),
        ln(
            4,
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": json.dumps({"output": "setup.cfg\nsrc\n", "metadata": {"exit_code": 0}}),
            },
        ),
        ln(
            4,
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "call_2",
                "output": "[metadata]\nname = x\n",
            },
        ),
        ln(
            5,
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Two entries: setup.cfg and src."}],
            },
        ),
        ln(5, "event_msg", usage(3200, 2900)),
        ln(6, "compacted", {"message": "The user listed files."}),
        ln(
            7,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "thanks"}],
            },
        ),
        ln(
            8,
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "You're welcome."}],
            },
        ),
        ln(8, "event_msg", usage(900, 0)),
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


def gemini(path: Path) -> Path:
    doc = {
        "sessionId": "9e41",
        "projectHash": "ab" * 32,
        "startTime": _iso(T0),
        "lastUpdated": _iso(T0 + 60),
        "messages": [
            {"id": "1", "timestamp": _iso(T0), "type": "user", "content": "What is in README.md?"},
            {
                "id": "2",
                "timestamp": _iso(T0 + 5),
                "type": "gemini",
                "content": "",
                "thoughts": [
                    {
                        "subject": "Reading",
                        "description": "I should read the file.",
                        "timestamp": _iso(T0 + 4),
                    }
                ],
                "toolCalls": [
                    {
                        "id": "read_file-1",
                        "name": "read_file",
                        "args": {"absolute_path": "/p/README.md"},
                        "status": "success",
                        "result": [
                            {
                                "functionResponse": {
                                    "id": "read_file-1",
                                    "name": "read_file",
                                    "response": {"output": "# Demo\nHello"},
                                }
                            }
                        ],
                    },
                    {
                        "id": "shell-2",
                        "name": "run_shell_command",
                        "args": {"command": "wc -l README.md"},
                        "status": "success",
                        "result": [
                            {
                                "functionResponse": {
                                    "id": "shell-2",
                                    "name": "run_shell_command",
                                    "response": {"output": "2 README.md"},
                                }
                            }
                        ],
                    },
                ],
                "tokens": {
                    "input": 5000,
                    "output": 40,
                    "cached": 0,
                    "thoughts": 25,
                    "tool": 0,
                    "total": 5065,
                },
                "model": "gemini-2.5-pro",
            },
            {
                "id": "3",
                "timestamp": _iso(T0 + 9),
                "type": "gemini",
                "content": "A two-line demo readme.",
                "tokens": {
                    "input": 5200,
                    "output": 12,
                    "cached": 4800,
                    "thoughts": 0,
                    "tool": 0,
                    "total": 5212,
                },
                "model": "gemini-2.5-pro",
            },
            {"id": "4", "timestamp": _iso(T0 + 10), "type": "info", "content": "Session saved."},
        ],
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def swe_agent(path: Path) -> Path:
    doc = {
        "environment": "swe_main",
        "trajectory": [],
        "history": [
            {
                "role": "system",
                "content": "You are an autonomous programmer.",
                "agent": "main",
                "message_type": "system_prompt",
            },
            {
                "role": "user",
                "content": "Fix issue: add() subtracts.",
                "agent": "main",
                "message_type": "observation",
            },
            {
                "role": "assistant",
                "content": "Let me look.\n```\nopen src/app.py\n```",
                "thought": "Let me look.",
                "action": "open src/app.py",
                "agent": "main",
                "message_type": "action",
            },
            {
                "role": "user",
                "content": "[File: src/app.py (2 lines total)]\n"
                "1:def add(a, b):\n2:    return a - b",
                "agent": "main",
                "message_type": "observation",
            },
            {
                "role": "assistant",
                "content": "Fixing.\n```\nedit 2:2\n    return a + b\nend_of_edit\n```",
                "thought": "Fixing.",
                "action": "edit 2:2\n    return a + b\nend_of_edit",
                "agent": "main",
                "message_type": "action",
            },
            {
                "role": "user",
                "content": "File updated.",
                "agent": "main",
                "message_type": "observation",
            },
            {
                "role": "assistant",
                "content": "submit",
                "thought": "",
                "action": "submit",
                "agent": "main",
                "message_type": "action",
            },
        ],
        "info": {
            "exit_status": "submitted",
            "model_stats": {
                "instance_cost": 0.02,
                "tokens_sent": 4200,
                "tokens_received": 90,
                "api_calls": 3,
            },
        },
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def mini_swe(path: Path) -> Path:
    def extra(prompt: int, cached: int, t: float) -> dict[str, Any]:
        return {
            "response": {
                "created": T0 + t,
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": 30,
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
            }
        }

    doc = {
        "info": {
            "exit_status": "Submitted",
            "submission": "diff",
            "model_stats": {"instance_cost": 0.01, "api_calls": 2},
        },
        "messages": [
            {
                "role": "system",
                "content": "You are a helpful assistant that can interact with a computer.",
            },
            {"role": "user", "content": "Please solve this issue: add() subtracts."},
            {
                "role": "assistant",
                "content": "THOUGHT: look first.\n\n```bash\ncat src/app.py\n```",
                "extra": extra(1500, 0, 1),
            },
            {
                "role": "user",
                "content": "<returncode>0</returncode>\n<output>\n"
                "def add(a, b):\n    return a - b\n</output>",
            },
            {
                "role": "assistant",
                "content": "THOUGHT: fix it.\n\n```bash\nsed -i 's/a - b/a + b/' src/app.py"
                " && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
                "extra": extra(1700, 1400, 30),
            },
            {
                "role": "user",
                "content": "<returncode>0</returncode>\n<output>\nCOMPLETE\n</output>",
            },
        ],
        "trajectory_format": "mini-swe-agent-1",
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def messages_api(path: Path) -> Path:
    doc = {
        "system": "You are a careful coder.",
        "tools": [
            {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}
        ],
        "messages": [
            {"role": "user", "content": "Read notes.txt"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Just read it.", "signature": "s"},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "read_file",
                        "input": {"path": "notes.txt"},
                    },
                ],
                "usage": {"input_tokens": 700, "output_tokens": 20},
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "buy milk"}],
            },
            {
                "role": "assistant",
                "content": "It says: buy milk.",
                "usage": {"input_tokens": 40, "cache_read_input_tokens": 700, "output_tokens": 9},
            },
        ],
    }
    path.write_text(json.dumps(doc, indent=2))
    return path
