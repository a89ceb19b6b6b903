"""Errors that reach the user as one clear line (exit status 1), never a traceback."""

from __future__ import annotations

import errno

# What a person should read for the errors a full disk or a locked-down folder gives.
_PLAIN = {
    errno.ENOSPC: "no space left on the device (disk full)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


class UserError(Exception):
    """Something the user can fix: a bad file, an unknown agent, a team already running."""


def os_error_line(e: OSError) -> str:
    """One line for a failed file operation: the path (if known) and what went wrong."""
    what = _PLAIN.get(e.errno or 0) or e.strerror or str(e)
    where = f"{e.filename}: " if e.filename else ""
    return f"{where}{what}"


def is_disk_error(e: BaseException) -> bool:
    """A failure of the disk or of permissions, not of the program: report, don't crash."""
    return isinstance(e, OSError) and e.errno in _PLAIN
