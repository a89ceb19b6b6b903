"""One session log per format version, synthetic but shaped like the real ones.

`python -m tests.session_formats DIR` writes them all (the committed copies live in
tests/fixtures/sessions/, see its README). Each is shaped after public logs of that
version (named in the README): the record types, the links, the way usage is reported.
The usage is made the way the API counts: every call reads the fixed prefix plus the
conversation since the last compaction, at `CHARS_PER_TOKEN`; after a compaction the
conversation starts again from the summary.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

try:
    from sessionlogs import T0, _iso, gemini, png  # as the tests import it
except ImportError:  # python -m tests.session_formats DIR
    from tests.sessionlogs import T0, _iso, gemini, png

PREFIX = 18_000
IMAGE = 640  # tokens the API bills an 800 x 600 image
CHARS_PER_TOKEN = 3.4
RESULT = "def area(w, h):\n    return w * h\n" + "# a line of the file being read\n" * 40


def _text_chars(blocks: list[dict[str, Any]]) -> int:
    """Characters of blocks as the API counts them (text, call name + input, result)."""
    n = 0
    for b in blocks:
        if b.get("type") == "text":
            n += len(b["text"])
        elif b.get("type") == "thinking":
            n += len("[thinking]\n") + len(b["thinking"]) if b["thinking"].strip() else 0
        elif b.get("type") == "tool_use":
            n += len(b["name"]) + len(json.dumps(b["input"], ensure_ascii=False))
        elif b.get("type") == "tool_result":
            c = b["content"]
            n += len(c) if isinstance(c, str) else 0  # an image: billed in tokens (IMAGE)
    return n


class Claude:
    """Claude Code lines of one version: 1.0.x (no progress, old compaction) or 2.1.x."""

    def __init__(self, version: str, session: str = "5e5510aa-0000-4000-8000-000000000001"):
        self.version = version
        self.new = not version.startswith("1.")
        self.session = session
        self.lines: list[dict[str, Any]] = []
        self.n = 0
        self.t = T0
        self.context = 0
        self.images = 0  # tokens of images in the context
        self.last: str | None = None
        self.sizes: dict[str, int] = {}  # tool result characters, by call id

    def _uid(self) -> str:
        self.n += 1
        return f"{self.n:08x}-0000-4000-8000-{self.n:012x}"

    def raw(self, **fields: Any) -> None:
        self.lines.append(fields)

    def line(self, kind: str, parent: str | None, **fields: Any) -> str:
        uid = self._uid()
        self.t += 5
        rec = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/me/proj",
            "sessionId": self.session,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": _iso(self.t),
            **fields,
        }
        self.lines.append(rec)
        return uid

    def progress(self, parent: str, k: int = 2) -> str:
        for _ in range(k):
            parent = self.line(
                "progress",
                parent,
                data={"type": "hook_progress", "hookEvent": "PostToolUse"},
                toolUseID="toolu_x",
            )
        return parent

    def user(self, content: Any, parent: str | None = None, **extra: Any) -> str:
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        self.context += _text_chars(blocks)
        self.last = self.line(
            "user", parent or self.last, message={"role": "user", "content": content}, **extra
        )
        return self.last

    def reply(self, mid: str, blocks: list[dict[str, Any]]) -> list[str]:
        """One reply, one line per block, all with the call's usage; progress lines
        between the calls in 2.1.x. Returns the uuid of each tool_use line."""
        seen = int(PREFIX + self.context / CHARS_PER_TOKEN) + self.images
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": 500,
            "cache_read_input_tokens": max(0, seen - 503),
            "output_tokens": 90,
            "service_tier": "standard",
        }
        if self.new:
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": 500,
                "ephemeral_1h_input_tokens": 0,
            }
        calls = []
        for b in blocks:
            msg = {
                "model": "claude-sonnet-4-5-20250929",
                "id": mid,
                "type": "message",
                "role": "assistant",
                "content": [b],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            }
            self.last = self.line("assistant", self.last, message=msg, requestId=f"req_{mid}")
            if b["type"] == "tool_use":
                calls.append(self.last)
                if self.new:
                    self.last = self.progress(self.last)
        self.context += _text_chars(blocks)
        return calls

    def results(self, calls: list[str], ids: list[str], content: Any = RESULT) -> None:
        for tid in ids:
            self.sizes[tid] = _text_chars([{"type": "tool_result", "content": content}])
        for parent, tid in zip(calls, ids, strict=True):
            block = {"tool_use_id": tid, "type": "tool_result", "content": content}
            self.user([block], parent=parent, toolUseResult={"stdout": str(content)[:200]})

    def attachment(self, payload: dict[str, Any], text: str = "") -> None:
        """A 2.1.x `attachment` line in the chain; `text` is what the model reads of it
        (counted in the next call's usage)."""
        self.context += len(text)
        self.last = self.line("attachment", self.last, attachment=payload)

    def microcompact(self, ids: list[str]) -> None:
        """2.1.x's `microcompact_boundary`: the next calls send these results as a
        placeholder (the log keeps their text)."""
        placeholder = "[Old tool result content cleared]"
        saved = sum(self.sizes[i] - len(placeholder) for i in ids)
        self.context -= saved
        self.last = self.line(
            "system",
            self.last,
            subtype="microcompact_boundary",
            content="Context microcompacted",
            level="info",
            microcompactMetadata={
                "trigger": "auto",
                "preTokens": int(PREFIX + (self.context + saved) / CHARS_PER_TOKEN),
                "tokensSaved": int(saved / CHARS_PER_TOKEN),
                "compactedToolIds": ids,
                "clearedAttachmentUUIDs": [],
            },
        )

    def compact(self, summary: str) -> None:
        if self.new:
            boundary = self.line(
                "system",
                None,
                subtype="compact_boundary",
                content="Conversation compacted",
                isMeta=False,
                level="info",
                logicalParentUuid=self.last,
                compactMetadata={
                    "trigger": "auto",
                    "preTokens": int(PREFIX + self.context / CHARS_PER_TOKEN),
                },
            )
            parent: str | None = boundary
        else:
            parent = None  # 1.0.x: the summary line is a new root of its own
        self.context = self.images = 0
        self.user(
            "This session is being continued from a previous conversation. " + summary,
            parent=parent,
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        )
        self.last = self.lines[-1]["uuid"]

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(o) + "\n" for o in self.lines))
        return path


