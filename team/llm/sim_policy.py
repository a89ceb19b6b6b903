"""What the simulated agent does next, worked out from the request alone.

The policy is stateless: everything it knows comes from the system prompt and the
messages (identity, inbox messages, reminders, and its own earlier tool calls with their
results). So the same request always gets the same reply, and after a compaction the
agent carries on from whatever the identity block and summary tell it.

For each open task it owns it runs a short script, one step per reply:
claim, survey (bash), measure (bash), read a file it found, sometimes `compact`, write a
notes file, tell a teammate, then mark the notes done and complete the task. A step that
was attempted counts as done whatever its result, so a task always finishes within a
bounded number of calls even when every tool fails.
"""

from __future__ import annotations

import hashlib
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
RUN_RE = re.compile(r"\brun\s+`([^`\n]{1,200})`", re.I)
GREP_HIT_RE = re.compile(r"^(?:\./)?([\w.][\w./-]*):\d+:", re.M)
WC_LINE_RE = re.compile(r"^\s*(\d+)\s+(?:\./)?(\S.*?)\s*$", re.M)
CLOSED = frozenset({"completed", "complete", "done", "closed", "cancelled", "canceled", "failed"})
SKIP_DIRS = (".team/", ".transcripts/", ".git/", ".venv/")
STOPWORDS = frozenset(
    {"the", "this", "that", "with", "from", "into", "task", "file", "files", "please", "make"}
    | {"sure", "about", "should", "what", "when", "which", "have", "some", "them", "then"}
    | {"than", "there", "their", "they", "were", "will", "would", "could", "also", "each"}
)
SCRIPT = ("claim", "survey", "measure", "read", "compact", "notes", "tell", "finish")
STEP_TOOLS = {
    "claim": "claim_task",
    "survey": "bash",
    "measure": "bash",
    "read": "read_file",
    "compact": "compact",
    "notes": "write_file",
    "tell": "send_message",
    "finish": "complete_task",
}
MAX_CALLS_PER_TASK = 12  # a hard stop even if a script step is somehow never recognised


@dataclass(frozen=True, slots=True)
class Mail:
    sender: str
    type: str
    id: str
    task: int | None
    body: str

    @property
    def first_line(self) -> str:
        return _first_line(self.body)


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
        return _as_int(self.use.input.get("task_id"))


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
    identity_text: str = ""  # identity blocks and the summaries that follow them

    def open_tasks(self) -> list[int]:
        return sorted(t for t, o in self.owner.items() if o == "me" and t not in self.closed)

    def subject(self, task: int) -> str:
        return self.subjects.get(task) or f"task {task}"


@dataclass
class Reply:
    """The next reply: text for the user to read, and tool calls as (name, input)."""

    text: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


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
        _apply_user_text(s, text, newest=i == last)
    return s


def _apply_user_text(s: Situation, text: str, *, newest: bool) -> None:
    if "<identity>" in text:
        s.identity_text += text
        if s.me == "agent" and (m := SELF_RE.search(text)):
            s.me = m["name"]
        if not s.teammates:
            s.teammates = teammates(text, s.me)
        if m := OPEN_TASKS_RE.search(text):
            _own_items(s, m["list"])
    if REMINDER in text:
        _own_items(s, text.split(REMINDER, 1)[1])
    for m in MAIL_RE.finditer(text):
        mail = Mail(m["sender"], m["type"], m["id"], _as_int(m["task"]), m["body"])
        if mail.type == "task" and mail.task is not None:
            s.owner[mail.task] = "me"
            s.subjects.setdefault(mail.task, mail.first_line[:80])
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
        if not isinstance(rec, dict) or (task := _as_int(rec.get("id"))) is None:
            continue
        if rec.get("subject"):
            s.subjects[task] = str(rec["subject"])[:80]
        owner = rec.get("owner") or ""
        if str(rec.get("status", "")).lower() in CLOSED:
            s.closed.add(task)
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


