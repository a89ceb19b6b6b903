"""Concrete facts in free text: the file paths and the task ids it mentions.

This is the one implementation of both; retention (compaction/retention.py), the
simulator and the session readers all use it. The text is anything an agent saw:
tool output, XML-tagged mail, JSON-escaped tool input, shell commands, Windows paths.

Every scan is linear in the length of the text. A message can hold a 10 MB single
"word" (a base64 blob, a minified file), and one quadratic regex on it once froze a whole
team for minutes while holding the GIL. So the text is cut once into candidate tokens by
a single character class (no backtracking is possible), tokens longer than `MAX_PATH`
are skipped without being looked at again, and every other rule runs on a bounded token.
Task-id patterns have bounded repeats only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_PATH = 4096  # PATH_MAX on Linux: a longer token is not a path, and is never re-scanned

# Candidate tokens end at whitespace, quotes, brackets, tag delimiters and shell
# punctuation. Colons, "=" and backslashes stay inside: they are split below, where it is
# known whether the token is a Windows path ("C:\x"), a line number ("a.py:12") or an
# option ("--out=dir/x").
_TOKEN = re.compile(r"""[^\s"'`()\[\]{}<>,;|*?!&]+""")

# JSON and Python string escapes: "\n" glued to a path ("line\nlib/util.py") is a line end.
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.?)", re.S)

# Without a slash, a dotted word is only a file if its extension is a file extension:
# "os.path", "e.g" and "self.name" are not files, "team.toml" and "main.py" are.
_EXTENSION_WORDS = """
    py pyi pyx ipynb md rst txt toml json jsonl yaml yml cfg ini conf lock log csv tsv db
    sqlite sql html htm css scss js mjs cjs ts tsx jsx vue svelte c h cc cpp cxx hpp hh rs
    go java kt kts scala rb php pl swift cs jl lua sh bash zsh fish ps1 bat cmd xml svg png
    jpg jpeg gif webp pdf zip gz tgz tar whl proto graphql dockerfile mk cmake gradle patch
    diff bak pem crt exe dll env
"""
_EXTENSIONS = frozenset(_EXTENSION_WORDS.split())
_STEM = re.compile(r"[\w.+@~-]+")

# Task ids, only where the text names a task: "task 12", "Task #12", "task: 12",
# "task id 12", "tasks 8", '"task_id": "12"', "task_id=12", 'task="12"'. "issue #701",
# "PR #3" and "&#39;" are not tasks. Repeats are bounded so no input backtracks for long.
_TASK = re.compile(
    r"""\btasks?(?:[ \t_-]?id)?["']?[ \t]{0,3}[:=]?[ \t]{0,3}["']?\#?(\d{1,9})(?!\w)""",
    re.IGNORECASE,
)
# A list introduced by "tasks:" (or "tasks #"): every "#N" to the end of that line or tag,
# as in the identity block's "Open tasks: #12 fix parser; #7 review".
_TASK_LIST = re.compile(r"\btasks(?:[ \t]{0,3}:|(?=[ \t]{0,3}#))[^\n<]*", re.IGNORECASE)
# A markdown section whose heading names tasks ("## Pending tasks"): every "#N" in it.
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t][^\n]*", re.MULTILINE)
_HASH_ID = re.compile(r"(?<![\w&#])#(\d{1,9})(?!\w)")


def iter_paths(text: str) -> Iterator[str]:
    """File paths in `text`, in order, repeats included.

    A path is a token with a "/" (relative, absolute or "~/"), a Windows path ("C:\\x",
    "\\\\server\\share"), or a name with a known file extension ("team.toml"). Not paths:
    XML tags ("</status>"), command switches ("/cfg", "-o", "/s"), URLs, numbers and dates
    ("1/2", "2024/01/02"), dotted names ("os.path"). Line numbers, option names and
    trailing sentence dots are dropped, and a leading "./" too, so "./src/a.py." and
    "src/a.py:12" are the same fact as "src/a.py".
    """
    # Tokens never span a line break (every one is whitespace), and every path has a
    # slash, a dot or a backslash: a line with none of them is skipped without a token
    # scan (most lines of code and prose; a 2 MB result is a few substring searches).
    for line in text.splitlines():
        if "/" not in line and "." not in line and "\\" not in line:
            continue
        for m in _TOKEN.finditer(line):
            start, end = m.span()
            if end - start > MAX_PATH:
                continue
            token = m.group()
            if "/" not in token and "." not in token and "\\" not in token:
                continue
            if start and line[start - 1] == "<":  # a tag name: "<path>", "</status>"
                continue
            yield from _token_paths(token)


