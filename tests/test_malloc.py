"""glibc's mmap threshold: fixed for a run, so large freed blocks leave the heaps.

Each case runs in a fresh interpreter: the setting is per process and cannot be undone.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from team.agents.runtime.malloc import glibc

pytestmark = pytest.mark.skipif(not glibc(), reason="glibc only")

# Free one large mapped block, then make one of 200 KiB: does it get a mapping of its own
# (given back the moment it is freed) or a place in a heap (kept)?
PROBE = """
import ctypes, sys
from team.agents.runtime.malloc import keep_large_blocks_mapped
FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in FIELDS.split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
mode = sys.argv[1]
if mode == "late":  # thresholds raised before the runtime starts (a resume's big reads)
    libc.free(libc.malloc(1 << 20))
set_it = keep_large_blocks_mapped() if mode in ("fixed", "late") else None
libc.free(libc.malloc(1 << 20))  # by default this raises the threshold to 1 MiB
mapped = libc.mallinfo2().hblks
block = libc.malloc(200 * 1024)
heap = libc.mallinfo2().arena
small = [0] * 300  # made first, so that it does not sit above the blocks
for i in range(300):  # 1.2 MB at the top of the heap
    small[i] = libc.malloc(4000)
for b in reversed(small):
    libc.free(b)
# the free top went back to the system, all but glibc's pad (128 KiB)
given_back = libc.mallinfo2().arena < heap + 400_000
print(set_it, libc.mallinfo2().hblks - mapped, given_back)
"""


def _probe(mode: str, **env: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return out.stdout.strip()


def test_a_large_block_is_mapped_even_after_a_larger_one_was_freed() -> None:
    # glibc's own rule: into a heap, for good, and 1.2 MB free at the top is kept
    assert _probe("default") == "None 0 False"
    # fixed: its own mapping, given back when freed; the heap's free top given back too
    assert _probe("fixed") == "True 1 True"
    # and so when the thresholds had risen before the runtime started
    assert _probe("late") == "True 1 True"


def test_a_threshold_the_user_set_is_left_alone() -> None:
    # not set, and the user's 4 MiB holds: the 200 KiB block goes into a heap
    assert _probe("fixed", MALLOC_MMAP_THRESHOLD_="4194304").split()[:2] == ["False", "0"]
    tunables = "glibc.malloc.mmap_threshold=4194304"
    assert _probe("fixed", GLIBC_TUNABLES=tunables).split()[:2] == ["False", "0"]
