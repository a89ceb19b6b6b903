"""The simulator's answer to a summary request: an extractive, structured summary.

Nothing is invented: every line under a heading is a line of the segment (trimmed), picked
because it mentions what the heading is about. What later work depends on is always kept
whatever the budget: every task id, every teammate name, the focus. Everything else fills
the budget round-robin across the sections, so no section starves the others.
"""

from __future__ import annotations

import re
from collections import Counter

from team.core.conversation import (
    InboxMail,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    render_block,
)
from team.core.facts import iter_paths, task_ids
from team.llm.base import AgentFacts
from team.llm.sim_reading import BOARD_CHECK, SUMMARY_HEAD, progress

MAX_CHARS = 7600  # ~1,900 tokens: the ceiling whatever the input
MIN_CHARS = 900
LINE_CHARS = 160
ERROR_RE = re.compile(
    r"(?i)(error|exception|traceback|\bfailed|\bfailure|\bfatal|not found|no such file"
    r"|denied|\binvalid)"
)
FIX_RE = re.compile(r"(?i)\b(fix(?:ed|es|ing)?|workaround|resolved)\b")
DECISION_RE = re.compile(
    r"(?i)\b(decided?|decision|plan(?:ned)?|going to|instead|chose|choose|will|should|let's)\b"
)
ASK_RE = re.compile(r"(?i)\b(asked|please|need|want)")


