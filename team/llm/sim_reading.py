"""What the simulated agent can tell from one request: who it is, its tasks, its past calls.

Read fresh from the system prompt and the messages on every call: identity blocks,
inbox messages, reminders, `list_tasks` results and the agent's own earlier tool calls
with their results. Nothing is remembered between calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from team.conversation import ToolResultBlock, ToolUseBlock
from team.llm.base import ModelRequest

MAIL_RE = re.compile(
    r'<message from="(?P<sender>[^"]*)" type="(?P<type>[^"]*)" id="(?P<id>[^"]*)"'
    r'(?: task="(?P<task>\d+)")?[^>]*>\n?(?P<body>.*?)\n?</message>',
    re.S,
)
SELF_RE = re.compile(r"You are '(?P<name>[^']+)', role: (?P<role>[^,]+), team: (?P<team>[^.\n]+)\.")
TEAMMATES_RE = re.compile(r"Teammates:\s*(?P<list>[^\n<]*?)(?:\.\s|\.?\s*Open tasks:|\n|<|\.?$)")
MATE_RE = re.compile(r"^([a-z][a-z0-9_-]{0,31})\b")
OPEN_TASKS_RE = re.compile(r"Open tasks:\s*(?P<list>.*?)(?:</identity>|\n|$)", re.S)
TASK_ITEM_RE = re.compile(r"#(\d+)[:.)]?\s+([^;\n<]*)")
REMINDER = "Reminder: you still own open tasks:"
CLOSED = frozenset({"completed", "complete", "done", "closed", "cancelled", "canceled", "failed"})
# The agent states its progress in its own words ("Task #3, step 4 of 8 (read): ...");
# the summariser keeps the latest such line per task, so a compacted agent resumes there
# instead of starting over (which could never finish under frequent compaction).
BOARD_CHECK = "Checking the task board for unclaimed work."
PROGRESS_RE = re.compile(r"Task #(\d+), step (\d+) of \d+ \((\w+)\)")


@dataclass(frozen=True, slots=True)
class Mail:
    sender: str
    type: str
    id: str
    task: int | None
    body: str
    index: int = -1  # of the user message that brought it

    @property
    def first_line(self) -> str:
        return first_line(self.body)


@dataclass(frozen=True, slots=True)
class Call:
    """One earlier tool call of the agent, with its result if the context still has it."""

    index: int  # of the assistant message
    use: ToolUseBlock
    result: ToolResultBlock | None

    @property
    def failed(self) -> bool:
        r = self.result
        return r is not None and (r.is_error or r.content.lstrip().lower().startswith("error"))

    @property
    def output(self) -> str:
        return "" if self.result is None or self.failed else self.result.content

    @property
    def task(self) -> int | None:
        return as_int(self.use.input.get("task_id"))


@dataclass
class Situation:
    """What the agent can tell about itself and its work from one request."""

    me: str = "agent"
    role: str = ""
    teammates: list[str] = field(default_factory=list)
    tools: frozenset[str] = frozenset()
    subjects: dict[int, str] = field(default_factory=dict)
    owner: dict[int, str] = field(default_factory=dict)  # task id -> "me" or "other"
    closed: set[int] = field(default_factory=set)
    listed_open: list[int] = field(default_factory=list)  # unowned, per the latest list_tasks
    calls: list[Call] = field(default_factory=list)
    turn_start: int = 0  # index of the last user message that brought new text
    new_mail: list[Mail] = field(default_factory=list)
    mail: list[Mail] = field(default_factory=list)  # every message still in the context
    identity_text: str = ""  # identity blocks and the summaries that follow them
    resumed: dict[int, int] = field(default_factory=dict)  # task -> last step stated, in order

    def open_tasks(self) -> list[int]:
        return sorted(t for t, o in self.owner.items() if o == "me" and t not in self.closed)

    def subject(self, task: int) -> str:
        return self.subjects.get(task) or f"task {task}"


def read_situation(request: ModelRequest) -> Situation:
    """Everything the policy needs, read from the system prompt and the messages."""
    s = Situation(tools=frozenset(t.name for t in request.tools))
    if m := SELF_RE.search(request.system):
        s.me, s.role = m["name"], m["role"].strip()
    s.teammates = teammates(request.system, s.me)
    results = {r.tool_use_id: r for m in request.messages for r in m.tool_results()}
    last = len(request.messages) - 1
    for i, msg in enumerate(request.messages):
        if msg.role == "assistant":
            for use in msg.tool_uses():
                call = Call(i, use, results.get(use.id))
                s.calls.append(call)
                _apply_call(s, call)
            continue
        text = msg.text()
        if not text.strip():
            continue
        s.turn_start = i
        _apply_user_text(s, text, newest=i == last, index=i)
    return s


def _apply_user_text(s: Situation, text: str, *, newest: bool, index: int = -1) -> None:
    if "<identity>" in text:
        s.identity_text += text
        for m in PROGRESS_RE.finditer(text):
            task = int(m[1])
            step = max(int(m[2]), s.resumed.pop(task, 0))
            s.resumed[task] = step  # re-inserted: the last task mentioned comes last
        if s.me == "agent" and (m := SELF_RE.search(text)):
            s.me = m["name"]
        if not s.teammates:
            s.teammates = teammates(text, s.me)
        if m := OPEN_TASKS_RE.search(text):
            _own_items(s, m["list"])
    if REMINDER in text:
        _own_items(s, text.split(REMINDER, 1)[1])
    for m in MAIL_RE.finditer(text):
        mail = Mail(m["sender"], m["type"], m["id"], as_int(m["task"]), m["body"], index)
        s.mail.append(mail)
        if mail.type == "task" and mail.task is not None:
            s.owner[mail.task] = "me"
            s.closed.discard(mail.task)  # reopened, or handed back: work again
            s.subjects.setdefault(mail.task, mail.first_line[:80])
        elif mail.type == "revoked" and mail.task is not None:
            s.closed.add(mail.task)  # cancelled or reassigned: stop working on it
        if newest:
            s.new_mail.append(mail)


def _apply_call(s: Situation, call: Call) -> None:
    name, task = call.use.name, call.task
    if name == "claim_task" and task is not None and call.result is not None:
        if not call.failed:
            s.owner[task] = "me"
        elif s.owner.get(task) != "me":
            s.owner[task] = "other"  # somebody else got it first
    elif name == "complete_task" and task is not None:
        s.closed.add(task)  # attempted counts: never loop on a completion that fails
    elif name == "list_tasks" and call.output:
        _apply_listing(s, call.output)


def _apply_listing(s: Situation, output: str) -> None:
    try:
        records = json.loads(output)
    except ValueError:
        return  # a placeholder or prose: nothing to learn
    if not isinstance(records, list):
        return
    s.listed_open = []
    for rec in records:
        if not isinstance(rec, dict) or (task := as_int(rec.get("id"))) is None:
            continue
        if rec.get("subject"):
            s.subjects[task] = str(rec["subject"])[:80]
        owner = rec.get("owner") or ""
        status = str(rec.get("status", "")).lower()
        if status in CLOSED:
            s.closed.add(task)
        elif status == "blocked":
            continue  # not work yet: its owner is told once it unblocks
        elif owner == s.me:
            s.owner[task] = "me"
        elif owner:
            s.owner[task] = "other"
        else:
            s.listed_open.append(task)


def _own_items(s: Situation, listing: str) -> None:
    for m in TASK_ITEM_RE.finditer(listing):
        task = int(m[1])
        s.owner[task] = "me"
        if m[2].strip():
            s.subjects.setdefault(task, m[2].strip()[:80])


def teammates(text: str, me: str) -> list[str]:
    """Names from a `Teammates: bob (tester), carol (reviewer)` line, without `me`."""
    m = TEAMMATES_RE.search(text)
    if not m:
        return []
    names = []
    for part in m["list"].split(","):
        if (n := MATE_RE.match(part.strip())) and n[1] not in (me, "none") and n[1] not in names:
            names.append(n[1])
    return names


def first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def as_int(v: Any) -> int | None:
    try:
        return int(str(v).lstrip("#"))
    except (TypeError, ValueError):
        return None
