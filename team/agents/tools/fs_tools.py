"""File tools confined to the agent's scope: read_file, write_file, edit_file.

A path is never checked and then used: each one is walked a component at a time from an
open descriptor of the writable root, every folder opened relative to the one before with
O_NOFOLLOW, and the file itself opened (or renamed into place) relative to the last. A
symlink met on the way is read and its target walked the same way from the root, so
`link -> /etc` or `../x` cannot lead out of the root, and `link -> .team` cannot lead into
the paths the agents must never write (`.team/`, `.transcripts/`, the team's rules, git's
configuration: `Scope.protected`). A folder swapped for a symlink after it was opened
changes nothing: the walk holds the folder, not its name. Nothing under a `deny_read` path
is read or written. The `Scope` is the one the sandbox gives `bash` (team.sandbox.bwrap),
so the file tools and a sandboxed command agree.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from team.core.errors import UserError
from team.sandbox.bwrap import Scope

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40  # as the kernel's own limit on symlinks in one path


class PathError(UserError):
    """A path the file tools refuse: outside the workspace, or protected."""


@dataclass
class _Place:
    """Where a walk ended: the folder that holds the last name, open, and that name."""

    dir_fd: int
    name: str
    """The last component; "" when the path is the root itself."""
    real: Path
    """The path it names, symlinks resolved (for messages and the checks)."""


@contextlib.contextmanager
def _walk(ws: Scope, path: str, *, for_write: bool, make_dirs: bool = False) -> Iterator[_Place]:
    """Walk `path` from the root without following any symlink blindly; yields the place.

    Raises:
        PathError: empty, outside the root, denied, protected (writes), a symlink loop.
        OSError: a folder on the way is missing (when not `make_dirs`) or unreadable.
    """
    if not path or not path.strip():
        raise PathError("path is empty")
    if "\x00" in path:
        raise PathError("path contains a NUL byte")
    root = ws.root.resolve()
    todo = collections.deque(_below(root, Path(path).expanduser(), path))
    done: list[str] = []
    links = 0
    rules = _Rules(ws, root, for_write=for_write)
    fd = os.open(root, _DIR_FLAGS)
    try:
        while True:
            name = todo.popleft() if todo else ""
            if name in (".",):
                continue
            if name == "..":  # the folder walked so far is real: its parent is too
                if not done:
                    raise PathError(f"path escapes the workspace: {path}")
                todo.extendleft(reversed(done[:-1]))
                done = []
                os.close(fd)
                fd = os.open(root, _DIR_FLAGS)
                continue
            real = root.joinpath(*done, name)
            rules.check(real, path)
            if not todo:  # the last component: its folder is open
                target = _link_target(fd, name) if name else None
                if target is None:
                    yield _Place(fd, name, real)
                    return
            else:
                try:
                    nfd = _open_dir(fd, name, make=make_dirs)
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                        e.filename = path
                        raise
                    target = _link_target(fd, name)
                    if target is None:  # not a symlink: a file where a folder should be
                        where = "/".join([*done, name])
                        raise PathError(f"{path}: {where} is not a folder") from None
                else:
                    os.close(fd)
                    fd = nfd
                    done.append(name)
                    continue
            # a symlink: walk its target in its place, from the root when it is absolute
            links += 1
            if links > _MAX_LINKS:
                raise PathError(f"{path}: too many levels of symbolic links")
            link = Path(target)
            rest = _below(root, link, path) if link.is_absolute() else [*done, *link.parts]
            todo.extendleft(reversed(rest))
            done = []
            os.close(fd)
            fd = os.open(root, _DIR_FLAGS)
    finally:
        os.close(fd)


def _below(root: Path, target: Path, path: str) -> list[str]:
    """The components of `target` taken from the root (`..` kept: the walk takes it from
    the real folder it is in); an absolute `target` must name something under the root."""
    full = Path(os.path.normpath(root / target))  # taken lexically: a refusal, never a pass
    if not target.is_absolute() and full.is_relative_to(root):
        return [p for p in target.parts if p != "."]
    if not target.is_relative_to(root) or not full.is_relative_to(root):
        if not target.is_absolute():
            raise PathError(f"path escapes the workspace: {path}")
        raise PathError(f"path escapes the workspace: {path} (resolves to {target})")
    return list(target.relative_to(root).parts)


def _open_dir(fd: int, name: str, *, make: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not make:
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=fd)
    return os.open(name, _DIR_FLAGS, dir_fd=fd)


def _link_target(fd: int, name: str) -> str | None:
    """What symlink `name` (in folder `fd`) points to, or None when it is not one."""
    try:
        return os.readlink(name, dir_fd=fd)
    except (OSError, ValueError):
        return None


class _Rules:
    """The scope's deny_read and protected paths as strings, taken once per walk (each
    component is checked against them)."""

    def __init__(self, ws: Scope, root: Path, *, for_write: bool) -> None:
        self.deny = [(str(p), p) for p in ws.deny_read]
        self.protected: list[tuple[set[str], str]] = []
        for folder in ws.protected if for_write else ():
            # both spellings: the folder itself may be a symlink to elsewhere; a root
            # inside the folder (an agent's worktree in .team/) is writable, as in bash
            spellings = {str(f) for f in (folder, folder.resolve()) if not root.is_relative_to(f)}
            rel = folder.relative_to(ws.root) if folder.is_relative_to(ws.root) else folder
            what = str(rel) if folder.is_file() or folder.suffix else f"under {rel}/"
            if spellings:
                self.protected.append((spellings, what))

    def check(self, real: Path, path: str) -> None:
        text = str(real)
        for prefix, secret in self.deny:
            if _under(text, prefix):
                raise PathError(f"refusing {path}: it is under deny_read ({secret})")
        for spellings, what in self.protected:
            if any(_under(text, f) for f in spellings):
                raise PathError(f"refusing to write {what} (managed by team): {path}")


def _under(text: str, prefix: str) -> bool:
    return text == prefix or text.startswith(prefix.rstrip("/") + "/")


def size_of(ws: Scope, path: str) -> int:
    """The size of the file `path` names now (0 when it cannot be seen)."""
    try:
        with _walk(ws, path, for_write=False) as place:
            return os.stat(place.name or ".", dir_fd=place.dir_fd, follow_symlinks=False).st_size
    except (OSError, UserError):
        return 0


def read_text(ws: Scope, path: str, *, limit: int | None, cap: int) -> str:
    """The text of a workspace file: at most `limit` lines and about `cap` characters.

    Whatever is left out is said at the end, with how many lines remain, so the model
    knows to read on (e.g. with `bash` and `sed -n`) rather than assume it saw it all.
    """
    with _walk(ws, path, for_write=False) as place:
        data = _read_regular(place, path)
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


def _read_regular(place: _Place, path: str) -> bytes:
    """The bytes of a regular file; anything else is refused without blocking.

    A FIFO would block `open` until a writer appears (and a read until it writes), and a
    device like /dev/zero never ends: either would hang the agent's thread where no stop
    request can reach it. O_NONBLOCK makes the open return at once, then fstat decides.
    O_NOFOLLOW: a symlink put there since the walk looked is refused, not followed.
    """
    if not place.name:
        raise PathError(f"{path} is a directory (use bash `ls` to list it)")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(place.name, flags, dir_fd=place.dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PathError(f"{path} changed into a symlink while it was read") from None
        e.filename = path
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise PathError(f"{path} is a directory (use bash `ls` to list it)")
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
    data = content.encode("utf-8")
    with _walk(ws, path, for_write=True, make_dirs=True) as place:
        existed = _write_into(place, path, data)
    verb = "overwrote" if existed else "created"
    return f"{verb} {_rel(ws, place.real)} ({len(data)} bytes, {content.count(chr(10))} lines)"


def edit_text(ws: Scope, path: str, old_text: str, new_text: str) -> str:
    """Replace the one occurrence of `old_text` in a workspace file with `new_text`.

    Exactly one occurrence is required: zero means the model's picture of the file is
    stale, more than one means the edit would land in a place nobody chose.
    """
    if not old_text:
        raise PathError("old_text is empty: say which text to replace")
    with _walk(ws, path, for_write=True) as place:
        return _edit_in(place, path, old_text, new_text, ws)


def _edit_in(place: _Place, path: str, old_text: str, new_text: str, ws: Scope) -> str:
    try:
        raw = _read_regular(place, path)
    except FileNotFoundError:
        raise PathError(f"{path}: no such file (use write_file to create it)") from None
    try:
        text = raw.decode("utf-8")
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
    _write_into(place, path, text.replace(old_text, new_text, 1).encode("utf-8"))
    line = text[: text.index(old_text)].count("\n") + 1
    return f"edited {_rel(ws, place.real)} at line {line}"


def _write_into(place: _Place, path: str, data: bytes) -> bool:
    """tmp + fsync + rename inside the walked folder: a crash leaves the old file or the
    new one, never half; the rename replaces whatever the name is now (a symlink put
    there since the walk is replaced, not followed). True when a file was replaced."""
    if not place.name:
        raise PathError(f"{path} is a directory")
    fd = place.dir_fd
    try:
        st = os.stat(place.name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise PathError(f"{path} is a directory")
    tmp = f".{place.name[:200]}.{uuid.uuid4().hex[:8]}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    out = os.open(tmp, flags, 0o666, dir_fd=fd)
    try:
        with os.fdopen(out, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            if st is not None and stat.S_ISREG(st.st_mode):
                os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode))  # a script stays executable
        os.rename(tmp, place.name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise
    return st is not None


def _rel(ws: Scope, target: Path) -> str:
    try:
        return str(target.relative_to(ws.root.resolve()))
    except ValueError:
        return str(target)