# --- deciding -----------------------------------------------------------------------------


def decide(request: ModelRequest, *, seed: int = 0) -> Reply:
    """The agent's next reply to `request`: some text and zero or more tool calls."""
    s = read_situation(request)
    notes = [_acknowledge(m) for m in s.new_mail]
    extra = _requested_actions(s)
    if request.tool_choice == "none" or not s.tools:
        return Reply(_join([*notes, "No tools are available for this reply, so I stop here."]))
    step = _next_step(s, seed)
    if step is None:
        return Reply(_join([*notes, *(t for t, _ in extra), _wrap_up(s)]), [c for _, c in extra])
    text, calls = step
    return Reply(_join([*notes, *(t for t, _ in extra), text]), [c for _, c in extra] + calls)


def _next_step(s: Situation, seed: int) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
    task = _current_task(s)
    if task is not None:
        return _task_step(s, task, seed)
    since = max([s.turn_start] + [c.index for c in s.calls if c.use.name == "complete_task"])
    listed = any(c.use.name == "list_tasks" and c.index > since for c in s.calls)
    if not listed and "list_tasks" in s.tools:
        return "Checking the task board for unclaimed work.", [("list_tasks", {})]
    tried = {c.task for c in s.calls if c.use.name == "claim_task"}
    free = [t for t in s.listed_open if t not in tried and t not in s.owner and t not in s.closed]
    if free and "claim_task" in s.tools:
        t = min(free)
        return f"Task #{t} ({s.subject(t)}) is unclaimed; taking it.", [_claim(t)]
    return None


def _current_task(s: Situation) -> int | None:
    open_tasks = s.open_tasks()
    claimed = [c.task for c in s.calls if c.use.name == "claim_task" and c.task in open_tasks]
    if claimed:
        return claimed[-1]  # finish what was started before picking up the next one
    return open_tasks[0] if open_tasks else None


def _task_step(s: Situation, task: int, seed: int) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    done, segment = _progress(s, task)
    subject = s.subject(task)
    if done is None:
        return f"Starting task #{task}: {subject}. Claiming it first.", [_claim(task)]
    wanted = [step for step in SCRIPT if _applies(s, step, task, seed)]
    todo = [step for step in wanted if step not in done]
    step = todo[0] if todo and len(segment) < MAX_CALLS_PER_TASK else "finish"
    return _BUILDERS[step](s, task, segment, seed)


def _progress(s: Situation, task: int) -> tuple[set[str] | None, list[Call]]:
    """Steps already attempted for `task`: the calls after its last claim."""
    starts = [i for i, c in enumerate(s.calls) if c.use.name == "claim_task" and c.task == task]
    if not starts:
        return None, []
    segment = []
    for c in s.calls[starts[-1] + 1 :]:
        if c.use.name == "claim_task" and c.task != task:
            break
        segment.append(c)
    return {"claim"} | {k for c in segment if (k := _kind(c.use))}, segment


def _kind(use: ToolUseBlock) -> str | None:
    if use.name == "bash":
        command = str(use.input.get("command", ""))
        if "wc -l" in command:
            return "measure"
        return "survey" if command.startswith("ls") else None
    if use.name == "write_file":
        return "notes" if str(use.input.get("path", "")).startswith("notes/") else None
    kinds = {v: k for k, v in STEP_TOOLS.items() if v != "bash"}
    return kinds.get(use.name) if use.name != "claim_task" else None


def _applies(s: Situation, step: str, task: int, seed: int) -> bool:
    if STEP_TOOLS[step] not in s.tools:
        return False
    if step == "tell":
        return bool(s.teammates)
    if step == "compact":
        # Now and then, decided by a hash so runs repeat; never twice for the same task in
        # one line of summaries (the focus survives in the summary), or it would loop.
        chosen = _pick(seed, s.me, task, "compact", n=3) == 0
        return chosen and f"task #{task}" not in s.identity_text
    return True