def paths(text: str) -> set[str]:
    """The distinct file paths in `text` (see `iter_paths`)."""
    return set(iter_paths(text))


def task_ids(text: str) -> set[int]:
    """The ids of the tasks `text` names, as numbers ("task 007" -> 7)."""
    low = text.lower()
    if "task" not in low:
        return set()
    found: set[int] = set()
    listed_to = 0  # a list runs to its line end; never re-scan it from a later "tasks:"
    at = low.find("task")
    while at >= 0:
        if m := _TASK.match(text, at):
            found.add(int(m.group(1)))
        if at >= listed_to and (m := _TASK_LIST.match(text, at)):
            found.update(int(h.group(1)) for h in _HASH_ID.finditer(m.group()))
            listed_to = m.end()
        at = low.find("task", at + 4)
    headings = list(_HEADING.finditer(text))
    for i, h in enumerate(headings):
        if "task" in h.group().lower():
            body_end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
            found.update(int(x.group(1)) for x in _HASH_ID.finditer(text, h.end(), body_end))
    return found


def _token_paths(token: str) -> Iterator[str]:
    if "\\" in token and not _raw_windows(token):
        # Escaped text: "\\" is one backslash (a JSON-escaped Windows path), "\/" a slash,
        # any other escape ends the word it is glued to.
        token = _ESCAPE.sub(_unescape, token)
        for piece in token.split():
            yield from _piece_paths(piece)
    else:
        yield from _piece_paths(token)


def _unescape(m: re.Match[str]) -> str:
    c = m.group(1)
    if c in ("\\", "/"):
        return c
    return " "


def _raw_windows(token: str) -> bool:
    """A Windows path as written by a person: "C:\\Users\\me", "\\\\srv\\share" (not JSON)."""
    body = token.rpartition("=")[2]
    if _drive(body):
        return "\\\\" not in body
    return body.startswith("\\\\") and "\\\\" not in body[2:]


def _drive(token: str) -> bool:
    return (
        len(token) > 3
        and token[0].isascii()
        and token[0].isalpha()
        and token[1] == ":"
        and (token[2] in "\\/")
    )


def _piece_paths(piece: str) -> Iterator[str]:
    piece = piece.rpartition("=")[2]  # "--out=dir/x", "path=src/a.py": the value
    if piece.startswith("-") or "://" in piece:  # an option, a URL
        return
    if _drive(piece) or piece.startswith("\\\\"):
        path = piece.rstrip(".:\\/")
        if any(c.isalpha() for c in path[3:]):
            yield path
        return
    for part in piece.replace("\\", ":").split(":"):  # "a.py:12:5", leftover backslashes
        path = _plain(part)
        if path:
            yield path


def _plain(token: str) -> str | None:
    token = token.rstrip(".-")
    while token.startswith("./"):
        token = token[2:]
    if token.startswith("//"):  # what is left of a URL
        return None
    if "/" in token:
        token = token.rstrip("/")
        # "1/2" and "2024/01/02" are numbers and dates; a path names something.
        if not any(c.isalpha() for c in token):
            return None
        # "/cfg", "/s", "/status": a Windows switch or slash command, or a bare top-level
        # directory; too ambiguous to count as a fact, unless it has a file extension.
        if token.startswith("/") and "/" not in token[1:] and not _file_name(token[1:]):
            return None
        return token
    return token if _file_name(token) else None


def _file_name(token: str) -> bool:
    stem, dot, ext = token.rpartition(".")
    return bool(
        dot
        and ext.lower() in _EXTENSIONS
        and stem
        and not stem.endswith(".")
        and _STEM.fullmatch(stem)
        and any(c.isalnum() for c in stem)
    )
