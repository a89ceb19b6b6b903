"""What the simulated agent does next, worked out from the request alone.

The policy is stateless: everything it knows comes from the request (its facts, tools
and messages, see `sim_reading`). So the same request always gets the same reply, and
after a compaction the agent carries on from its facts and whatever the summary says.

For each open task it owns it runs a short script, one step per reply:
claim, survey (bash), measure (bash), read a file it found, sometimes `compact`, write a
notes file, tell a teammate, then mark the notes done and complete the task. A step that
was attempted counts as done whatever its result, so a task always finishes within a
bounded number of calls even when every tool fails. A completion a crash cut off was
never attempted: the resumed agent makes it again.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from team.core.conversation import ToolUseBlock
from team.llm.base import ModelRequest
from team.llm.sim_lead import lead_step, plan_gate
from team.llm.sim_reading import (
    BOARD_CHECK,
    Call,
    Mail,
    Situation,
    progress_line,
    read_situation,
)
from team.workspace.places import TEAM_DIR, TRANSCRIPTS_DIR

RUN_RE = re.compile(r"\brun\s+`([^`\n]{1,200})`", re.I)
USE_RE = re.compile(r"\buse\s+`([a-zA-Z0-9_-]{1,128})(?:\s+(\{[^`]*\}))?\s*`", re.I)
"""A request to call a tool by name: use `NAME {"json": "arguments"}`."""
GREP_HIT_RE = re.compile(r"(?:\./)?([\w.][\w./-]*):\d+:")
WC_LINE_RE = re.compile(r"\s*(\d+)\s+(?:\./)?(\S.*)")
MAX_LINE = 4096  # longer output lines name no file worth reading (and are never re-scanned)
SKIP_DIRS = (f"{TEAM_DIR}/", f"{TRANSCRIPTS_DIR}/", ".git/", ".venv/")
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


@dataclass
class Reply:
    """The next reply: text for the user to read, and tool calls as (name, input)."""

    text: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


# --- deciding -----------------------------------------------------------------------------


def decide(request: ModelRequest, *, seed: int = 0) -> Reply:
    """The agent's next reply to `request`: some text and zero or more tool calls."""
    s = read_situation(request)
    notes = [_acknowledge(m) for m in s.new_mail]
    extra = _requested_actions(s)
    uses = _requested_tools(s)  # after the step's own calls: a claim comes first
    if request.tool_choice == "none" or not s.tools:
        return Reply(_join([*notes, "No tools are available for this reply, so I stop here."]))
    step = _next_step(s, seed)
    text, calls = step if step is not None else (_wrap_up(s), [])
    said = [*notes, *(t for t, _ in extra), text, *(t for t, _ in uses)]
    asked = [c for _, c in uses if c is not None]
    return Reply(_join(said), [c for _, c in extra] + calls + asked)


def _next_step(s: Situation, seed: int) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
    if (lead := lead_step(s)) is not None:
        return lead  # a goal to split, plans to review: before its own tasks
    task = _current_task(s)
    if task is not None:
        return _task_step(s, task, seed)
    since = max([s.turn_start] + [c.index for c in s.calls if c.use.name == "complete_task"])
    listed = any(c.use.name == "list_tasks" and c.index > since for c in s.calls)
    # Compacted right after checking the board: checking again would only repeat that, and
    # under a tight threshold it would never end. New work will arrive as a message.
    listed = listed or (not s.calls and s.turn_start == 0 and BOARD_CHECK in s.carried)
    if not listed and "list_tasks" in s.tools:
        return BOARD_CHECK, [("list_tasks", {})]
    tried = {c.task for c in s.calls if c.use.name == "claim_task"}
    free = [t for t in s.listed_open if t not in tried and t not in s.owner and t not in s.closed]
    if free and "claim_task" in s.tools:
        t = min(free)
        text = f"{_marker(t, 'claim')}Task #{t} ({s.subject(t)}) is unclaimed; taking it."
        return text, [_claim(t)]
    return None


def _current_task(s: Situation) -> int | None:
    open_tasks = s.open_tasks()
    claimed = [c.task for c in s.calls if c.use.name == "claim_task" and c.task in open_tasks]
    if claimed:
        return claimed[-1]  # finish what was started before picking up the next one
    resumed = [t for t in s.resumed if t in open_tasks]
    if resumed:
        return resumed[-1]  # what the agent was doing when its context was compacted
    return open_tasks[0] if open_tasks else None


