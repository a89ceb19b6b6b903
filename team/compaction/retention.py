"""Retention: how many of a segment's concrete facts survive its summary.

A summary can read well and still drop the one thing the agent needs next: the task id it
was working on, the teammate who asked, the file it was editing. Those three kinds of fact
are cheap to find in text and cheap to check for afterwards, so every auto or manual
compaction records the share of them that is still present in the new context
(`CompactionEvent.retention`). It is a proxy, not a judgment of quality: a fact that is
present is not necessarily understood, but a fact that is absent is certainly lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

KINDS = ("task_ids", "names", "paths")

# "#12", "task 12", "Task #12", "task: 12", "task id 12", "tasks 12", and the JSON/kwarg
# spellings '"task_id": 12', "task_id=12", '"task_id": "12"'. `&` is excluded before "#"
# so HTML entities such as "&#39;" are not read as tasks.
_TASK_PATTERNS = (
    re.compile(r"(?<![\w&#])#(\d+)\b"),
    re.compile(r"\btasks?[ \t]*(?:id[ \t]*)?[#:]?[ \t]*(\d+)\b", re.IGNORECASE),
    re.compile(r"""\btask_id["']?[ \t]*[:=][ \t]*["']?(\d+)\b""", re.IGNORECASE),
)

# Candidate path tokens: runs of the characters paths are made of. Quotes, brackets,
# colons (":12" line numbers, "https:"), commas and backslashes all end a token.
_TOKEN = re.compile(r"[\w.~/@+-]+")

# JSON-escaped text ("...\nsrc/a.py") would otherwise glue the escape letter to the path.
_ESCAPE = re.compile(r"\\[ntr\"'\\/]")

# Without a slash, a dotted word is only a file if its extension is a file extension:
# "os.path", "e.g" and "self.name" are not files, "team.toml" and "main.py" are.
_EXTENSIONS = frozenset(
    {
        "py",
        "pyi",
        "pyx",
        "ipynb",
        "md",
        "rst",
        "txt",
        "toml",
        "json",
        "jsonl",
        "yaml",
        "yml",
        "cfg",
        "ini",
        "conf",
        "lock",
        "log",
        "csv",
        "tsv",
        "db",
        "sqlite",
        "sql",
        "html",
        "htm",
        "css",
        "scss",
        "js",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "jsx",
        "vue",
        "svelte",
        "c",
        "h",
        "cc",
        "cpp",
        "cxx",
        "hpp",
        "hh",
        "rs",
        "go",
        "java",
        "kt",
        "kts",
        "scala",
        "rb",
        "php",
        "pl",
        "swift",
        "cs",
        "jl",
        "lua",
        "sh",
        "bash",
        "zsh",
        "fish",
        "ps1",
        "bat",
        "xml",
        "svg",
        "png",
        "jpg",
        "jpeg",
        "gif",
        "webp",
        "pdf",
        "zip",
        "gz",
        "tgz",
        "tar",
        "whl",
        "proto",
        "graphql",
        "dockerfile",
        "mk",
        "cmake",
        "gradle",
        "patch",
        "diff",
        "bak",
        "pem",
        "crt",
    }
)
_FILE_NAME = re.compile(r"^[\w.+@-]*\w[\w+@-]*\.([A-Za-z][A-Za-z0-9]{0,9})$")


@dataclass(frozen=True)
class Retention:
    """Share of each kind of fact present before a compaction that is still present after.

    A field is None when the text before held nothing of that kind, so "nothing to keep"
    is never confused with "kept everything" or "kept nothing".
    """

    task_ids: float | None
    names: float | None
    paths: float | None
    overall: float | None


def task_ids(text: str) -> set[str]:
    """Task ids mentioned in `text`, normalised to their decimal form ("007" -> "7")."""
    found: set[str] = set()
    for pattern in _TASK_PATTERNS:
        found.update(str(int(m.group(1))) for m in pattern.finditer(text))
    return found


def names(text: str, teammates: Iterable[str]) -> set[str]:
    """The teammates named in `text`, as whole words and ignoring case ("Alice" counts)."""
    wanted = {n.lower(): n for n in teammates if n}
    if not wanted:
        return set()
    # One pass over the text for all names (a search per name made 100-agent teams pay
    # names x text). Agent names may contain "-" and "_", so the word boundary is spelled
    # out: "bob" must not match inside "bobby" or "bob_2".
    words = re.findall(r"(?<![\w-])[\w-]+(?![\w-])", text.lower())
    return {wanted[w] for w in set(words) if w in wanted}


def _as_path(token: str) -> str | None:
    token = token.rstrip(".-")
    if token.startswith("./"):
        token = token[2:]
    if token.startswith("//"):  # the rest of "https://host/x": a URL, not a file
        return None
    if "/" in token:
        token = token.rstrip("/")
        # "1/2" and "2024/01/02" are numbers and dates; a path names something.
        if not any(c.isalpha() for c in token):
            return None
        return token
    m = _FILE_NAME.match(token)
    if m and m.group(1).lower() in _EXTENSIONS:
        return token
    return None


def paths(text: str) -> set[str]:
    """File paths in `text`: tokens with a "/" or a known file extension.

    Trailing sentence dots and slashes and a leading "./" are dropped, so "./src/a.py."
    and "src/a.py" are the same fact.
    """
    text = _ESCAPE.sub(" ", text)
    found = set()
    for token in _TOKEN.findall(text):
        path = _as_path(token)
        if path:
            found.add(path)
    return found


def facts(text: str, teammates: Iterable[str]) -> dict[str, set[str]]:
    """The concrete facts in `text`, by kind.

    Args:
        text: any text: a rendered segment, a summary, a new context.
        teammates: the names to look for (usually every agent on the team).

    Returns:
        {"task_ids": {...}, "names": {...}, "paths": {...}}.
    """
    return {"task_ids": task_ids(text), "names": names(text, teammates), "paths": paths(text)}


def _share(before: set[str], after: set[str]) -> float | None:
    if not before:
        return None
    return len(before & after) / len(before)


def retention(before: str, after: str, teammates: Iterable[str]) -> Retention:
    """Share of the facts in `before` that are still present in `after`.

    Args:
        before: the full text of the segment that was compacted.
        after: the text of the new context (identity block, summary, transcript path).
        teammates: the names to look for.

    Returns:
        A `Retention`. `overall` pools every fact of every kind, so a segment with twenty
        paths and one task id weighs them twenty to one; None when `before` had no facts.
    """
    teammates = list(teammates)
    was, now = facts(before, teammates), facts(after, teammates)
    shares = {kind: _share(was[kind], now[kind]) for kind in KINDS}
    total = sum(len(was[kind]) for kind in KINDS)
    kept = sum(len(was[kind] & now[kind]) for kind in KINDS)
    return Retention(**shares, overall=kept / total if total else None)