def claude_code(path: Path, version: str, *, replies: int = 40, compact_every: int = 0) -> Path:
    """A Claude Code session: parallel calls, a split reply, thinking, an empty text
    block, an image result, a redo branch, hook progress in the chain (2.1.x), the
    records that are not the conversation, and compactions every `compact_every`."""
    c = Claude(version)
    if c.new:
        c.raw(type="queue-operation", operation="dequeue", timestamp=_iso(T0), sessionId=c.session)
        c.raw(
            type="file-history-snapshot",
            messageId="m0",
            snapshot={"trackedFileBackups": {}},
            isSnapshotUpdate=False,
        )
    else:
        c.raw(
            type="summary",
            summary="Fixing the area function",
            leafUuid="00000000-0000-4000-8000-000000000000",
        )
    c.user("The area function is wrong; please fix it and run the tests.")
    for k in range(replies):
        if compact_every and k and k % compact_every == 0:
            c.compact(
                f"Summary {k}: the user asked to fix area(); files read so far. " + "detail " * 300
            )
            c.user("Go on.")
        mid = f"msg_{version.replace('.', '')}_{k:04d}"
        think = {"type": "thinking", "thinking": f"Step {k}: look at the code.", "signature": "sig"}
        text = {"type": "text", "text": "" if k == 3 else f"Reading the files, step {k}."}
        a = {
            "type": "tool_use",
            "id": f"toolu_{k:04d}a",
            "name": "Read",
            "input": {"file_path": f"/home/me/proj/m{k}.py"},
        }
        if k % 5 == 4:  # two calls in parallel: their lines and results branch
            b = {
                "type": "tool_use",
                "id": f"toolu_{k:04d}b",
                "name": "Bash",
                "input": {"command": "pytest -q"},
            }
            calls = c.reply(mid, [think, text, a, b])
            c.results(calls, [a["id"], b["id"]])
        elif k == 7:  # a screenshot read back: an image in the result
            calls = c.reply(mid, [text, a])
            image = [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": png(800, 600)},
                }
            ]
            c.results(calls, [a["id"]], image)
        else:
            calls = c.reply(mid, [text, a] if k % 3 else [think, text, a])
            c.results(calls, [a["id"]])
        if k == 10:  # a redo: an abandoned reply branching off the same parent
            keep = c.last
            saved = c.context
            c.reply(f"msg_abandoned_{k}", [{"type": "text", "text": "An answer the user redid."}])
            c.last, c.context = keep, saved
    c.reply(
        f"msg_{version.replace('.', '')}_end",
        [{"type": "text", "text": "Fixed: area() multiplies."}],
    )
    if c.new:
        c.line("system", c.last, subtype="turn_duration", durationMs=1234, isMeta=True)
        c.raw(type="last-prompt", lastPrompt="please fix", sessionId=c.session)
    return c.write(path)


