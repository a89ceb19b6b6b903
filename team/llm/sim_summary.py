"""The simulator's answer to a summary request: an extractive, structured summary.

Nothing is invented: every line under a heading is a line of the segment (trimmed), picked
because it mentions what the heading is about. What later work depends on is always kept
whatever the budget: every task id, every teammate name, the focus. Everything else fills
the budget round-robin across the sections, so no section starves the others.
"""

from __future__ import annotations

import json
import re

from team.conversation import Message, TextBlock, ToolResultBlock, ToolUseBlock
from team.llm.sim_reading import BOARD_CHECK, MAIL_RE, PROGRESS_RE, SELF_RE, TASK_ITEM_RE, teammates

MAX_CHARS = 7600  # ~1,900 tokens: the ceiling whatever the input
MIN_CHARS = 900
LINE_CHARS = 160
TASK_ID_RES = (
    re.compile(r"(?<![\w&])#(\d{1,6})\b"),
    re.compile(r'\btask="(\d+)"'),
    re.compile(r'"task_id"\s*:\s*"?(\d+)'),
    re.compile(r"\btask[ _-]?(?:id)?[ =:]+#?(\d+)\b", re.I),
)
LISTED_TASK_RE = re.compile(r'\{[^{}]*?"id"\s*:\s*(\d+)[^{}]*?"subject"\s*:\s*"([^"]*)"')
FOCUS_RE = re.compile(r"(?im)\bfocus(?:\s+on)?\s*[:=]\s*(.+)$|\bfocus\s+on\s+(.+)$")
FILE_RE = re.compile(
    r"(?<![\w/.-])(?:\.{1,2}/)?(?:[\w.-]+/)*[\w-]+\."
    r"(?:py|md|toml|txt|json|jsonl|yaml|yml|cfg|ini|sh|js|ts|rs|go|c|h|html|css|csv|log)\b"
)
ERROR_RE = re.compile(
    r"(?i)(error|exception|traceback|\bfailed|\bfailure|\bfatal|not found|no such file"
    r"|denied|\binvalid)"
)
FIX_RE = re.compile(r"(?i)\b(fix(?:ed|es|ing)?|workaround|resolved)\b")
DECISION_RE = re.compile(
    r"(?i)\b(decided?|decision|plan(?:ned)?|going to|instead|chose|choose|will|should|let's)\b"
)
ASK_RE = re.compile(r"(?i)\b(asked|please|need|want)")
SENDER_RE = re.compile(r'\bfrom="([a-z][a-z0-9_-]{0,31})"|"to"\s*:\s*"([a-z][a-z0-9_-]{0,31})"')
DONE_RE = re.compile(r'"?complete_task"?\W+(?:\{\s*)?"task_id"\s*:\s*"?(\d+)')


