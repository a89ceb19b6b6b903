"""Waking an inbox's reader when mail lands (docs/design.md, "Inboxes").

A wake-up is only a hint: events coalesce and inotify can overflow, so callers rescan
`new/` after every event *and* every timeout (see `wait_for_mail`). That makes lost
events cost latency, never messages.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import watchfiles

from team.mailbox.base import Mailbox, Waker

log = logging.getLogger(__name__)

DEBOUNCE_MS = 25
"""Longest that watchfiles groups a burst of events before waking us."""
STEP_MS = 5
"""How often watchfiles checks for quiet (and for the stop event); sets the latency floor."""
RUST_TIMEOUT_MS = 50
"""watchfiles yields this often even without events, which proves the watch is live."""
POLL_DELAY_MS = 50
"""Stat-polling interval when polling is forced (network and container filesystems)."""
ARM_TIMEOUT_S = 5.0
"""How long the constructor waits for the watch to be established before giving up."""


class PollingWaker(Waker):
    """The fallback: no events at all, so every wait is a timeout (callers rescan)."""

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop
        self._closed = threading.Event()

    def wait(self, timeout: float) -> bool:
        return _sleep(timeout, self._stop, self._closed)

    def close(self) -> None:
        self._closed.set()


def _not_a_removal(change: watchfiles.Change, path: str) -> bool:
    # The owner's own claims (rename new/ -> cur/) show up as removals in new/; they
    # never bring mail, and waking on them would double every reader's loop.
    return change != watchfiles.Change.deleted


class _Either:
    """What watchfiles polls as its stop event: the caller's stop or our close."""

    def __init__(self, *events: threading.Event) -> None:
        self._events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self._events)


class WatchfilesWaker(Waker):
    """A `Waker` fed by a background thread running `watchfiles.watch` on `paths`.

    If the watch cannot be set up natively (inotify limits, odd filesystems) it retries
    with watchfiles' stat polling, and failing that behaves like `PollingWaker`; each
    step down is logged as a warning.

    Args:
        paths: folders to watch (an inbox's `new/`); created if missing, since a watch
            needs a folder and an inbox's `new/` only appears with its first delivery.
        stop: set by the owner to stop; `wait` returns promptly once it is set.
        force_polling: stat-poll instead of native events (None: watchfiles decides,
            which honours WATCHFILES_FORCE_POLLING).
    """

    def __init__(
        self, paths: list[Path], stop: threading.Event, force_polling: bool | None = None
    ) -> None:
        self._paths = [Path(p) for p in paths]
        for p in self._paths:
            p.mkdir(parents=True, exist_ok=True)
        self._stop = stop
        self._closed = threading.Event()
        self._fired = threading.Event()
        self._settled = threading.Event()  # the watch is live, or every attempt failed
        self.mode = "starting"
        """"native", "polling" (watchfiles stat polling) or "fallback" (timeouts only)."""
        self._thread = threading.Thread(
            target=self._run, args=(force_polling,), name="inbox-waker", daemon=True
        )
        self._thread.start()
        self._settled.wait(ARM_TIMEOUT_S)

    def _run(self, force_polling: bool | None) -> None:
        attempts = [force_polling] if force_polling else [force_polling, True]
        for polling in attempts:
            try:
                self._watch(polling)
                return  # stopped or closed
            except Exception as e:  # watchfiles raises OSError, RuntimeError and its own
                how = "stat polling" if polling else "native file events"
                log.warning("inbox waker: cannot watch %s with %s: %s", self._paths, how, e)
        log.warning("inbox waker: falling back to plain polling (timeouts only)")
        self.mode = "fallback"
        self._settled.set()

    def _watch(self, polling: bool | None) -> None:
        stop = _Either(self._stop, self._closed)
        changes_seen = watchfiles.watch(
            *self._paths,
            watch_filter=_not_a_removal,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=RUST_TIMEOUT_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            force_polling=polling,
            poll_delay_ms=POLL_DELAY_MS,
        )
        try:
            for changes in changes_seen:
                if not self._settled.is_set():
                    # The first yield comes after the watcher exists: from now on no
                    # event is missed, so the constructor may return.
                    self.mode = "polling" if polling else "native"
                    self._settled.set()
                if changes:
                    self._fired.set()
        finally:
            self._fired.set()  # release a waiter on stop or close

    def wait(self, timeout: float) -> bool:
        if self.mode == "fallback":
            return _sleep(timeout, self._stop, self._closed)
        fired = self._fired.wait(timeout)
        if self._stop.is_set() or self._closed.is_set():
            return False
        if fired:
            # Clear before the caller rescans: an event landing after this sets it again,
            # so nothing that arrives during the rescan goes unnoticed.
            self._fired.clear()
        return fired

    def close(self) -> None:
        self._closed.set()
        self._fired.set()
        self._thread.join(timeout=2.0)


def _sleep(timeout: float, *events: threading.Event) -> bool:
    """Sleep up to `timeout`, returning early (False) once any of `events` is set."""
    deadline = time.monotonic() + timeout
    while not any(e.is_set() for e in events):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        events[0].wait(min(left, 0.05))
    return False


def make_waker(
    paths: list[Path], stop: threading.Event, force_polling: bool | None = None
) -> Waker:
    """The waker to use: watchfiles, with stat polling forced by TEAM_FORCE_POLLING=1."""
    if force_polling is None and os.environ.get("TEAM_FORCE_POLLING", "") in ("1", "true"):
        force_polling = True
    return WatchfilesWaker(paths, stop, force_polling)


def wait_for_mail(
    mailbox: Mailbox,
    waker: Waker,
    stop: threading.Event,
    timeout: float,
    *,
    tick: float = 1.0,
) -> bool:
    """Wait until `mailbox` has pending mail, rescanning on every event and every `tick`.

    The tick is what makes lost or coalesced file events harmless.

    Returns:
        True when mail is pending, False on timeout or stop.
    """
    deadline = time.monotonic() + timeout
    while not stop.is_set():
        if mailbox.has_pending():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        waker.wait(min(tick, left))
    return False
