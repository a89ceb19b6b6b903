"""A seccomp filter for `network = false`: no AF_UNIX sockets, no io_uring.

A private network namespace cuts TCP, UDP and the abstract Unix sockets off, but a Unix
socket *file* (a Redis or Docker socket, D-Bus) is reached through the filesystem, which
the sandbox shares read-only. A filter cannot look at a path, so it refuses the socket
itself: `socket(AF_UNIX, ...)` fails with EACCES, and so does `io_uring_setup` (io_uring
can open and connect sockets without the `socket` system call). `socketpair` stays
allowed: its two ends are unnamed and reach nothing outside the command.

The program is classic BPF, written here as bytes (no libseccomp needed) and handed to
bubblewrap's `--seccomp FD`. A system call of another ABI than the machine's own (x32,
or 32-bit code on a 64-bit kernel) kills the process: those tables number `socket`
differently and would go round the filter.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import platform
import struct
import tempfile
from pathlib import Path

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_EACCES = 13
_AF_UNIX = 1
_X32_BIT = 0x40000000

# offsets in struct seccomp_data: nr, arch, instruction_pointer, args[6]
_NR, _ARCH, _ARG0 = 0, 4, 16

# machine -> (AUDIT_ARCH_*, socket, io_uring_setup)
_TABLES = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine (or `machine`), or None where no table is known."""
    table = _TABLES.get(machine or platform.machine())
    if table is None:
        return None
    arch, socket_nr, uring_nr = table
    deny = _insn(_RET_K, _RET_ERRNO | _EACCES)
    return b"".join(
        [
            _insn(_LD_W_ABS, _ARCH),  # 0
            _insn(_JEQ_K, arch, 1, 0),  # 1: own ABI: on to 3
            _insn(_RET_K, _RET_KILL_PROCESS),  # 2
            _insn(_LD_W_ABS, _NR),  # 3
            _insn(_JGE_K, _X32_BIT, 0, 1),  # 4: an x32 call: kill
            _insn(_RET_K, _RET_KILL_PROCESS),  # 5
            _insn(_JEQ_K, uring_nr, 5, 0),  # 6: io_uring_setup: to 12
            _insn(_JEQ_K, socket_nr, 1, 0),  # 7: socket: on to 9
            _insn(_RET_K, _RET_ALLOW),  # 8
            _insn(_LD_W_ABS, _ARG0),  # 9: the domain (low 32 bits)
            _insn(_JEQ_K, _AF_UNIX, 1, 0),  # 10
            _insn(_RET_K, _RET_ALLOW),  # 11
            deny,  # 12
        ]
    )


@functools.cache
def filter_file() -> Path | None:
    """A file holding the program (the owner's alone, removed at exit), or None."""
    prog = program()
    if prog is None:
        return None
    fd, name = tempfile.mkstemp(prefix="team-seccomp-", suffix=".bpf")
    with os.fdopen(fd, "wb") as f:
        f.write(prog)
    atexit.register(_unlink, name)
    return Path(name)


def _unlink(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)


# `sh` opens the filter as fd 3 for bubblewrap's `--seccomp 3`, then becomes bubblewrap:
# an argv that works wherever a command line does (MCP clients start their servers from
# an argv and pass no file descriptors).
FD = 3
OPEN_FILTER = f'exec {FD}<"$0" && exec "$@"'


def wrap(path: Path, argv: list[str]) -> list[str]:
    return ["/bin/sh", "-c", OPEN_FILTER, str(path), *argv]