def codex(path: Path, version: str, *, calls: int = 30, compact_at: int = 0) -> Path:
    """A Codex rollout: session_meta, turn_context per turn, response_item messages,
    reasoning, function calls (custom_tool_call apply_patch in newer versions), their
    outputs, event_msg token_count after each call (cached inside input_tokens), the UI
    copies (agent_message, ...) and, with `compact_at`, a `compacted` line."""
    out: list[dict[str, Any]] = []
    t = [T0]
    context = [0]
    base = "You are Codex, a coding agent. " * 40

    def ln(kind: str, payload: dict[str, Any]) -> None:
        t[0] += 3
        out.append({"timestamp": _iso(t[0]), "type": kind, "payload": payload})

    meta = {
        "id": "0199aaaa-0000-7000-8000-000000000001",
        "timestamp": _iso(T0),
        "cwd": "/home/me/proj",
        "originator": "codex_cli_rs",
        "cli_version": version,
        "model_provider": "openai",
    }
    newer = tuple(int(x) for x in version.split(".")[:2]) >= (0, 100)
    if newer:
        meta["base_instructions"] = {"text": base}
    else:
        meta["instructions"] = base
    ln("session_meta", meta)
    user = "Fix area() and run the tests."
    ln(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]},
    )
    ln("event_msg", {"type": "user_message", "message": user, "images": []})
    context[0] += len(user)
    total = 0
    for k in range(calls):
        if compact_at and k == compact_at:
            summary = "Summary: area() was wrong, files read, tests run. " + "detail " * 300
            ln("compacted", {"message": summary, "replacement_history": []})
            ln("event_msg", {"type": "context_compacted"})
            context[0] = len(summary)
        ln(
            "turn_context",
            {
                "cwd": "/home/me/proj",
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write"},
                "model": "gpt-5-codex",
                "effort": "medium",
                "summary": "auto",
            },
        )
        seen = int(PREFIX + context[0] / CHARS_PER_TOKEN)
        ln(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": f"**Step {k}**"}],
                "content": None,
                "encrypted_content": "gAAAA",
            },
        )
        ln("event_msg", {"type": "agent_reasoning", "text": f"**Step {k}**"})
        said = f"Looking at step {k}."
        ln(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": said}],
            },
        )
        ln("event_msg", {"type": "agent_message", "message": said})
        cid = f"call_{k:04d}"
        if newer and k % 4 == 3:
            patch = (
                "*** Begin Patch\n*** Update File: area.py\n"
                "-    return w + h\n+    return w * h\n*** End Patch"
            )
            ln(
                "response_item",
                {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": cid,
                    "name": "apply_patch",
                    "input": patch,
                },
            )
            body = (
                len("[thinking]\n")
                + len(f"**Step {k}**")
                + len(said)
                + len("edit_file")
                + len(json.dumps({"input": patch}))
            )
            ln(
                "response_item",
                {
                    "type": "custom_tool_call_output",
                    "call_id": cid,
                    "output": json.dumps(
                        {"output": "Success. Updated area.py\n", "metadata": {"exit_code": 0}}
                    ),
                },
            )
            result = "Success. Updated area.py\n"
        else:
            args = json.dumps(
                {"command": ["bash", "-lc", f"cat m{k}.py"], "workdir": "/home/me/proj"}
            )
            ln(
                "response_item",
                {"type": "function_call", "name": "shell", "arguments": args, "call_id": cid},
            )
            body = (
                len("[thinking]\n")
                + len(f"**Step {k}**")
                + len(said)
                + len("bash")
                + len(json.dumps(json.loads(args)))
            )
            ln(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": cid,
                    "output": json.dumps(
                        {"output": RESULT, "metadata": {"exit_code": 0, "duration_seconds": 0.1}}
                    ),
                },
            )
            result = RESULT
        cached = max(0, seen - 400)
        total += seen
        usage = {
            "input_tokens": seen,
            "cached_input_tokens": cached,
            "output_tokens": 80,
            "reasoning_output_tokens": 20,
            "total_tokens": seen + 100,
        }
        info = {
            "total_token_usage": {**usage, "input_tokens": total},
            "last_token_usage": usage,
            "model_context_window": 272000,
        }
        # token_count follows the call; Codex writes it once more with the same figures
        out.insert(
            len(out) - 1,
            {
                "timestamp": _iso(t[0]),
                "type": "event_msg",
                "payload": {"type": "token_count", "info": info, "rate_limits": None},
            },
        )
        ln("event_msg", {"type": "token_count", "info": info, "rate_limits": None})
        context[0] += body + len(result)
    path.write_text("".join(json.dumps(o) + "\n" for o in out))
    return path