# --- the steps ----------------------------------------------------------------------------


def _claim(task: int) -> tuple[str, dict[str, Any]]:
    return "claim_task", {"task_id": task}


def _step_claim(s: Situation, task: int, segment: list[Call], seed: int):
    return f"Claiming task #{task}.", [_claim(task)]


def _step_survey(s: Situation, task: int, segment: list[Call], seed: int):
    word = keyword(s.subject(task))
    listing = "ls -laR . | head -n 250" if _pick(seed, s.me, task, "ls", n=2) else "ls -la"
    excludes = " ".join(f"--exclude-dir={d.rstrip('/')}" for d in SKIP_DIRS)
    grep = f"grep -rnIi {excludes} -e '{word}' . | head -n 80"
    text = f"Working on task #{task} ({s.subject(task)}): looking around for '{word}'."
    return text, [("bash", {"command": listing}), ("bash", {"command": grep})]


def _step_measure(s: Situation, task: int, segment: list[Call], seed: int):
    prune = " ".join(f"-not -path './{d}*'" for d in SKIP_DIRS)
    command = (
        f"find . -type f {prune} -print0 | sort -z | head -z -n 200 "
        "| xargs -0 -r wc -l | sort -n | tail -n 60"
    )
    return "Measuring the files to see where the bulk is.", [("bash", {"command": command})]


def _step_read(s: Situation, task: int, segment: list[Call], seed: int):
    found = _found_files(s, task, segment)
    path = found[_pick(seed, s.me, task, "read", n=min(len(found), 5))] if found else "team.toml"
    return f"Reading {path}.", [("read_file", {"path": path, "limit": 120})]


def _step_compact(s: Situation, task: int, segment: list[Call], seed: int):
    text = f"My context is filling up; compacting with the focus on task #{task}."
    return text, [("compact", {"focus": f"task #{task}"})]


def _step_notes(s: Situation, task: int, segment: list[Call], seed: int):
    path = notes_path(s.me, task)
    found = _found_files(s, task, segment)
    sizes = [c.output for c in segment if _kind(c.use) == "measure"]
    reads = [c for c in segment if c.use.name == "read_file"]
    lines = [
        f"# Task #{task}: {s.subject(task)}",
        "",
        f"Agent: {s.me} ({s.role}). Keyword: {keyword(s.subject(task))}.",
        "",
        "## Files found",
        *(f"- {p}" for p in found[:12]),
        *(["- (none matched)"] if not found else []),
        "",
        "## Largest files",
        *_tail_lines(sizes[-1] if sizes else "", 12),
    ]
    for c in reads[-1:]:
        where = c.use.input.get("path", "?")
        lines += ["", f"## First lines of {where}"]
        lines += _head_lines(c.output, 12) if c.output else [f"(could not read {where})"]
    lines += ["", "Status: in progress", ""]
    content = "\n".join(lines)
    return f"Writing what I found to {path}.", [("write_file", {"path": path, "content": content})]


def _step_tell(s: Situation, task: int, segment: list[Call], seed: int):
    mate = s.teammates[_pick(seed, s.me, task, "tell", n=len(s.teammates))]
    found = _found_files(s, task, segment)
    where = f"; most relevant file: {found[0]}" if found else ""
    content = (
        f"FYI: I'm finishing task #{task} ({s.subject(task)}). "
        f"Notes are in {notes_path(s.me, task)}{where}. No reply needed."
    )
    msg = {"to": mate, "content": content, "msg_type": "message"}
    return f"Letting {mate} know about task #{task}.", [("send_message", msg)]