def _task_step(s: Situation, task: int, seed: int) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    done, segment = _progress(s, task)
    if not done:
        text = f"Starting task #{task}: {s.subject(task)}. Claiming it first."
        return _marker(task, "claim") + text, [_claim(task)]
    if (gate := plan_gate(s, task)) is not None:
        return gate  # under plan approval: nothing changes before the plan is approved
    wanted = [step for step in SCRIPT if _applies(s, step, task, seed)]
    todo = [step for step in wanted if step not in done]
    step = todo[0] if todo and len(segment) < MAX_CALLS_PER_TASK else "finish"
    text, calls = _BUILDERS[step](s, task, segment, seed)
    return _marker(task, step) + text, calls


def _marker(task: int, step: str) -> str:
    """The progress line the summariser keeps (read back by `sim_reading.progress`)."""
    return progress_line(task, SCRIPT.index(step) + 1, len(SCRIPT), step)


def _progress(s: Situation, task: int) -> tuple[set[str], list[Call]]:
    """Steps already attempted for `task`, and the calls made for it in this context.

    In this context: the calls after its last claim. Before a compaction: the steps up to
    the last one the agent stated in its progress lines, which the summary carries over.
    """
    done = set(SCRIPT[: s.resumed.get(task, 0)])
    starts = [i for i, c in enumerate(s.calls) if c.use.name == "claim_task" and c.task == task]
    if starts:
        done.add("claim")
        first = starts[-1] + 1
    elif done:
        first = 0  # resumed after a compaction: the calls since belong to this task
    else:
        return done, []
    segment = []
    for c in s.calls[first:]:
        if c.use.name == "claim_task" and c.task != task:
            break
        segment.append(c)
    return done | {k for c in segment if (k := _kind(c.use))}, segment


def _kind(use: ToolUseBlock) -> str | None:
    if use.name == "bash":
        command = str(use.input.get("command", ""))
        if "wc -l" in command:
            return "measure"
        # the grep is half of the survey step: its hits are the files `_found_files` puts first
        return "survey" if command.startswith(("ls", "grep")) else None
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
        return chosen and f"task #{task}" not in s.carried
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
    text = f"Working on {s.subject(task)}. I will look around for '{word}' first."
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
    asked = {name for m in s.mail for name, _ in tool_requests(m.body)}
    for c in segment:
        if c.use.name in asked:  # what the tool it was asked to use said
            said = " ".join((c.result.content if c.result else "(no result)").split())
            result += f" {c.use.name}: {said[:300]}"
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


def _requested_tools(s: Situation) -> list[tuple[str, tuple[str, dict[str, Any]] | None]]:
    """Tools the newest messages ask for by name, with JSON arguments (use `NAME {...}`),
    and a line for each it cannot call."""
    out: list[tuple[str, tuple[str, dict[str, Any]] | None]] = []
    for mail in s.new_mail:
        for name, args in tool_requests(mail.body):
            if name not in s.tools:
                out.append((f"I have no tool named {name}.", None))
            elif args is None:
                out.append((f"The arguments for {name} are not a JSON object.", None))
            else:
                out.append((f"Using {name} as asked.", (name, args)))
    return out[:3]


def tool_requests(text: str) -> list[tuple[str, dict[str, Any] | None]]:
    """(tool, arguments) of every use `NAME {json}` in `text`; None: not a JSON object."""
    out: list[tuple[str, dict[str, Any] | None]] = []
    for m in USE_RE.finditer(text):
        try:
            args = json.loads(m[2]) if m[2] else {}
        except ValueError:
            args = None
        out.append((m[1], args if isinstance(args, dict) else None))
    return out


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
            lines = (ln.strip() for ln in c.output.splitlines() if len(ln) <= MAX_LINE)
            for m in filter(None, map(pattern.match, lines)):
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


def _join(parts: list[str]) -> str:
    return "\n".join(p for p in parts if p.strip()) or "Okay."


def _pick(seed: int, *key: object, n: int) -> int:
    """A stable choice in range(n) from a key: the same request, the same choice."""
    if n <= 1:
        return 0
    digest = hashlib.sha256(repr((seed, *key)).encode()).digest()
    return int.from_bytes(digest[:8], "big") % n