def openhands_output(path: Path, *, instances: int = 2, steps: int = 12) -> Path:
    """OpenHands evaluation output: one instance a line, its `history` of actions and
    observations (tool_call_metadata with the model response) and `metrics` with each
    call's `token_usages` (litellm: prompt_tokens counts the cached ones too)."""
    lines = []
    for i in range(instances):
        t = T0 + i * 3600
        history: list[dict[str, Any]] = []
        usages = []
        system = "You are OpenHands agent, a helpful AI assistant. " * 60
        history.append(
            {
                "id": 0,
                "timestamp": _iso(t),
                "source": "agent",
                "message": system,
                "action": "system",
                "args": {
                    "content": system,
                    "tools": [],
                    "openhands_version": "0.35.0",
                    "agent_class": "CodeActAgent",
                },
            }
        )
        task = f"<uploaded_files>/workspace/repo{i}</uploaded_files> Fix issue {i}: area() adds."
        history.append(
            {
                "id": 1,
                "timestamp": _iso(t + 1),
                "source": "user",
                "message": task,
                "action": "message",
                "args": {"content": task, "image_urls": None, "wait_for_response": False},
            }
        )
        history.append(
            {
                "id": 2,
                "timestamp": _iso(t + 1),
                "source": "user",
                "message": "Retrieving content for: ...",
                "action": "recall",
                "args": {"recall_type": "workspace_context", "query": task},
            }
        )
        history.append(
            {
                "id": 3,
                "timestamp": _iso(t + 1),
                "source": "environment",
                "message": "Added workspace context",
                "cause": 2,
                "observation": "recall",
                "content": "Added workspace context",
                "extras": {
                    "recall_type": "workspace_context",
                    "repo_name": "",
                    "runtime_hosts": {},
                },
            }
        )
        context = len(task) + len("Added workspace context")
        for k in range(steps):
            rid = f"chatcmpl-{i}-{k:03d}"
            cid = f"toolu_{i}{k:03d}"
            cmd = f"cat /workspace/repo{i}/m{k}.py"
            args = json.dumps({"command": cmd})
            thought = f"Let me look at m{k}.py."
            seen = int(PREFIX + context / CHARS_PER_TOKEN)
            cached = max(0, seen - 700) if k else 0
            usages.append(
                {
                    "model": "anthropic/claude-sonnet-4-20250514",
                    "prompt_tokens": seen,
                    "completion_tokens": 60,
                    "cache_read_tokens": cached,
                    "cache_write_tokens": seen - cached,
                    "response_id": rid,
                }
            )
            resp = {
                "id": rid,
                "created": int(t),
                "model": "claude-sonnet-4-20250514",
                "object": "chat.completion",
                "choices": [
                    {
                        "finish_reason": "tool_calls",
                        "index": 0,
                        "message": {
                            "content": thought,
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 1,
                                    "function": {"arguments": args, "name": "execute_bash"},
                                    "id": cid,
                                    "type": "function",
                                }
                            ],
                        },
                    }
                ],
            }
            meta = {
                "function_name": "execute_bash",
                "tool_call_id": cid,
                "model_response": resp,
                "total_calls_in_response": 1,
            }
            history.append(
                {
                    "id": 4 + 2 * k,
                    "timestamp": _iso(t + 10 * k),
                    "source": "agent",
                    "message": f"Running command: {cmd}",
                    "action": "run",
                    "tool_call_metadata": meta,
                    "args": {
                        "command": cmd,
                        "is_input": False,
                        "thought": thought,
                        "blocking": False,
                        "hidden": False,
                        "confirmation_state": "confirmed",
                    },
                    "timeout": 120,
                }
            )
            history.append(
                {
                    "id": 5 + 2 * k,
                    "timestamp": _iso(t + 10 * k + 2),
                    "source": "agent",
                    "message": f"Command `{cmd}` executed with exit code 0.",
                    "cause": 4 + 2 * k,
                    "observation": "run",
                    "tool_call_metadata": meta,
                    "content": RESULT,
                    "extras": {"command": cmd, "metadata": {"exit_code": 0}, "hidden": False},
                    "success": True,
                }
            )
            context += (
                len(thought) + len("execute_bash") + len(json.dumps({"command": cmd})) + len(RESULT)
            )
        acc = {
            "model": "default",
            "prompt_tokens": sum(u["prompt_tokens"] for u in usages),
            "completion_tokens": 60 * steps,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "response_id": "",
        }
        metrics = {
            "accumulated_cost": 0.5,
            "accumulated_token_usage": acc,
            "costs": [],
            "response_latencies": [],
            "token_usages": usages,
        }
        lines.append(
            {
                "instance_id": f"acme__repo-{100 + i}",
                "test_result": {"git_patch": "diff --git ..."},
                "instruction": task,
                "metadata": {"agent_class": "CodeActAgent", "model_name": "claude-sonnet-4"},
                "history": history,
                "metrics": metrics,
                "error": None,
                "instance": {"repo": "acme/repo"},
            }
        )
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return path