def _step_finish(s: Situation, task: int, segment: list[Call], seed: int):
    path = notes_path(s.me, task)
    calls: list[tuple[str, dict[str, Any]]] = []
    wrote = any(_kind(c.use) == "notes" and not c.failed for c in segment)
    if wrote and "edit_file" in s.tools:
        edit = {"path": path, "old_text": "Status: in progress", "new_text": "Status: done"}
        calls.append(("edit_file", edit))
    found = len(_found_files(s, task, segment))
    result = f"Surveyed the workspace ({found} relevant files); notes in {path}."
    calls.append(("complete_task", {"task_id": task, "result": result}))
    return f"Wrapping up task #{task}.", calls


_BUILDERS = {
    "claim": _step_claim,
    "survey": _step_survey,
    "measure": _step_measure,
    "read": _step_read,
    "compact": _step_compact,
    "notes": _step_notes,
    "tell": _step_tell,
    "finish": _step_finish,
}


def _wrap_up(s: Situation) -> str:
    start = _first_call_after(s, s.turn_start)
    finished = sorted(
        {c.task for c in s.calls[start:] if c.use.name == "complete_task" and c.task is not None}
    )
    done = f"Completed {', '.join(f'task #{t}' for t in finished)}. " if finished else ""
    return done + "No open tasks for me right now; waiting for new work."


def _acknowledge(mail: Mail) -> str:
    line = mail.first_line[:100]
    if mail.type == "task":
        where = f"#{mail.task}" if mail.task is not None else "(no id)"
        return f"New task {where} from {mail.sender}: {line}"
    if mail.sender == "user":
        return f'Received your message: "{line}"'
    return f'Noted, {mail.sender} ({mail.type}): "{line}"'


def _requested_actions(s: Situation) -> list[tuple[str, tuple[str, dict[str, Any]]]]:
    """Simple things the user asked for in the newest messages: `run `cmd``."""
    if "bash" not in s.tools:
        return []
    out = []
    for mail in s.new_mail:
        if mail.sender == "user" and mail.type == "message":
            for m in RUN_RE.finditer(mail.body):
                out.append((f"Running `{m[1]}` as asked.", ("bash", {"command": m[1]})))
    return out[:3]


# --- helpers ------------------------------------------------------------------------------


def notes_path(agent: str, task: int) -> str:
    return f"notes/{agent}-task-{task}.md"


def keyword(subject: str) -> str:
    """The word of a task subject most worth grepping for (letters, digits, underscores)."""
    words = [
        w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", subject) if w.lower() not in STOPWORDS
    ]
    return max(words, key=len) if words else "TODO"


def _found_files(s: Situation, task: int, segment: list[Call]) -> list[str]:
    """Workspace files named by the survey and measure outputs, grep hits first."""
    own = notes_path(s.me, task)
    paths: list[str] = []
    for kind, pattern in (("survey", GREP_HIT_RE), ("measure", WC_LINE_RE)):
        for c in segment:
            if _kind(c.use) != kind:
                continue
            for m in pattern.finditer(c.output):
                p = m[m.lastindex or 1]
                if p != "total" and p != own and not p.startswith(SKIP_DIRS) and p not in paths:
                    paths.append(p)
    return paths


def _first_call_after(s: Situation, index: int) -> int:
    return next((k for k, c in enumerate(s.calls) if c.index > index), len(s.calls))


def _tail_lines(text: str, n: int) -> list[str]:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return [f"    {ln[:160]}" for ln in lines[-n:]] or ["(no sizes)"]


def _head_lines(text: str, n: int) -> list[str]:
    return [f"    {ln.rstrip()[:160]}" for ln in text.splitlines()[:n]]


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _join(parts: list[str]) -> str:
    return "\n".join(p for p in parts if p.strip()) or "Okay."


def _pick(seed: int, *key: object, n: int) -> int:
    """A stable choice in range(n) from a key: the same request, the same choice."""
    if n <= 1:
        return 0
    digest = hashlib.sha256(repr((seed, *key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def _as_int(v: Any) -> int | None:
    try:
        return int(str(v).lstrip("#"))
    except (TypeError, ValueError):
        return None
