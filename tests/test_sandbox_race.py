"""Escape 5 of issue 24, as the review tried it: while another agent's sandboxed command
swaps a folder for a symlink in a loop (to outside the workspace, into another agent's
inbox, to a deny_read folder), the file tools write and read through that folder. Every
try lands in the real folder or is refused; none lands outside, none forges mail, none
returns the secret. Real bubblewrap; tries are in-process calls (no process per try)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sandbox import SECRET, home, toolbox, workspace  # noqa: F401 (home: a fixture)

from team.agents.tools.shell import run_command
from team.agents.tools.toolbox import Toolbox

TRIES = int(os.environ.get("RACE_TRIES", "10000"))  # smaller only to debug the test
MIN_SWAPS = 100  # the racer's own count: tries go on until it raced at least this often
RACE_S = 600.0  # at most this long past TRIES, on a machine too busy to run the racer

# The second agent: a python loop inside its own sandbox, renaming `d` away and putting
# a symlink in its place, then back, as fast as it can (no process per swap).
RACER = r"""
import os, sys
targets = sys.argv[1:]
open("racer.up", "w").close()
i = 0
while True:
    t = targets[i % len(targets)]
    i += 1
    if i % 100 == 0:  # written whole: a reader never sees it empty
        with open("racer.count.tmp", "w") as f:
            f.write(str(i))
        os.replace("racer.count.tmp", "racer.count")
    try:
        os.rename("d", "d.real")
        os.symlink(t, "d")
        os.unlink("d")
        os.rename("d.real", "d")
    except OSError:
        try:
            os.unlink("d")
        except OSError:
            pass
        try:
            os.rename("d.real", "d")
        except OSError:
            pass
"""


class Racer:
    """`bob`'s sandboxed command swapping `d` until stopped."""

    def __init__(self, racer: Toolbox, targets: list[str]) -> None:
        (racer.root / "racer.py").write_text(RACER)
        self.stop = threading.Event()
        self.box = racer
        args = " ".join(f"'{t}'" for t in targets)
        self.result = None
        self._swaps = 0

        def run() -> None:
            self.result = run_command(
                f"exec python3 racer.py {args}",
                racer.root,
                timeout=600,
                output_cap=4000,
                stop=self.stop,
                sandbox=racer.sandbox,
            )

        self.thread = threading.Thread(target=run, daemon=True)

    def __enter__(self) -> Racer:
        self.thread.start()
        up = self.box.root / "racer.up"
        for _ in range(600):
            if up.exists():
                return self
            self.thread.join(0.05)
        raise AssertionError(f"the racer did not start: {self.result}")

    def swaps(self) -> int:
        """How often the racer has swapped, by its own count (the most it ever said)."""
        try:
            said = int((self.box.root / "racer.count").read_text() or 0)
        except (OSError, ValueError):
            said = 0
        self._swaps = max(self._swaps, said)
        return self._swaps

    def tries(self) -> Iterator[int]:
        """TRIES tries, and more while the racer has not yet swapped MIN_SWAPS times (a
        loaded machine may give it little time): the test races whatever the load."""
        deadline = time.monotonic() + RACE_S
        i = 0
        while i < TRIES or (self.swaps() < MIN_SWAPS and time.monotonic() < deadline):
            yield i
            i += 1

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A folder on a tmpfs when the machine has one (each write's fsync is then free, so
    10,000 tries take seconds, not minutes), else `tmp_path`."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="team-race-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def two(fast_tmp: Path, home: Path) -> tuple[Toolbox, Toolbox, Path]:  # noqa: F811
    tmp_path = fast_tmp
    ws = workspace(tmp_path, 'sandbox = "bwrap"')
    alice, _ = toolbox(ws, "alice")
    bob, _ = toolbox(ws, "bob")
    (ws.root / "d").mkdir()
    (ws.inbox_dir("alice") / "new").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    assert alice.sandbox.mode == "bwrap"
    return alice, bob, outside


def test_writes_through_a_swapped_folder_never_land_outside(two) -> None:
    alice, bob, outside = two
    inbox = alice.ws.inbox_dir("alice") / "new"
    landed = refused = 0
    with Racer(bob, [str(outside), str(inbox), "../outside", ".team/inbox/alice/new"]) as racer:
        for i in racer.tries():
            r = alice.run("write_file", {"path": "d/x.json", "content": f"{i}"})
            if r.is_error:
                refused += 1
            else:
                landed += 1
    assert list(outside.iterdir()) == [], "a write landed outside the workspace"
    assert list(inbox.iterdir()) == [], "a write forged mail in alice's inbox"
    assert landed + refused >= TRIES
    assert landed > 0  # the tool still works while the folder is raced
    # and the racer did race it (how often a try meets the symlink is up to the scheduler)
    assert racer.swaps() >= MIN_SWAPS
    real = alice.root / "d" / "x.json"
    assert real.exists() or (alice.root / "d.real" / "x.json").exists()


def test_reads_through_a_swapped_folder_never_return_a_secret(two, home: Path) -> None:  # noqa: F811
    alice, bob, _ = two
    (alice.root / "d" / "id_rsa").write_text("harmless\n")
    leaks = got = 0
    with Racer(bob, [str(home / ".ssh"), "../home/.ssh"]) as racer:
        for _ in racer.tries():
            r = alice.run("read_file", {"path": "d/id_rsa"})
            leaks += SECRET in r.content
            got += "harmless" in r.content
    assert leaks == 0
    assert got > 0
    assert racer.swaps() >= MIN_SWAPS
