"""One agent's durable inbox, Maildir-style (docs/design.md, "Inboxes").

Layout under `.team/inbox/<agent>/`:

    tmp/      a message being written; never read by anyone
    new/      delivered and durable, not yet claimed
    cur/      claimed by the owner, not yet processed
    archive/<YYYY-MM-DD>/   processed, by the UTC day it was processed
    bad/      files that did not parse, moved aside so they never stop an agent

Processed mail leaves `cur/` for the archive, so what the owner lists before every
model call (new/ and cur/) stays as small as what is in flight, however long the team
runs; only `team inbox --all` reads the archive. Older versions marked processed mail
in place (`cur/X:2,S`); those files still read as done and move to the archive on the
owner's next receive.

Delivery needs no lock: every writer owns a unique file name in `tmp/`, and the rename
into `new/` is atomic, so a reader sees a whole message or nothing. Receiving is the
owner's alone; anyone may read (`pending`, `processed`).
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from team.mailbox.message import MailMessage

log = logging.getLogger(__name__)

DONE_SUFFIX = ":2,S"
"""Maildir's "info" for a seen message, how older versions marked processed mail in cur/."""

MESSAGE_NAME = re.compile(r"^\d+\.[0-9A-Za-z_-]+\.json$")
"""What `deliver` names a message; anything else in new/ or cur/ is not one."""

TMP_SWEEP_INTERVAL = 300.0
"""How often (seconds) the owner sweeps `tmp/` for files abandoned by killed writers."""

CLAIM_PASSES = 3
"""Listings per `receive`; later arrivals wait for the next call (their event wakes it)."""

Status = Literal["pending", "done"]


@dataclass(frozen=True)
class Claimed:
    """A message the owner has claimed (its file is in `cur/`) but not yet marked done."""

    message: MailMessage
    path: Path


@dataclass(frozen=True)
class Entry:
    """One message file as a listing sees it; `key` is the name that orders it."""

    key: str
    path: Path
    status: Status