def summarise(system: str, messages: list[Message], *, max_tokens: int = 2000) -> str:
    """An extractive structured summary of `messages`, guided by any focus in `system`.

    Args:
        system: the summary request's system prompt; a `Focus: <words>` line (or
            "focus on ...") puts matching lines first.
        messages: the segment to summarise, as the compactor sent it.
        max_tokens: the reply's token limit; the summary stays under it.
    """
    text = "\n".join(_texts(messages))
    lines = _lines(text)
    focus = _focus(system)
    words = _focus_words(focus)
    budget = min(MAX_CHARS, max_tokens * 4, max(MIN_CHARS, len(text) // 12))

    def pick(rx: re.Pattern[str] | None, lines_: list[str] = lines) -> list[str]:
        hits = [ln for ln in lines_ if rx is None or rx.search(ln)]
        # Stable sort: focus lines first, then prose before raw tool output, else in order.
        return sorted(hits, key=lambda ln: (not _matches(ln, words), not _prose(ln)))

    tasks = _tasks(text)
    names = _names(system + "\n" + text)
    mails = [m for m in MAIL_RE.finditer(text)]
    paths = _paths(text, words)

    sections: list[tuple[str, list[str], list[str]]] = []  # heading, always, optional
    focus_lines = [ln for ln in lines if ln.lower().startswith("focus:")]
    head = [f"Focus: {focus}"] if focus else []
    sections.append(("Focus", head + focus_lines[:2], [ln for ln in lines if _matches(ln, words)]))
    asks = [
        f"{m['sender']} -> {m['type']}{_task_tag(m['task'])}: {_first(m['body'])}"
        for m in mails
        if m["type"] in ("task", "message") and m["sender"] == "user"
    ]
    who = [ln for ln in lines if SELF_RE.search(ln)][:1]
    asked = pick(ASK_RE)
    sections.append(("Request and intent", who, asks + asked))
    sections.append(("Decisions", [], pick(DECISION_RE)))
    shown = ", ".join(paths[:12]) + (f" (+{len(paths) - 12} more)" if len(paths) > 12 else "")
    files_always = [f"Paths: {shown}"] if paths else ["Paths: none mentioned"]
    sections.append(("Files", files_always, pick(FILE_RE)))
    fixes = [ln for ln in pick(FIX_RE) if not ERROR_RE.search(ln)]
    sections.append(("Errors and fixes", [], pick(ERROR_RE) + fixes))
    sections.append(("Messages from teammates", *_mail_lines(mails, names)))
    sections.append(("Pending tasks", _task_lines(tasks, text), []))
    tail = [ln for ln in lines if _prose(ln)][-8:]
    progress = {int(m[1]): ln for ln in lines for m in PROGRESS_RE.finditer(ln)}
    done = _done(text)
    # Where each unfinished task stands, kept whatever the budget: the agent resumes there.
    now = [ln for t, ln in progress.items() if t not in done][-6:] + tail[-1:]
    now += [ln for ln in lines if BOARD_CHECK in ln][-1:]
    sections.append(("Current work", now, list(reversed(tail[:-1]))))
    open_ids = [t for t in tasks if t not in done]
    open_ids.sort(key=lambda t: not _matches(f"#{t}", words))
    nxt = (
        f"Continue task #{open_ids[0]} ({tasks[open_ids[0]] or 'see above'})"
        if open_ids
        else "Wait for new messages or tasks."
    )
    sections.append(("Next step", [nxt], []))

    header = f"[sim] Extractive summary of {len(messages)} messages ({len(text):,} chars)."
    return _render(header, sections, budget)


def _render(header: str, sections: list[tuple[str, list[str], list[str]]], budget: int) -> str:
    """Always-lines first; then optional lines round-robin until the budget is spent."""
    seen: set[str] = set()
    chosen: list[list[str]] = []
    for heading, always, _ in sections:
        kept = [ln for ln in dict.fromkeys(always) if ln not in seen]
        if heading != "Focus":  # the focus section may repeat lines: it exists to put them first
            seen.update(kept)
        chosen.append(kept)
    used = len(header) + sum(len(h) + 5 for h, _, _ in sections)
    used += sum(len(ln) + 3 for lines in chosen for ln in lines)
    queues = [list(optional) for _, _, optional in sections]
    while used < budget and any(queues):
        for i, q in enumerate(queues):
            focus = sections[i][0] == "Focus"
            while q and q[0] in seen and not focus:
                q.pop(0)
            if not q or len(chosen[i]) >= 12:
                q.clear()
                continue
            ln = q.pop(0)
            if used + len(ln) + 3 > budget:
                continue
            if not focus:
                seen.add(ln)
            chosen[i].append(ln)
            used += len(ln) + 3
    out = [header]
    for (heading, _, _), lines in zip(sections, chosen, strict=True):
        if heading == "Focus" and not lines:
            continue
        out += (
            ["", f"## {heading}", *(f"- {ln}" for ln in lines)]
            if lines
            else ["", f"## {heading}", "- (nothing in this segment)"]
        )
    return "\n".join(out)


def _texts(messages: list[Message]) -> list[str]:
    """Every block as text: the compactor may send text, or a raw segment with tool blocks."""
    out = []
    for m in messages:
        for b in m.content:
            if isinstance(b, TextBlock):
                out.append(b.text)
            elif isinstance(b, ToolUseBlock):
                out.append(f"{b.name} {json.dumps(b.input, sort_keys=True)}")
            elif isinstance(b, ToolResultBlock):
                out.append(b.content)
    return out


SKIP_PREFIXES = ("<message", "</", "## ", "[sim] Extractive summary", "(nothing in this segment)")


def _lines(text: str) -> list[str]:
    seen: set[str] = set()
    out = []
    for raw in text.splitlines():
        ln = " ".join(raw.split())
        if ln.startswith(("- ", "[sim] Extractive summary")):  # an earlier summary's bullet
            ln = ln.removeprefix("- ")
        if len(ln) < 4 or not re.search(r"[A-Za-z]", ln) or ln.startswith(SKIP_PREFIXES):
            continue
        ln = ln if len(ln) <= LINE_CHARS else ln[: LINE_CHARS - 3] + "..."
        if ln not in seen:
            seen.add(ln)
            out.append(ln)
    return out


def _prose(line: str) -> bool:
    """Sentences rather than raw tool output: at least four words."""
    return len(re.findall(r"\b[A-Za-z]{2,}\b", line)) >= 4


def _paths(text: str, words: list[re.Pattern[str]]) -> list[str]:
    """File paths, focus matches first, then the most mentioned."""
    counts: dict[str, int] = {}
    for m in FILE_RE.finditer(text):
        p = m[0].removeprefix("./")
        counts[p] = counts.get(p, 0) + 1
    return sorted(counts, key=lambda p: (not _matches(p, words), -counts[p]))


def _focus(system: str) -> str:
    m = FOCUS_RE.search(system)
    if not m:
        return ""
    return (m[1] or m[2] or "").strip().strip("\"'.").strip()


def _focus_words(focus: str) -> list[re.Pattern[str]]:
    words = re.findall(r"#?[\w./-]+", focus.lower())
    specific = [w for w in words if re.search(r"\d|[#./_]", w) or len(w) >= 5]
    return [re.compile(rf"(?<![\w#]){re.escape(w)}(?![\w])", re.I) for w in specific or words]


def _matches(line: str, words: list[re.Pattern[str]]) -> bool:
    return any(w.search(line) for w in words)


def _tasks(text: str) -> dict[int, str]:
    """Every task id in the text, with a subject where one can be found."""
    tasks: dict[int, str] = {}
    for rx in TASK_ID_RES:
        for m in rx.finditer(text):
            tasks.setdefault(int(m[1]), "")
    for m in LISTED_TASK_RE.finditer(text):
        tasks[int(m[1])] = tasks.get(int(m[1])) or m[2][:80]
    for m in MAIL_RE.finditer(text):
        if m["task"]:
            tasks[int(m["task"])] = tasks.get(int(m["task"])) or _first(m["body"])[:80]
    for m in TASK_ITEM_RE.finditer(text):
        subject = m[2].strip()
        if int(m[1]) in tasks and not tasks[int(m[1])] and 0 < len(subject) <= 80:
            tasks[int(m[1])] = subject
    return dict(sorted(tasks.items()))


def _done(text: str) -> set[int]:
    return {int(m[1]) for m in DONE_RE.finditer(text)}


def _task_lines(tasks: dict[int, str], text: str) -> list[str]:
    if not tasks:
        return ["No task ids in this segment."]
    done = _done(text)
    if len(tasks) > 30:  # keep every id, drop the subjects
        return ["Ids: " + ", ".join(f"#{t}{' (completed)' if t in done else ''}" for t in tasks)]
    return [
        f"#{t}: {s or '(no subject seen)'}{' (completed)' if t in done else ''}"
        for t, s in tasks.items()
    ]


def _names(text: str) -> list[str]:
    names: list[str] = []
    me = m["name"] if (m := SELF_RE.search(text)) else ""
    for src in (t for ln in text.splitlines() if "Teammates:" in ln for t in teammates(ln, me)):
        names.append(src)
    for m in SENDER_RE.finditer(text):
        names.append(m[1] or m[2])
    return [n for n in dict.fromkeys(names) if n and n != me]


def _mail_lines(mails: list[re.Match[str]], names: list[str]) -> tuple[list[str], list[str]]:
    """One line per teammate always (so every name survives), more lines if budget allows."""
    firsts: dict[str, str] = {}
    more: list[str] = []
    for m in mails:
        line = f"{m['sender']} ({m['type']}{_task_tag(m['task'])}): {_first(m['body'])[:120]}"
        if m["sender"] not in firsts:
            firsts[m["sender"]] = line
        else:
            more.append(line)
    always = list(firsts.values())
    always += [f"{n}: no messages from them in this segment" for n in names if n not in firsts]
    return always, more


def _task_tag(task: str | None) -> str:
    return f" #{task}" if task else ""


def _first(text: str) -> str:
    return next((" ".join(ln.split()) for ln in text.splitlines() if ln.strip()), "")
