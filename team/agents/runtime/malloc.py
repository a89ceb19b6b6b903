"""glibc's malloc, told to keep large blocks out of its heaps for a long run.

By default glibc raises its mmap threshold to the size of any mapped block that is
freed, so after the first large free, blocks of that size are carved out of a heap
instead of mapped. There they stay: a heap shrinks only from its top, and the small
blocks that settle around a large one pin it. In a team the largest such block is the
interpreter's table of interned strings (about 1 MiB; pathlib interns every path part,
and a run keeps making unique file names, so the table is rebuilt again and again). In
the soak (bench/bench_soak.py) malloc's heaps grew 10.9 -> 12.6 MiB over 20,000 calls;
with the threshold fixed at glibc's starting value, 10.0 -> 10.7, flat after 12,000.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers, from <malloc.h>
M_MMAP_THRESHOLD = -3
THRESHOLD = 128 * 1024  # glibc's own starting value of both; fixing them stops them rising


def glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):  # not glibc (musl, macOS): nothing to tune
        return False


def keep_large_blocks_mapped() -> bool:
    """Fix glibc's mmap threshold at 128 KiB for this process. Returns True when set.

    The trim threshold (free space at a heap's top that is given back) is set to its
    starting 128 KiB too: fixing one freezes both, and the process may have raised them
    already (a resume reads large session logs before the runtime starts).

    Left alone when the user tuned it already (`MALLOC_MMAP_THRESHOLD_`, or
    `GLIBC_TUNABLES` naming `mmap_threshold`), and off glibc. The cost: a block of
    128 KiB or more is always a fresh mapping, a syscall that the team's rare large
    buffers can afford.
    """
    if not glibc():
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "mmap_threshold" in os.environ.get(
        "GLIBC_TUNABLES", ""
    ):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(M_MMAP_THRESHOLD, THRESHOLD) != 1:
        log.debug("mallopt(M_MMAP_THRESHOLD) refused; malloc keeps its own threshold")
        return False
    mallopt(M_TRIM_THRESHOLD, THRESHOLD)
    return True