class _Clock:
    """time_ns that never repeats or goes back within a process, so file names sort in
    send order: each sender's messages must come out in the order it sent them, even
    when the wall clock steps back (NTP) or two sends land in the same nanosecond."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> int:
        with self._lock:
            self._last = max(time.time_ns(), self._last + 1)
            return self._last


_clock = _Clock()


def _stamp(name: str) -> int:
    """The delivery time_ns a file name starts with (0 for a name we did not write)."""
    head = name.partition(".")[0]
    return int(head) if head.isdigit() else 0


def _fsync_dir(path: Path) -> None:
    # The rename is only durable once the directory entry is on disk.
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class MaildirMailbox:
    """One agent's inbox at `root` (= `Workspace.inbox_dir(agent)`).

    Args:
        root: the inbox folder; its subfolders are created on first delivery or receive.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.tmp_dir = self.root / "tmp"
        self.new_dir = self.root / "new"
        self.cur_dir = self.root / "cur"
        self.bad_dir = self.root / "bad"
        self.archive_dir = self.root / "archive"
        self._ready = False
        self._today: Path | None = None  # the archive folder made last
        self._dirty: Path | None = None  # an archive folder renamed into since the last sync
        self._last_sweep = float("-inf")

    def ensure(self) -> None:
        """Create the folders (idempotent, safe from many processes at once)."""
        if self._ready:
            return
        for d in (self.tmp_dir, self.new_dir, self.cur_dir, self.bad_dir):
            d.mkdir(parents=True, exist_ok=True)
        _fsync_dir(self.root)
        self._ready = True

    # --- writers -------------------------------------------------------------------

    def deliver(self, msg: MailMessage) -> Path:
        """Write `msg` durably into `new/`; safe from any thread or process, no lock.

        Returns only once the message would survive a power cut: the file is fsynced
        in `tmp/`, renamed into `new/`, and `new/` itself is fsynced.

        Returns:
            The message's path in `new/`.
        """
        self.ensure()
        name = f"{_clock.next():020d}.{uuid.uuid4().hex}.json"
        tmp, final = self.tmp_dir / name, self.new_dir / name
        data = msg.to_json().encode("utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        # rename, not copy: readers must never see half a message. The uuid makes the
        # name unique, so the rename can never replace someone else's message.
        os.rename(tmp, final)
        _fsync_dir(self.new_dir)
        return final

    # --- the owner -----------------------------------------------------------------

    def receive(self) -> list[Claimed]:
        """Claim everything in `new/` and return it with what was claimed but not done.

        Owner thread only. Oldest first by file name. A file that does not parse is
        moved to `bad/` with a warning and never raised.
        """
        self.ensure()
        self._maybe_sweep_tmp()
        names = {}
        for e in self._scan(self.cur_dir):
            if e.status == "pending":
                names[e.key] = e.path
            else:
                self._archive(e.path, e.key)  # marked done by an older version
        names.update(self._claim_new())
        claimed = []
        for key in sorted(names):
            path = names[key]
            try:
                msg = MailMessage.model_validate_json(path.read_bytes())
            except FileNotFoundError:
                continue  # moved away behind our back: nothing to claim
            except (ValueError, OSError) as e:
                # ValueError covers bad UTF-8; OSError an unreadable file or a folder.
                self._quarantine(path, e)
                continue
            claimed.append(Claimed(msg, path))
        return claimed

    def _claim_new(self) -> dict[str, Path]:
        """Move what is in `new/` to `cur/`, never a sender's message before its elders.

        A directory listing may skip entries created while it runs (POSIX leaves it
        unspecified; ext4 lists in hash order), so it can return a sender's message 7
        but not its message 6, delivered a moment before. So a pass takes only files
        stamped before the listing began: all of those existed when it began, and so did
        everything their senders had sent earlier. Later stamps wait for the next pass.
        """
        claimed: dict[str, Path] = {}
        held: set[str] = set()
        for _ in range(CLAIM_PASSES):
            began = time.time_ns()
            late = set()
            for entry in self._scan(self.new_dir):
                # A file held back last pass yet still stamped ahead of this one was not
                # in flight: its writer's clock runs ahead. Take it rather than wait.
                if _stamp(entry.key) >= began and entry.key not in held:
                    late.add(entry.key)
                    continue
                target = self.cur_dir / entry.key
                try:
                    # No fsync: if a crash undoes the claim, the file is back in new/.
                    os.rename(entry.path, target)
                except FileNotFoundError:
                    continue
                claimed[entry.key] = target
            if not late:
                break
            held = late
        return claimed

    def done(self, claimed: Claimed, *, sync: bool = True) -> None:
        """Mark a claimed message processed (move it to the archive); idempotent.

        Args:
            claimed: from `receive`.
            sync: fsync the archive folder so the mark survives a power cut before
                returning. Pass False to mark many and `sync()` once; other processes
                see the mark either way. A mark lost in a crash only brings the message
                back as claimed, and the owner's journal knows it by id.
        """
        self._archive(claimed.path, claimed.path.name, sync=sync)

    def _archive(self, path: Path, key: str, *, sync: bool = False) -> None:
        folder = self._day_dir()
        try:
            os.rename(path, folder / key)
        except FileNotFoundError:
            return  # already done (or quarantined): nothing to do
        self._dirty = folder
        if sync:
            self.sync()

    def _day_dir(self) -> Path:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        folder = self.archive_dir / day
        if folder != self._today:
            folder.mkdir(parents=True, exist_ok=True)
            self._today = folder
        return folder

    def done_many(self, claims: list[Claimed]) -> None:
        """`done` for many messages with one directory fsync."""
        for c in claims:
            self.done(c, sync=False)
        self.sync()

    def sync(self) -> None:
        """Make every `done(sync=False)` so far durable."""
        # One fsync: the journal commit that makes the new entry durable carries the
        # removal from cur/ with it; if a crash undoes both, the journal knows the id.
        if self._dirty is not None:
            _fsync_dir(self._dirty)
            self._dirty = None

    def clean_tmp(self, older_than: float = 3600.0) -> int:
        """Delete files in `tmp/` older than `older_than` seconds: writers killed mid-write.

        The grace period protects writers that are merely slow. Returns how many went.
        """
        cutoff = time.time() - older_than
        removed = 0
        try:
            entries = list(os.scandir(self.tmp_dir))
        except FileNotFoundError:
            return 0
        for e in entries:
            try:
                if e.is_file(follow_symlinks=False) and e.stat().st_mtime <= cutoff:
                    os.unlink(e.path)
                    removed += 1
            except FileNotFoundError:
                continue  # the writer finished and renamed it meanwhile
        if removed:
            log.info("%s: removed %d abandoned file(s) from tmp/", self.root, removed)
        return removed

    def _maybe_sweep_tmp(self) -> None:
        now = time.monotonic()
        if now - self._last_sweep >= TMP_SWEEP_INTERVAL:
            self._last_sweep = now
            self.clean_tmp()

    def _quarantine(self, path: Path, why: Exception) -> None:
        target = self.bad_dir / path.name
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return
        reason = str(why).splitlines()[0] if str(why) else type(why).__name__
        log.warning("inbox %s: malformed message moved to %s (%s)", self.root, target, reason)

    # --- readers (any process) -----------------------------------------------------

    def entries(self, *, archived: bool | str = True) -> list[Entry]:
        """Message files in `new/`, `cur/` and the archive, oldest first, without reading them.

        Args:
            archived: True for the whole archive, False for none of it (what is pending),
                or a day `YYYY-MM-DD`: only the archive folders of that day and later
                (`--follow` needs what was processed since it began, not the history).

        Safe while the owner is claiming: folders are listed in the order a message
        moves through them (new/, cur/, archive), so a file moved meanwhile is still
        seen (once).
        """
        scans = [self._scan(self.new_dir), self._scan(self.cur_dir)]
        if archived is not False:
            since = "" if archived is True else str(archived)
            scans += [self._scan(d, "done") for d in self._archive_days() if d.name >= since]
        found: dict[str, Entry] = {}
        for e in itertools.chain(*scans):
            # A claim racing the listings can show one file twice; the later one wins.
            found[e.key] = e
        return [found[k] for k in sorted(found)]

    def _archive_days(self) -> list[Path]:
        try:
            return sorted(p for p in self.archive_dir.iterdir() if p.is_dir())
        except FileNotFoundError:
            return []

    def read(self, entry: Entry) -> MailMessage | None:
        """Parse one listed file, following it if the owner moved it meanwhile."""
        candidates = [entry.path]
        if entry.path.parent == self.new_dir:
            candidates += [self.cur_dir / entry.key]
        if entry.status == "pending":
            candidates += [d / entry.key for d in reversed(self._archive_days())]
            candidates += [self.cur_dir / (entry.key + DONE_SUFFIX)]
        for path in candidates:
            try:
                return MailMessage.model_validate_json(path.read_bytes())
            except FileNotFoundError:
                continue
            except (ValueError, OSError):
                return None
        return None

    def pending(self) -> list[MailMessage]:
        """Delivered messages not yet processed (new + claimed-not-done), oldest first."""
        return self._messages("pending")

    def processed(self) -> list[MailMessage]:
        """Processed messages, oldest first."""
        return self._messages("done")

    def pending_count(self) -> int:
        """How many messages wait (listing only, nothing parsed; strays not counted)."""
        return sum(
            e.status == "pending" and MESSAGE_NAME.match(e.key) is not None
            for e in self.entries(archived=False)
        )

    def has_pending(self) -> bool:
        """True if anything waits in `new/` or is claimed but not done (listing only)."""
        return any(True for _ in self._scan(self.new_dir)) or any(
            e.status == "pending" for e in self._scan(self.cur_dir)
        )

    def _messages(self, status: Status) -> list[MailMessage]:
        out = []
        for e in self.entries(archived=status == "done"):
            if e.status == status and (msg := self.read(e)) is not None:
                out.append(msg)
        return out

    @staticmethod
    def _scan(folder: Path, status: Status = "pending") -> Iterator[Entry]:
        """Entries of one folder; in new/ and cur/ a `:2,S` name is an old-style done mark."""
        try:
            it = os.scandir(folder)
        except FileNotFoundError:
            return
        with it:
            for e in it:
                if e.name.startswith("."):
                    continue  # Maildir readers skip dotfiles (editors, NFS leftovers)
                if e.name.endswith(DONE_SUFFIX):
                    yield Entry(e.name[: -len(DONE_SUFFIX)], Path(e.path), "done")
                else:
                    yield Entry(e.name, Path(e.path), status)