def summarise(
    messages: list[Message],
    *,
    focus: str = "",
    max_tokens: int = 2000,
    facts: AgentFacts | None = None,
    segment: tuple[Message, ...] = (),
) -> str:
    """An extractive structured summary of `messages`, guided by the agent's focus.

    Every scan is linear in the text (a 10 MB single-word message must not stall it).

    Args:
        focus: what the agent asked to keep (`compact{focus}`, the request's `focus`);
            lines that match it come first.
        messages: the segment to summarise, as the compactor sent it.
        max_tokens: the reply's token limit; the summary stays under it.
        facts: who the agent is (its teammates are always named), when known.
        segment: the stored segment, whose blocks' data (mail, the board's task notes)
            say who wrote and what happened to which task; default: `messages`.
    """
    text = "\n".join(render_block(b) for m in messages for b in m.content)
    lines = _lines(text)
    words = _focus_words(focus)
    budget = min(MAX_CHARS, max_tokens * 4, max(MIN_CHARS, len(text) // 12))

    def pick(rx: re.Pattern[str] | None, lines_: list[str] = lines) -> list[str]:
        hits = [ln for ln in lines_ if rx is None or rx.search(ln)]
        # Stable sort: focus lines first, then prose before raw tool output, else in order.
        return sorted(hits, key=lambda ln: (not _matches(ln, words), not _prose(ln)))

    mails, done, claimed = _segment_data(segment or tuple(messages))
    tasks = _tasks(text, mails, facts, claimed)
    names = _names(mails, facts)
    paths = _paths(text, words)
    file_lines = set(ln for ln in lines if next(iter_paths(ln), None) is not None)

    sections: list[tuple[str, list[str], list[str]]] = []  # heading, always, optional
    focus_lines = [ln for ln in lines if ln.lower().startswith("focus:")]
    head = [f"Focus: {focus}"] if focus else []
    sections.append(("Focus", head + focus_lines[:2], [ln for ln in lines if _matches(ln, words)]))
    asks = [
        f"{m.sender} -> {m.type}{_task_tag(m.task)}: {_first(m.body)}"
        for m in mails
        if m.type in ("task", "message") and m.sender == "user"
    ]
    who = [f"You are {facts.name} ({facts.role}), team {facts.team}."] if facts else []
    asked = pick(ASK_RE)
    sections.append(("Request and intent", who, asks + asked))
    sections.append(("Decisions", [], pick(DECISION_RE)))
    shown = ", ".join(paths[:12]) + (f" (+{len(paths) - 12} more)" if len(paths) > 12 else "")
    files_always = [f"Paths: {shown}"] if paths else ["Paths: none mentioned"]
    sections.append(("Files", files_always, [ln for ln in pick(None) if ln in file_lines]))
    fixes = [ln for ln in pick(FIX_RE) if not ERROR_RE.search(ln)]
    sections.append(("Errors and fixes", [], pick(ERROR_RE) + fixes))
    sections.append(("Messages from teammates", *_mail_lines(mails, names)))
    stated = {t: ln for ln in lines for t, _, _ in progress(ln)}
    mine = _open_ids(facts, claimed, mails, stated, done)
    sections.append(("Pending tasks", _task_lines(tasks, done, mine), []))
    tail = [ln for ln in lines if _prose(ln)][-8:]
    # Where each unfinished task stands, kept whatever the budget: the agent resumes there.
    now = [ln for t, ln in stated.items() if t not in done][-6:] + tail[-1:]
    now += [ln for ln in lines if BOARD_CHECK in ln][-1:]
    sections.append(("Current work", now, list(reversed(tail[:-1]))))
    open_ids = [t for t in tasks if t in mine]
    open_ids.sort(key=lambda t: not _matches(f"#{t}", words))
    nxt = (
        f"Continue task #{open_ids[0]} ({tasks[open_ids[0]] or 'see above'})"
        if open_ids
        else "Wait for new messages or tasks."
    )
    sections.append(("Next step", [nxt], []))

    header = f"{SUMMARY_HEAD} of {len(messages)} messages ({len(text):,} chars)."
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


SKIP_PREFIXES = ("<message", "</", "## ", SUMMARY_HEAD, "(nothing in this segment)")


def _lines(text: str) -> list[str]:
    seen: set[str] = set()
    out = []
    for raw in dict.fromkeys(text.splitlines()):  # a repeated line is read once
        ln = " ".join(raw.split())
        if ln.startswith(("- ", SUMMARY_HEAD)):  # an earlier summary's bullet
            ln = ln.removeprefix("- ")
        if len(ln) < 4 or not _LETTER.search(ln) or ln.startswith(SKIP_PREFIXES):
            continue
        if ln.startswith("[tool result ") and ln.endswith("]"):  # render_block's heading
            continue
        ln = ln if len(ln) <= LINE_CHARS else ln[: LINE_CHARS - 3] + "..."
        if ln not in seen:
            seen.add(ln)
            out.append(ln)
    return out


_LETTER = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"\b[A-Za-z]{2,}\b")


def _prose(line: str) -> bool:
    """Sentences rather than raw tool output: at least four words."""
    return len(_WORD.findall(line)) >= 4


def _paths(text: str, words: list[str]) -> list[str]:
    """File paths (`team.core.facts`), focus matches first, then the most mentioned."""
    counts = Counter(iter_paths(text))
    return sorted(counts, key=lambda p: (not _matches(p, words), -counts[p]))


def _focus_words(focus: str) -> list[str]:
    words = re.findall(r"#?[\w./-]+", focus.lower())
    specific = [w for w in words if re.search(r"\d|[#./_]", w) or len(w) >= 5]
    return specific or words


def _matches(line: str, words: list[str]) -> bool:
    """Whether a focus word occurs in the line as a whole word, case-insensitively.

    A substring search with the boundaries checked by hand: a regex per word would be
    compiled anew for every summary's words (and fill `re`'s cache for the run).
    """
    low = line.lower()
    for w in words:
        at = low.find(w)
        while at >= 0:
            end = at + len(w)
            before = low[at - 1] if at else " "
            after = low[end] if end < len(low) else " "
            if not (_word_char(before) or before == "#") and not _word_char(after):
                return True
            at = low.find(w, at + 1)
    return False


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _tasks(
    text: str, mails: list[InboxMail], facts: AgentFacts | None, claimed: dict[int, str]
) -> dict[int, str]:
    """Every task id in the text (`team.core.facts`), with a subject where one is known."""
    tasks: dict[int, str] = dict.fromkeys(task_ids(text), "")
    for t, subject in [*(facts.tasks if facts else ()), *claimed.items()]:
        tasks[t] = tasks.get(t) or subject[:80]
    for m in mails:
        if m.task is not None:
            tasks[m.task] = tasks.get(m.task) or _first(m.body)[:80]
    return dict(sorted(tasks.items()))


def _segment_data(
    messages: tuple[Message, ...],
) -> tuple[list[InboxMail], set[int], dict[int, str]]:
    """The mail in the segment, the tasks the board said were completed, and the claimed
    ones with their subjects: from the blocks' data, never from their text."""
    mails: list[InboxMail] = []
    done: set[int] = set()
    claimed: dict[int, str] = {}
    for m in messages:
        for b in m.content:
            if isinstance(b, TextBlock) and b.mail is not None:
                mails.append(b.mail)
            elif isinstance(b, ToolResultBlock):
                mails += b.mail
            if isinstance(b, ToolUseBlock):
                continue
            for n in b.tasks:
                if n.event == "completed":
                    done.add(n.id)
                elif n.event == "claimed":
                    claimed.setdefault(n.id, n.subject)
    return mails, done, claimed


MAX_TASK_LINES = 30
"""Tasks a summary names with subjects; past it, ids only (finished: the newest this many)."""
MAX_MENTIONED = 10
"""Ids named in the segment that are neither the agent's open work nor seen finished
(a teammate's task, an old one in a listing): the newest this many, the rest counted."""


def _open_ids(
    facts: AgentFacts | None,
    claimed: dict[int, str],
    mails: list[InboxMail],
    stated: dict[int, str],
    done: set[int],
) -> set[int]:
    """The agent's unfinished work: its open tasks on the board (the facts), and what the
    segment shows it claiming, being given or working on, less what it saw finish.

    Not every id the text names: an id listed once as open, and never seen finishing in
    a later segment, would otherwise be carried from summary to summary for ever.
    """
    ids = {t for t, _ in facts.tasks} if facts else set()
    ids |= claimed.keys() | stated.keys() | {m.task for m in mails if m.task is not None}
    return ids - done


def _task_lines(tasks: dict[int, str], done: set[int], mine: set[int]) -> list[str]:
    if not tasks:
        return ["No task ids in this segment."]
    finished = [t for t in tasks if t in done]
    kept = set(finished[-MAX_TASK_LINES:])
    others = [t for t in tasks if t not in done and t not in mine]
    named = set(others[-MAX_MENTIONED:])
    older = len(finished) - len(kept)
    shown = [t for t in tasks if t in mine or t in kept or t in named]
    if len(shown) > MAX_TASK_LINES:  # no subjects
        ids = [f"#{t}{' (completed)' if t in done else ''}" for t in shown]
        lines = ["Ids: " + ", ".join(ids)]
    else:
        lines = [
            f"#{t}: {tasks[t] or '(no subject seen)'}{' (completed)' if t in done else ''}"
            for t in shown
        ]
    # summaries chain: naming every id ever seen made each one longer than the last
    if older:
        lines.append(f"And {older} older completed tasks.")
    if len(others) > len(named):
        lines.append(f"And {len(others) - len(named)} older tasks mentioned.")
    return lines


def _names(mails: list[InboxMail], facts: AgentFacts | None) -> list[str]:
    """The teammates (from the facts), then everyone who sent mail, without the agent."""
    me = facts.name if facts else ""
    names = [n for n, _ in facts.teammates] if facts else []
    names += [m.sender for m in mails]
    return [n for n in dict.fromkeys(names) if n and n != me]


def _mail_lines(mails: list[InboxMail], names: list[str]) -> tuple[list[str], list[str]]:
    """One line per teammate always (so every name survives), more lines if budget allows."""
    firsts: dict[str, str] = {}
    more: list[str] = []
    for m in mails:
        line = f"{m.sender} ({m.type}{_task_tag(m.task)}): {_first(m.body)[:120]}"
        if m.sender not in firsts:
            firsts[m.sender] = line
        else:
            more.append(line)
    always = list(firsts.values())
    always += [f"{n}: no messages from them in this segment" for n in names if n not in firsts]
    return always, more


def _task_tag(task: int | None) -> str:
    return f" #{task}" if task is not None else ""


def _first(text: str) -> str:
    return next((" ".join(ln.split()) for ln in text.splitlines() if ln.strip()), "")
