"""File tools confined to the agent's scope: read_file, write_file, edit_file.

Every path is resolved (symlinks followed) before it is checked, so `link -> /etc` or
`../x` cannot lead out of the writable root, `link -> .team` cannot lead into the
folders the agents must never write (`.team/`, `.transcripts/`), and nothing under a
`deny_read` path is read or written. The `Scope` is the one the sandbox gives `bash`
(team.sandbox.bwrap), so the file tools and a sandboxed command agree.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from pathlib import Path

from team.core.errors import UserError
from team.sandbox.bwrap import Scope


class PathError(UserError):
    """A path the file tools refuse: outside the workspace, or protected."""


def resolve_inside(ws: Scope, path: str, *, for_write: bool = False) -> Path:
    """The real path `path` names, checked to be inside the scope's root.

    Args:
        ws: the agent's scope; relative paths are taken from its root.
        path: relative to the root, or absolute inside it.
        for_write: also refuse anything under the protected paths (`.team/`, ...).

    Raises:
        PathError: empty, outside the root, denied, or (for writes) protected.
    """
    if not path or not path.strip():
        raise PathError("path is empty")
    if "\x00" in path:
        raise PathError("path contains a NUL byte")
    root = ws.root.resolve()
    target = (root / Path(path).expanduser()).resolve()
    if not target.is_relative_to(root):
        via = "" if str(target) == path else f" (resolves to {target})"
        raise PathError(f"path escapes the workspace: {path}{via}")
    for secret in ws.deny_read:
        if target.is_relative_to(secret):
            raise PathError(f"refusing {path}: it is under deny_read ({secret})")
    if for_write:
        for folder in ws.protected:
            # both spellings: the folder itself may be a symlink to elsewhere; a root
            # inside the folder (an agent's worktree in .team/) is writable, as in bash
            spellings = {folder, folder.resolve()} - {p for p in root.parents}
            if any(target.is_relative_to(f) for f in spellings):
                rel = folder.relative_to(ws.root) if folder.is_relative_to(ws.root) else folder
                raise PathError(f"refusing to write under {rel}/ (managed by team): {path}")
    return target


def read_text(ws: Scope, path: str, *, limit: int | None, cap: int) -> str:
    """The text of a workspace file: at most `limit` lines and about `cap` characters.

    Whatever is left out is said at the end, with how many lines remain, so the model
    knows to read on (e.g. with `bash` and `sed -n`) rather than assume it saw it all.
    """
    target = resolve_inside(ws, path)
    if target.is_dir():
        raise PathError(f"{path} is a directory (use bash `ls` to list it)")
    data = _read_regular(target, path)
    if b"\x00" in data[:8192]:
        return f"[{path}: binary file, {len(data)} bytes, not shown]"
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    total = len(lines)
    shown: list[str] = []
    size = 0
    for line in lines if limit is None else lines[:limit]:
        if size + len(line) > cap:
            if not shown:  # one enormous line: show its start rather than nothing
                shown.append(line[:cap] + "\n")
            break
        shown.append(line)
        size += len(line)
    text = "".join(shown)
    if not text:
        return f"[{path}: empty file]"
    rest = total - len(shown)
    if rest > 0:
        why = "limit" if limit is not None and len(shown) == limit else "output cap"
        text = (
            text.rstrip("\n") + f"\n[... truncated ({why}): {rest} more of {total} lines not shown]"
        )
    return text


def _read_regular(target: Path, path: str) -> bytes:
    """The bytes of a regular file; anything else is refused without blocking.

    A FIFO would block `open` until a writer appears (and a read until it writes), and a
    device like /dev/zero never ends: either would hang the agent's thread where no stop
    request can reach it. O_NONBLOCK makes the open return at once, then fstat decides.
    """
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise PathError(f"{path} is a {kind}, not a regular file; refusing to read it")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as f:
            fd = -1  # the file object owns it now
            return f.read()
    finally:
        if fd >= 0:
            os.close(fd)


_KINDS = {
    stat.S_IFIFO: "FIFO (named pipe)",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
}


def write_text(ws: Scope, path: str, content: str) -> str:
    """Write a workspace file whole (creating folders); returns a one-line confirmation."""
    target = resolve_inside(ws, path, for_write=True)
    if target.is_dir():
        raise PathError(f"{path} is a directory")
    existed = target.exists()
    data = content.encode("utf-8")
    atomic_write(target, data)
    verb = "overwrote" if existed else "created"
    return f"{verb} {_rel(ws, target)} ({len(data)} bytes, {content.count(chr(10))} lines)"


def edit_text(ws: Scope, path: str, old_text: str, new_text: str) -> str:
    """Replace the one occurrence of `old_text` in a workspace file with `new_text`.

    Exactly one occurrence is required: zero means the model's picture of the file is
    stale, more than one means the edit would land in a place nobody chose.
    """
    target = resolve_inside(ws, path, for_write=True)
    if not old_text:
        raise PathError("old_text is empty: say which text to replace")
    if not target.is_file():
        raise PathError(f"{path}: no such file (use write_file to create it)")
    try:
        text = target.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise PathError(f"{path} is not UTF-8 text; edit it with bash instead") from None
    count = text.count(old_text)
    if count == 0:
        raise PathError(f"old_text not found in {path} (read the file again: it may have changed)")
    if count > 1:
        raise PathError(
            f"old_text occurs {count} times in {path}; include more surrounding text "
            "so that it matches exactly once"
        )
    atomic_write(target, text.replace(old_text, new_text, 1).encode("utf-8"))
    line = text[: text.index(old_text)].count("\n") + 1
    return f"edited {_rel(ws, target)} at line {line}"


def atomic_write(target: Path, data: bytes) -> None:
    """tmp + fsync + rename: a crash leaves the old file or the new one, never half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)  # keep a script executable after an edit
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _rel(ws: Scope, target: Path) -> str:
    try:
        return str(target.relative_to(ws.root.resolve()))
    except ValueError:
        return str(target)
