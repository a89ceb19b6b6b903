"""What the simulated agent can tell from one request: who it is, its tasks, its past calls.

Who it is, its teammates, its open tasks, its tools and its new mail come as data
(`request.facts`, `request.tools`), never from the prose written for the model. The
rest is read fresh from the messages on every call: older mail and the board's results
from the blocks' data (`TextBlock.mail`, `TaskNote`s), `list_tasks` JSON, the agent's
own earlier tool calls and the progress lines its own summaries carried over (the
simulator's own words, read back by the simulator). Nothing is remembered between
calls. Without
facts (a scripted test, a request that came over the wire) the agent is
`request.agent`, knows no teammates and learns its tasks from the mail, the claims and
the `list_tasks` results it sees.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from team.core.conversation import (
    INTERRUPTED,
    InboxMail,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from team.llm.base import ModelRequest

CLOSED = frozenset({"completed", "complete", "done", "closed", "cancelled", "canceled", "failed"})
BOARD_CHECK = "Checking the task board for unclaimed work."
SUMMARY_HEAD = "[sim] Extractive summary"
"""How the simulator's summaries begin (`sim_summary` writes it): the text a compacted
context carries over, where the agent's own progress lines survive."""

# The agent states its progress in its own words ("Task #3, step 4 of 8 (read): ...");
# the summariser keeps the latest such line per task, so a compacted agent resumes there
# instead of starting over (which could never finish under frequent compaction).
_PROGRESS = re.compile(r"Task #(\d{1,18}), step (\d{1,3}) of (\d{1,3}) \(\w{1,20}\)")


def progress_line(task: int, step: int, of: int, kind: str) -> str:
    """The progress line the agent begins a task step's text with (see `progress`)."""
    return f"Task #{task}, step {step} of {of} ({kind}): "


def progress(text: str) -> list[tuple[int, int, int]]:
    """(task, step, of) of every progress line in `text`, in order."""
    if "Task #" not in text:
        return []
    return [(int(m[1]), int(m[2]), int(m[3])) for m in _PROGRESS.finditer(text)]


@dataclass(frozen=True, slots=True)
class Mail:
    """An inbox message in the context, and the index of the user message that brought it
    (-1 for new mail known from the facts alone)."""

    mail: InboxMail
    index: int = -1

    @property
    def sender(self) -> str:
        return self.mail.sender

    @property
    def type(self) -> str:
        return self.mail.type

    @property
    def task(self) -> int | None:
        return self.mail.task

    @property
    def body(self) -> str:
        return self.mail.body

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
    def interrupted(self) -> bool:
        """Cut off by a crash: the team never ran it, so it was not attempted."""
        return self.result is not None and self.result.content == INTERRUPTED

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
    carried: str = ""  # the summaries a compaction carried over (the sim's own text)
    resumed: dict[int, int] = field(default_factory=dict)  # task -> last step stated, in order
    finished: set[int] = field(default_factory=set)  # tasks whose last step was stated

    def open_tasks(self) -> list[int]:
        return sorted(t for t, o in self.owner.items() if o == "me" and t not in self.closed)

    def subject(self, task: int) -> str:
        return self.subjects.get(task) or f"task {task}"


def read_situation(request: ModelRequest) -> Situation:
    """Everything the policy needs: the request's facts, tools and messages."""
    s = Situation(tools=frozenset(t.name for t in request.tools))
    facts = request.facts
    s.me = request.agent or s.me
    if facts is not None:
        s.me, s.role = facts.name, facts.role
        s.teammates = [n for n, _ in facts.teammates if n != facts.name]
        for task, subject in facts.tasks:
            s.owner[task] = "me"
            s.subjects[task] = subject[:80]
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
        _apply_user_text(s, msg, text, index=i, guess=facts is None)
    if facts is not None:
        s.new_mail = [Mail(m) for m in facts.new_mail]
        return s
    # No facts: the mail in the newest user message is new, and a task the agent's own
    # progress lines carried over a compaction is still its own unless it finished it.
    s.new_mail = [m for m in s.mail if m.index == last]
    for task in s.resumed:
        if task not in s.closed and task not in s.finished:
            s.owner.setdefault(task, "me")
    return s


def _apply_user_text(s: Situation, msg: Message, text: str, *, index: int, guess: bool) -> None:
    if SUMMARY_HEAD in text:
        s.carried += text
        for task, step, of in progress(text):
            step = max(step, s.resumed.pop(task, 0))
            s.resumed[task] = step  # re-inserted: the last task mentioned comes last
            if step >= of:
                s.finished.add(task)  # its last step (the completion) was taken
    blocks = [b for b in msg.content if isinstance(b, TextBlock)]
    for m in (b.mail for b in blocks if b.mail is not None):
        mail = Mail(m, index)
        s.mail.append(mail)
        if mail.type == "task" and mail.task is not None:
            if guess:  # with facts the board says what is ours
                s.owner[mail.task] = "me"
            s.closed.discard(mail.task)  # reopened, or handed back: work again
            s.subjects.setdefault(mail.task, mail.first_line[:80])
        elif mail.type == "revoked" and mail.task is not None:
            s.closed.add(mail.task)  # cancelled or reassigned: stop working on it
    if not guess:
        return
    for note in (n for b in blocks for n in b.tasks if n.event == "claimed"):
        s.owner[note.id] = "me"  # the loop took an open task for us
        s.subjects.setdefault(note.id, note.subject[:80])


def _apply_call(s: Situation, call: Call) -> None:
    name, task = call.use.name, call.task
    if name == "claim_task" and task is not None and call.result is not None:
        if not call.failed:
            s.owner[task] = "me"
        elif s.owner.get(task) != "me":
            s.owner[task] = "other"  # somebody else got it first
    elif name == "complete_task" and task is not None and not call.interrupted:
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


def first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def as_int(v: Any) -> int | None:
    try:
        return int(str(v).lstrip("#"))
    except (TypeError, ValueError):
        return None
