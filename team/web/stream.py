"""The live stream of `team web`: server-sent events carrying what changed, not pages.

Each client's stream remembers what it has sent: the last id of each followed event
table (compactions, deliveries, agent events), each task's key (`queries.board_key`) and
each agent's status line. Every `interval` it looks again and sends only the rows and
records that moved, each as one small HTML fragment with the data the page places it by
(docs/design.md, "team web"). A new stream starts after the newest rows (the page
has them); a reconnecting browser sends `Last-Event-ID` (the ids of the tables as
`c.d.a`) and gets what it missed, or, beyond CATCH_UP rows, an event to reload.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from team.web import queries

INTERVAL = 0.1  # seconds between looks; what a browser waits at most beyond that is the wire
CATCH_UP = 1000
"""Rows of one table a reconnecting client may have missed and still be sent one by one;
further behind (or ahead: another database), it is told to reload its page instead."""
KEEPALIVE = 15.0  # a comment line this often keeps proxies from closing an idle stream

EVENT_NAMES = {"compactions": "compaction", "deliveries": "delivery", "agent_events": "agent_event"}


def parse_last_id(header: str | None) -> dict[str, int] | None:
    """`Last-Event-ID` as sent back by a browser: `<compactions>.<deliveries>.<agent events>`."""
    if not header:
        return None
    parts = header.split(".")
    if len(parts) != len(queries.LIVE_TABLES) or not all(p.isdigit() for p in parts):
        return None
    return dict(zip(queries.LIVE_TABLES, map(int, parts), strict=True))


def frame(event: str, data: Any, ids: dict[str, int] | None = None) -> str:
    """One server-sent event (the data is one line of JSON)."""
    head = f"event: {event}\n"
    if ids is not None:
        head += "id: " + ".".join(str(ids[t]) for t in queries.LIVE_TABLES) + "\n"
    return head + "data: " + json.dumps(data, separators=(",", ":")) + "\n\n"


@dataclass
class Follower:
    """What one client has been sent, and the look that finds what it has not.

    `look()` is blocking (SQLite, the board's files, status.json): the stream runs it in a
    worker thread.
    """

    site: Any  # team.web.app.Site: the workspace, its board, the fragment renderers
    ids: dict[str, int] = field(default_factory=dict)
    tasks: dict[int, tuple] = field(default_factory=dict)
    status_stamp: tuple | None = None
    agents: dict[str, str] = field(default_factory=dict)
    board: Any = None
    stale: bool = False  # the client is too far behind: its page must reload

    def start(self, last: dict[str, int] | None) -> None:
        """Begin after the newest rows (a new page has them), or after the ids a
        reconnecting page sent, unless it missed more than CATCH_UP rows of a table."""
        with queries.events(self.site.ws) as conn:
            self.ids = queries.last_ids(conn)
        if last is not None:
            behind = [self.ids[t] - last.get(t, 0) for t in queries.LIVE_TABLES]
            if all(0 <= b <= CATCH_UP for b in behind):
                self.ids = dict(last)
            else:
                self.stale = True
        for task in self._board():
            self.tasks[task.id] = queries.board_key(task)
        self.status_stamp = self._stamp()
        self.agents = {c["name"]: self.site.agent_row(c) for c in self.site.cards()}

    def look(self) -> list[str]:
        out: list[str] = []
        out += self._events()
        out += self._board_changes()
        out += self._status_changes()
        return out

    def _events(self) -> list[str]:
        out = []
        with queries.events(self.site.ws) as conn:
            for table in queries.LIVE_TABLES:
                for row in queries.rows_after(conn, table, self.ids.get(table, 0)):
                    self.ids[table] = row["id"]
                    out.append(
                        frame(EVENT_NAMES[table], self.site.event_data(table, row), self.ids)
                    )
        return out

    def _board(self) -> list[Any]:
        try:
            if self.board is None:  # its own: a board's view keeps what it has read
                self.board = self.site.board()
            return queries.board_tasks(self.board)
        except (OSError, ValueError) as e:  # a board being written by hand, a full disk
            self.site.warn(f"board: {e}")
            return []

    def _board_changes(self) -> list[str]:
        out = []
        for task in self._board():
            key = queries.board_key(task)
            if self.tasks.get(task.id) != key:
                self.tasks[task.id] = key
                out.append(
                    frame(
                        "task",
                        {"id": task.id, "status": task.status, "html": self.site.task_card(task)},
                    )
                )
        return out

    def _stamp(self) -> tuple | None:
        try:
            st = os.stat(self.site.ws.status_path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _status_changes(self) -> list[str]:
        stamp = self._stamp()
        if stamp == self.status_stamp:
            return []
        self.status_stamp = stamp
        out = []
        for card in self.site.cards():
            html = self.site.agent_row(card)
            if self.agents.get(card["name"]) != html:
                self.agents[card["name"]] = html
                out.append(frame("agent", {"name": card["name"], "html": html}))
        return out


async def stream(
    follower: Follower,
    disconnected: Callable[[], Any],
    interval: float = INTERVAL,
) -> AsyncIterator[str]:
    """The event stream of one client, until it goes away."""
    yield "retry: 1000\n\n"
    yield frame("ready", {"interval": interval}, follower.ids)
    if follower.stale:
        yield frame("reload", {})
    quiet = 0.0
    while not await disconnected():
        frames = await anyio.to_thread.run_sync(follower.look)
        for f in frames:
            yield f
        quiet = 0.0 if frames else quiet + interval
        if quiet >= KEEPALIVE:
            quiet = 0.0
            yield ": keepalive\n\n"
        await anyio.sleep(interval)