def swe_agent_fc(path: Path, *, steps: int = 8, repeat_at: int = 5) -> Path:
    """A SWE-agent function-calling trajectory (`*.traj`): `history` of OpenAI messages
    (system, the issue, replies with `tool_calls`, `tool` results naming
    `tool_call_ids`), the `trajectory` steps beside it, and `info.model_stats` with the
    run's totals and `api_calls`. Reply `repeat_at` reuses the call id of the reply
    before it, as the replayed demonstrations do."""
    system = "SETTING: You are an autonomous programmer working in a repository. " * 20
    history: list[dict[str, Any]] = [
        {"role": "system", "content": system, "agent": "main", "message_type": "system_prompt"},
        {
            "role": "user",
            "content": "We're solving this issue: area() adds where it should multiply.",
            "agent": "main",
            "message_type": "observation",
        },
    ]
    trajectory = []
    call_id = ""
    for k in range(steps):
        if k != repeat_at:
            call_id = f"call_{k:02d}Xq7L19vqR0DPaU"
        name, args = ("open", {"path": f"src/m{k}.py"}) if k % 2 else ("bash", {"command": "ls"})
        thought = f"Step {k}: let me look at the next file."
        action = f"{name} {args.get('path', args.get('command'))}"
        history.append(
            {
                "role": "assistant",
                "content": thought,
                "thought": thought,
                "action": action,
                "agent": "main",
                "tool_calls": [
                    {
                        "function": {"arguments": json.dumps(args), "name": name},
                        "id": call_id,
                        "type": "function",
                    }
                ],
                "message_type": "action",
            }
        )
        output = f"[File: src/m{k}.py (40 lines total)]\n" + RESULT
        history.append(
            {
                "role": "tool",
                "content": output,
                "agent": "main",
                "message_type": "observation",
                "tool_call_ids": [call_id],
            }
        )
        trajectory.append(
            {"action": action, "observation": output, "response": thought, "thought": thought}
        )
    history.append(
        {
            "role": "assistant",
            "content": "The fix is in; submitting.",
            "thought": "The fix is in; submitting.",
            "action": "submit",
            "agent": "main",
            "tool_calls": [
                {
                    "function": {"arguments": "{}", "name": "submit"},
                    "id": "call_submit",
                    "type": "function",
                }
            ],
            "message_type": "action",
        }
    )
    history.append(
        {
            "role": "tool",
            "content": "diff --git a/src/area.py b/src/area.py",
            "agent": "main",
            "message_type": "observation",
            "tool_call_ids": ["call_submit"],
        }
    )
    doc = {
        "trajectory": trajectory,
        "history": history,
        "info": {
            "submission": "diff --git a/src/area.py b/src/area.py",
            "exit_status": "submitted",
            "model_stats": {
                "instance_cost": 0.4,
                "tokens_sent": 40_000,
                "tokens_received": 900,
                "api_calls": steps + 1,
            },
        },
        "environment": "swe_main",
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


_MINI_SYSTEM = (
    "You are a helpful assistant that can interact with a computer.\n\n"
    "Your response must contain exactly ONE bash code block with ONE command.\n"
    "<format_example>\nTHOUGHT: why\n\n```mswea_bash_command\nyour_command_here\n```\n"
    "</format_example>"
)


def _mini_messages(steps: int) -> list[dict[str, Any]]:
    """mini-swe-agent's chat: system, the task, then replies with one fenced command
    each, answered by a user message with its return code and output."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": _MINI_SYSTEM},
        {"role": "user", "content": "Please solve this issue: area() adds.\n\n" + "Rules. " * 80},
    ]
    for k in range(steps):
        out.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: step {k}, read the next file.\n\n"
                f"```mswea_bash_command\ncat src/m{k}.py\n```",
            }
        )
        out.append(
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{RESULT}</output>"}
        )
    out.append(
        {
            "role": "assistant",
            "content": "THOUGHT: done.\n\n```mswea_bash_command\n"
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
        }
    )
    out.append({"role": "user", "content": ""})
    return out


def mini_messages(path: Path, *, steps: int = 6) -> Path:
    """mini-swe-agent's messages alone, a JSON list (as its test data keeps them)."""
    path.write_text(json.dumps(_mini_messages(steps), indent=2))
    return path


def mini_trajectory(path: Path, *, steps: int = 6) -> Path:
    """mini-swe-agent's saved run (`trajectory_format: mini-swe-agent-1`): the same
    messages, each reply with `extra.response.usage` (litellm: `prompt_tokens` counts
    the cached ones), and `info.model_stats.api_calls`."""
    messages = _mini_messages(steps)
    context = sum(len(m["content"]) for m in messages[:2])
    t = T0
    for k, m in enumerate(messages[2:]):
        if m["role"] == "assistant":
            seen = int(PREFIX / 10 + context / CHARS_PER_TOKEN)
            m["extra"] = {
                "response": {
                    "id": f"chatcmpl-{k:03d}",
                    "created": int(t),
                    "usage": {
                        "prompt_tokens": seen,
                        "completion_tokens": 40,
                        "prompt_tokens_details": {"cached_tokens": max(0, seen - 600) if k else 0},
                    },
                }
            }
            t += 20
        context += len(m["content"])
    doc = {
        "info": {
            "exit_status": "Submitted",
            "submission": "",
            "model_stats": {"instance_cost": 0.05, "api_calls": steps + 1},
            "mini_version": "1.9.0",
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def gemini_jsonl(path: Path, *, replies: int = 6) -> Path:
    """A Gemini CLI 0.40 session as JSON Lines: the session's fields first, then one
    message a line (`user` with text parts; `gemini` with `toolCalls` carrying their
    results and `tokens`), and `$set` lines updating `lastUpdated`."""
    t = T0
    lines: list[dict[str, Any]] = [
        {
            "sessionId": "gemini-0040-session",
            "projectHash": "cd" * 32,
            "startTime": _iso(t),
            "lastUpdated": _iso(t),
            "kind": "main",
        },
        {
            "id": "u-1",
            "timestamp": _iso(t + 1),
            "type": "user",
            "content": [{"text": "List the files and read the first."}],
        },
    ]
    context = 30
    for k in range(replies):
        t += 10
        lines.append({"$set": {"lastUpdated": _iso(t)}})
        seen = 11_000 + int(context / CHARS_PER_TOKEN)
        reply: dict[str, Any] = {
            "id": f"g-{k}",
            "timestamp": _iso(t),
            "type": "gemini",
            "content": "" if k < replies - 1 else "Done: the files are listed and read.",
            "thoughts": [],
            "tokens": {
                "input": seen,
                "output": 80,
                "cached": max(0, seen - 500) if k else 0,
                "thoughts": 0,
                "tool": 0,
                "total": seen + 80,
            },
            "model": "gemini-3-flash-preview",
        }
        if k < replies - 1:
            cid = f"run_shell_command_{k}"
            output = f"Output: m{k}.py\n" + RESULT
            reply["toolCalls"] = [
                {
                    "id": cid,
                    "name": "run_shell_command",
                    "args": {"command": f"cat m{k}.py", "description": "Read a file."},
                    "result": [
                        {
                            "functionResponse": {
                                "id": cid,
                                "name": "run_shell_command",
                                "response": {"output": output},
                            }
                        }
                    ],
                    "status": "success",
                    "timestamp": _iso(t + 1),
                    "resultDisplay": output,
                    "displayName": "Shell",
                    "renderOutputAsMarkdown": False,
                }
            ]
            context += len(output) + 40
        lines.append(reply)
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in lines))
    return path


def claude_loglines(path: Path, *, replies: int = 10) -> Path:
    """Claude Code's lines as claude-code-transcripts exports them: `{"loglines": [...]}`,
    each `{"type", "timestamp", "message"}` without uuids; thinking, calls and their
    results, the person's text between, and a compaction summary (`isCompactSummary`)
    before the last request."""
    t = T0
    out: list[dict[str, Any]] = []

    def line(kind: str, content: Any, **fields: Any) -> None:
        nonlocal t
        t += 3
        message = {"role": kind, "content": content}
        out.append({"type": kind, "timestamp": _iso(t), "message": message, **fields})

    line("user", "Create a function that adds two numbers, with tests.")
    for k in range(replies):
        if k == replies // 2:
            line(
                "user",
                "This is a session continuation summary: add() exists.",
                isCompactSummary=True,
            )
            line("user", "Now add a multiply function too.")
        blocks: list[dict[str, Any]] = []
        if k == 0:
            blocks.append(
                {"type": "thinking", "thinking": "Write it, then test it.", "signature": "s"}
            )
        blocks.append({"type": "text", "text": f"Step {k}: running the tests."})
        cid = f"toolu_bash_{k:03d}"
        blocks.append(
            {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": "pytest -q"}}
        )
        line("assistant", blocks)
        result = {
            "type": "tool_result",
            "tool_use_id": cid,
            "content": "2 passed",
            "is_error": False,
        }
        line("user", [result])
    line("assistant", [{"type": "text", "text": "Done: add and multiply, tested."}])
    path.write_text(json.dumps({"loglines": out}, indent=2))
    return path


class OpenHandsV1:
    """OpenHands V1 events (software-agent-sdk) of one conversation, with each call's
    `token_usages` made as the API counts: the system prompt (the fixed prefix) and
    the conversation since the last `Condensation`, whose summary starts it anew."""

    def __init__(self, t: float, *, results_as_parts: bool = False) -> None:
        self.events: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.t = t
        self.n = 0
        self.context = 0
        self.parts = results_as_parts  # newer SDKs: `content` parts, not `output`

    def event(self, kind: str, source: str, **fields: Any) -> dict[str, Any]:
        self.n += 1
        self.t += 3
        e = {"kind": kind, "id": f"{self.n:08x}-0000-4000-8000-{self.n:012x}"}
        e |= {"timestamp": _iso(self.t).rstrip("Z"), "source": source, **fields}
        self.events.append(e)
        return e

    def system(self, text: str) -> None:
        tools = [{"name": "execute_bash", "description": "Run a bash command."}]
        self.event("SystemPromptEvent", "agent", system_prompt=_part(text), tools=tools)

    def user(self, text: str) -> None:
        msg = {"role": "user", "content": [_part(text)], "tool_calls": None}
        self.event("MessageEvent", "user", llm_message=msg, activated_skills=[])
        self.context += len(text)

    def usage(self, rid: str, *, first: bool = False) -> None:
        seen = int(PREFIX + self.context / CHARS_PER_TOKEN)
        cached = 0 if first else max(0, seen - 700)
        self.usages.append(
            {
                "model": "litellm_proxy/anthropic/claude-sonnet-4-5",
                "prompt_tokens": seen,
                "completion_tokens": 80,
                "cache_read_tokens": cached,
                "cache_write_tokens": seen - cached,
                "reasoning_tokens": 0,
                "context_window": 200_000,
                "per_turn_token": seen + 80,
                "response_id": rid,
            }
        )

    def reply(self, rid: str, thought: str, commands: list[str]) -> None:
        """One model reply: its calls (parallel ones share `llm_response_id`, the
        thought is on the first), then one observation per call."""
        self.usage(rid, first=not self.usages)
        self.context += len(thought)
        actions = []
        for k, cmd in enumerate(commands):
            cid = f"toolu_{rid[-6:]}{k}"
            args = {"command": cmd}
            action = {"kind": "ExecuteBashAction", "command": cmd, "is_input": False}
            call = {"id": cid, "name": "execute_bash", "arguments": json.dumps(args)}
            actions.append(
                self.event(
                    "ActionEvent",
                    "agent",
                    thought=[_part(thought)] if k == 0 else [],
                    reasoning_content=None,
                    thinking_blocks=[],
                    action=action,
                    tool_name="execute_bash",
                    tool_call_id=cid,
                    tool_call={**call, "origin": "completion"},
                    llm_response_id=rid,
                    security_risk="LOW",
                )
            )
            self.context += len("execute_bash") + len(json.dumps(args))
        for a in actions:
            self.result(a, RESULT)

    def result(self, action: dict[str, Any], text: str) -> None:
        obs: dict[str, Any] = {"kind": "ExecuteBashObservation"}
        if self.parts:
            obs |= {"content": [_part(text)], "is_error": False}
        else:
            obs |= {"output": text, "error": False, "timeout": False}
        obs |= {"command": action["action"]["command"], "exit_code": 0}
        self.event(
            "ObservationEvent",
            "environment",
            tool_name=action["tool_name"],
            tool_call_id=action["tool_call_id"],
            observation=obs,
            action_id=action["id"],
        )
        self.context += len(text)

    def finish(self, rid: str, message: str) -> None:
        self.usage(rid)
        args = {"message": message}
        cid = f"toolu_{rid[-6:]}f"
        action = self.event(
            "ActionEvent",
            "agent",
            thought=[],
            action={"kind": "FinishAction", "message": message},
            tool_name="finish",
            tool_call_id=cid,
            tool_call={"id": cid, "name": "finish", "arguments": json.dumps(args)},
            llm_response_id=rid,
        )
        self.event(
            "ObservationEvent",
            "environment",
            tool_name="finish",
            tool_call_id=cid,
            observation={"kind": "FinishObservation", "message": message},
            action_id=action["id"],
        )

    def condense(self, rid: str, summary: str) -> None:
        forgotten = [e["id"] for e in self.events if e["kind"] != "SystemPromptEvent"]
        self.event(
            "Condensation",
            "environment",
            forgotten_event_ids=forgotten[1:-4],
            summary=summary,
            summary_offset=1,
            llm_response_id=rid,
        )
        self.context = len(summary)

    def metrics(self, extra: list[dict[str, Any]] = ()) -> dict[str, Any]:
        usages = self.usages + list(extra)
        acc = {k: sum(u[k] for u in usages) for k in ("prompt_tokens", "completion_tokens")}
        return {
            "accumulated_cost": 0.01 * len(usages),
            "max_budget_per_task": None,
            "accumulated_token_usage": {"model": "default", **acc, "response_id": ""},
            "costs": [],
            "response_latencies": [],
            "token_usages": usages,
        }


def _part(text: str) -> dict[str, Any]:
    return {"cache_prompt": False, "type": "text", "text": text}


def openhands_v1_output(path: Path, *, instances: int = 2, steps: int = 12) -> Path:
    """OpenHands/benchmarks V1 output: one instance a line, `instruction`, `history` of
    V1 events and `metrics` (a `Metrics.get()`). Every fourth reply makes two parallel
    calls; the second instance has no user message: its task is the `instruction`."""
    lines = []
    for i in range(instances):
        task = f"# Task\n\nFix issue {i} in /workspace/repo{i}: area() adds, it should multiply."
        oh = OpenHandsV1(T0 + i * 3600)
        oh.system("You are OpenHands agent, a helpful AI assistant. " * 60)
        if i == 0:
            oh.user(task)
        else:
            oh.context += len(task)  # the reader puts the instruction first
        for k in range(steps - 1):
            cmds = [f"cat /workspace/repo{i}/m{k}.py"]
            if k % 4 == 3:
                cmds.append(f"cat /workspace/repo{i}/test_m{k}.py")
            oh.reply(f"chatcmpl-{i}{k:05d}", f"Let me look at m{k}.py.", cmds)
        oh.finish(f"chatcmpl-{i}{steps - 1:05d}", f"Fixed area() in repo{i}.")
        lines.append(
            {
                "instance_id": f"acme__repo-{200 + i}",
                "test_result": {"checkpoints": [], "final_score": {"total": 1, "result": 1}},
                "instruction": task,
                "metadata": {"llm": {"model": "litellm_proxy/anthropic/claude-sonnet-4-5"}},
                "history": oh.events,
                "metrics": oh.metrics(),
                "error": None,
                "instance": {"instance_id": f"acme__repo-{200 + i}"},
            }
        )
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return path


def openhands_v1_state(path: Path, *, steps: int = 24, condense_at: int = 12) -> Path:
    """A saved V1 conversation: `history` and `stats.usage_to_metrics` (the agent's LLM
    and the condenser's), results as `content` parts, a `Condensation` whose summary
    starts the context anew, an error and a rejected call answered, and events that are
    not the conversation (a state update, a kind this version does not know)."""
    oh = OpenHandsV1(T0, results_as_parts=True)
    oh.system("You are OpenHands agent, a helpful AI assistant. " * 60)
    oh.user("Fix area() in /workspace/repo: it adds, it should multiply.")
    oh.event("ConversationStateUpdateEvent", "environment", key="execution_status", value="running")
    condenser = []
    for k in range(steps):
        if k == condense_at:
            rid = f"chatcmpl-c{k:05d}"
            condenser.append({**oh.usages[-1], "response_id": rid, "completion_tokens": 400})
            oh.condense(rid, "Summary: read m0..m11, area() is in m3.py and adds. " * 8)
        oh.reply(f"chatcmpl-a{k:05d}", f"Let me look at m{k}.py.", [f"cat /workspace/m{k}.py"])
    # an error and a rejected call are answers to their calls too
    oh.usage("chatcmpl-e00000")
    for kind, extra in (
        ("AgentErrorEvent", {"error": "Tool 'edit' not found."}),
        ("UserRejectObservation", {"rejection_reason": "not now", "action_id": "x"}),
    ):
        cid = f"toolu_{kind[:4].lower()}"
        args = {"path": "/workspace/m3.py"}
        oh.event(
            "ActionEvent",
            "agent",
            thought=[_part("Now the fix.")] if kind == "AgentErrorEvent" else [],
            action=None,
            tool_name="edit",
            tool_call_id=cid,
            tool_call={"id": cid, "name": "edit", "arguments": json.dumps(args)},
            llm_response_id="chatcmpl-e00000",
        )
        oh.event(kind, "agent", tool_name="edit", tool_call_id=cid, **extra)
    oh.event("HologramEvent", "environment", detail="a kind from a newer SDK")
    state = {
        "instance_id": "acme-state",
        "history": oh.events,
        "num_events": len(oh.events),
        "stats": {
            "usage_to_metrics": {
                "agent": oh.metrics(),
                "condenser": {**oh.metrics(), "token_usages": condenser},
            }
        },
    }
    path.write_text(json.dumps(state, indent=1))
    return path


def openhands_resolver(path: Path, *, steps: int = 6) -> Path:
    """OpenHands resolver output of before events had a `source` or tool calls: flat
    actions (`run`, `run_ipython`, `finish`: the model's text turned into an action)
    and observations, the issue as the first `message`; `metrics` has only costs."""
    lines = []
    for i in range(2):
        task = f"Please fix the following issue for the repository in /workspace.\n# Issue {i}"
        history: list[dict[str, Any]] = [
            {
                "content": task,
                "images_urls": None,
                "wait_for_response": False,
                "action": "message",
                "action_risk": None,
            }
        ]
        for k in range(steps):
            if k % 2:
                code = f"print(open('/workspace/m{k}.py').read())"
                act = {"code": code, "thought": f"Now m{k}.py.", "action": "run_ipython"}
                act |= {"is_confirmed": "confirmed", "kernel_init_code": "", "action_risk": None}
                obs = {"code": code, "content": RESULT, "observation": "run_ipython"}
            else:
                cmd = f"cat /workspace/m{k}.py"
                act = {"command": cmd, "thought": f"Let me read m{k}.py.", "keep_prompt": True}
                act |= {"action": "run", "is_confirmed": "confirmed", "action_risk": None}
                obs = {"content": RESULT, "command_id": -1, "command": cmd, "exit_code": 0}
                obs |= {"observation": "run"}
            history += [act, obs]
        history.append({"outputs": {}, "thought": "Done.", "action": "finish"})
        lines.append(
            {
                "issue": {"owner": "acme", "repo": "repo", "number": i + 1, "title": "area"},
                "issue_type": "issue",
                "instruction": task,
                "base_commit": "0" * 40,
                "git_patch": "diff --git ...",
                "history": history,
                "metrics": {"accumulated_cost": 0.05, "costs": [0.01] * (steps + 1)},
                "success": True,
                "comment_success": None,
                "result_explanation": "Fixed.",
                "error": None,
            }
        )
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return path


FIXTURES = {
    "claude-code-1.0.90.jsonl": lambda p: claude_code(p, "1.0.90", replies=40),
    "claude-code-1.0.90-compacted.jsonl": lambda p: claude_code(
        p, "1.0.90", replies=60, compact_every=25
    ),
    "claude-code-2.1.39.jsonl": lambda p: claude_code(p, "2.1.39", replies=40),
    "claude-code-2.1.39-compacted.jsonl": lambda p: claude_code(
        p, "2.1.39", replies=60, compact_every=25
    ),
    "codex-0.77.0.jsonl": lambda p: codex(p, "0.77.0", calls=30),
    "codex-0.118.0-compacted.jsonl": lambda p: codex(p, "0.118.0", calls=50, compact_at=30),
    "openhands-output.jsonl": lambda p: openhands_output(p),
    "openhands-v1-output.jsonl": lambda p: openhands_v1_output(p),
    "openhands-v1-state.json": lambda p: openhands_v1_state(p),
    "openhands-resolver.jsonl": lambda p: openhands_resolver(p),
    "gemini-cli.json": gemini,
    "swe-agent-fc-repeated-ids.traj": lambda p: swe_agent_fc(p),
    "mini-swe-agent-messages.traj.json": lambda p: mini_messages(p),
    "mini-swe-agent-1.traj.json": lambda p: mini_trajectory(p),
    "gemini-cli-0.40.jsonl": lambda p: gemini_jsonl(p),
    "claude-code-transcripts-loglines.json": lambda p: claude_loglines(p),
}


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [build(folder / name) for name, build in FIXTURES.items()]


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1])):
        print(p)
