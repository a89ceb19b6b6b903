"""An agent's inbox as a Redis stream, read through the agent's consumer group.

Keys (see README, "A team across machines"):

    team:<team>:inbox:<agent>        the stream; one entry per message, field `m` = its JSON
    team:<team>:inbox:<agent>:bad    entries that did not parse, moved aside (a list)

The group is named after the agent and created at id 0 on first receive, so mail sent
before the agent ever ran is still delivered. Its consumer is `<agent>@<node>`.

The cycle mirrors the Maildir inbox: `deliver` is `XADD` and returns once the server has
accepted the entry; `receive` claims with `XREADGROUP >` (the entry enters the pending
list); the caller records the message in its session log; `done` is `XACK`. A crash
before `XACK` leaves the entry pending: the next `receive` of a new process first takes
over every pending entry of the group (`XAUTOCLAIM`, safe because the agent's lease
means only one process reads the group) and re-reads them (`XREADGROUP 0`), and the
session log's id check makes the effect exactly once. Each `XACK` also trims what
the group has acknowledged, keeping the newest entries (`team.backends.redis_trim`), so
`team inbox --all` still shows recent processed mail and the stream does not grow
without end.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass

import redis

from team.backends.redis_link import DOWN, RedisLink, RedisUnavailable
from team.backends.redis_trim import KEEP, Trimmer
from team.mailbox.maildir import Status
from team.mailbox.message import MailMessage

log = logging.getLogger(__name__)

FIELD = "m"
SENT_KEEP_MS = 24 * 3600 * 1000
"""How long Redis remembers that a message id was delivered: a retry with the same id
within this time adds nothing (one small key per message, for a day)."""
DELIVER_TRIES = 4
"""Attempts of one delivery when Redis drops the connection (safe: once per message id)."""
DELIVER = """
local had = redis.call('GET', KEYS[2])
if had then return had end
local id = redis.call('XADD', KEYS[1], '*', ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], id, 'PX', ARGV[3])
return id
"""
"""XADD unless this message id was delivered already; either way the entry's id."""
BATCH = 1000
"""Most entries one `receive` claims; the rest come with the next call."""
BLOCK_MS = 200
"""Longest single blocking read of the waker: how soon it notices the stop event."""


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass(frozen=True)
class StreamClaim:
    """A message claimed from the stream (pending in the group) but not yet acked."""

    message: MailMessage
    entry_id: str


@dataclass(frozen=True)
class StreamEntry:
    """One stream entry as a listing sees it (the Maildir `Entry` of this backend)."""

    key: str
    status: Status
    message: MailMessage | None


class RedisMailbox:
    """One agent's inbox on Redis. Deliver from anywhere; receive from the lease holder.

    Args:
        link: the team's Redis.
        agent: whose inbox.
        node: this node's name; the consumer is `<agent>@<node>`.
        keep: entries the stream keeps at least when acks trim it.
    """

    def __init__(
        self, link: RedisLink, agent: str, node: str = "local", *, keep: int = KEEP
    ) -> None:
        self.link = link
        self.agent = agent
        self.key = link.key("inbox", agent)
        self.bad_key = link.key("inbox", agent, "bad")
        self.group = agent
        self.consumer = f"{agent}@{node}"
        self._trimmer = Trimmer(link.client, self.key, self.group, keep)
        self._deliver = link.client.register_script(DELIVER)  # EVALSHA, loaded once
        self._held: dict[str, StreamClaim] = {}
        self._unsynced: list[StreamClaim] = []
        self._lock = threading.Lock()
        self._reread = True  # take over and re-read the pending list before new mail
        self.newest = "0-0"
        """The newest entry id this process has claimed (the waker starts after it)."""

    # --- writers (anyone) ----------------------------------------------------------

    def deliver(self, msg: MailMessage) -> str:
        """`XADD` the message once per message id; returns its entry id once the server
        has accepted it.

        Idempotent: `team:<team>:sent:<agent>:<id>` remembers the entry (for a day), so
        a delivery repeated after a lost reply, here or by the sender's retry with the same
        id (`team send --id`), adds nothing. A dropped connection is tried again a few
        times before `RedisUnavailable`.
        """
        keys = [self.key, self.link.key("sent", self.agent, msg.id)]
        args = [FIELD, msg.to_json(), SENT_KEEP_MS]
        for attempt in range(DELIVER_TRIES):
            try:
                return self.link.call(lambda r: self._deliver(keys=keys, args=args, client=r))
            except RedisUnavailable:
                if attempt == DELIVER_TRIES - 1 or self.link.stop.is_set():
                    raise
                time.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    # --- the owner (the agent's lease holder) --------------------------------------

    def receive(self) -> list[StreamClaim]:
        """New messages plus those claimed before but not done, oldest first."""
        with self._lock:
            self.link.call(self._receive, on_error=self._forget)
            return sorted(self._held.values(), key=lambda c: _id_key(c.entry_id))

    def _forget(self) -> None:
        # A claim whose reply was lost is pending on the server but unknown here:
        # re-read the pending list on the next attempt.
        self._reread = True

    def _receive(self, r: redis.Redis) -> None:
        if self._reread:
            self._ensure_group(r)
            self._take_over(r)
            self._take(r, r.xreadgroup(self.group, self.consumer, {self.key: "0"}, count=None))
            self._reread = False
        fresh = r.xreadgroup(self.group, self.consumer, {self.key: ">"}, count=BATCH)
        self._take(r, fresh)

    def _ensure_group(self, r: redis.Redis) -> None:
        try:
            r.xgroup_create(self.key, self.group, id="0", mkstream=True)
        except redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise

    def _take_over(self, r: redis.Redis) -> None:
        """Move every pending entry of the group to our consumer (an earlier process's)."""
        cursor = "0-0"
        while True:
            # not JUSTID: redis-py then drops the cursor we need to go on
            reply = r.xautoclaim(self.key, self.group, self.consumer, 0, cursor, count=BATCH)
            cursor = reply[0]
            if cursor == "0-0":
                break
        # consumers of earlier processes now hold nothing: drop them, keep XINFO readable
        for c in r.xinfo_consumers(self.key, self.group):
            if c["name"] != self.consumer and int(c["pending"]) == 0:
                r.xgroup_delconsumer(self.key, self.group, c["name"])

    def _take(self, r: redis.Redis, reply: list) -> None:
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                if _id_key(entry_id) > _id_key(self.newest):
                    self.newest = entry_id
                if entry_id in self._held:
                    continue
                msg = self._parse(r, entry_id, fields)
                if msg is not None:
                    self._held[entry_id] = StreamClaim(msg, entry_id)

    def _parse(self, r: redis.Redis, entry_id: str, fields: dict | None) -> MailMessage | None:
        try:
            if fields is None:
                raise ValueError("entry was deleted")
            return MailMessage.model_validate_json(fields[FIELD])
        except (KeyError, ValueError) as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raw = json.dumps({"id": entry_id, "fields": fields, "error": reason})
            # moved aside, then acked: it never stops the agent, and it is kept to look at
            r.rpush(self.bad_key, raw)
            r.xack(self.key, self.group, entry_id)
            log.warning("inbox %s: malformed entry %s moved to %s (%s)",
                        self.key, entry_id, self.bad_key, reason)  # fmt: skip
            return None

    def done(self, claimed: StreamClaim, *, sync: bool = True) -> None:
        """`XACK`: call only once the message is recorded. Idempotent.

        Args:
            sync: False defers the `XACK` to `sync()`, so marking many costs one round
                trip (until then the message still shows as pending to others).
        """
        if sync:
            self.done_many([claimed])
        else:
            self._unsynced.append(claimed)

    def done_many(self, claims: list[StreamClaim]) -> None:
        ids = [c.entry_id for c in claims]
        if not ids:
            return
        self.link.call(lambda r: self._trimmer.ack(r, ids))
        with self._lock:
            for i in ids:
                self._held.pop(i, None)

    def sync(self) -> None:
        """Send the acks that `done(sync=False)` deferred."""
        claims, self._unsynced = self._unsynced, []
        self.done_many(claims)

    # --- readers (any process) -----------------------------------------------------

    def _group_info(self, r: redis.Redis) -> dict | None:
        try:
            groups = r.xinfo_groups(self.key)
        except redis.ResponseError:
            return None  # no such stream yet
        return next((g for g in groups if g["name"] == self.group), {})

    def pending_count(self) -> int:
        """Messages delivered and not yet processed (claimed-not-acked included)."""

        def count(r: redis.Redis) -> int:
            info = self._group_info(r)
            if info is None:
                return 0
            if not info:  # the agent never ran: everything waits
                return r.xlen(self.key)
            if info.get("lag") is None:  # unknown after deletions: count by listing
                return sum(e.status == "pending" for e in self._listing(r))
            return int(info["pending"]) + int(info["lag"])

        return self.link.call(count)

    def has_pending(self) -> bool:
        return self.pending_count() > 0

    def entries(self) -> list[StreamEntry]:
        """Every message, oldest first, each `pending` or `done` (one atomic read)."""
        return self.link.call(self._listing)

    def _listing(self, r: redis.Redis) -> list[StreamEntry]:
        pipe = r.pipeline(transaction=True)
        pipe.xrange(self.key)
        pipe.xinfo_groups(self.key)
        pipe.xpending_range(self.key, self.group, "-", "+", 1 << 30)
        entries, groups, pel = pipe.execute(raise_on_error=False)
        if isinstance(entries, Exception):
            raise entries
        group = (
            None
            if isinstance(groups, Exception)
            else next((g for g in groups if g["name"] == self.group), None)
        )
        if group is None:  # no group yet: nothing was ever claimed
            last, waiting = (-1, -1), set()
        else:
            last = _id_key(group["last-delivered-id"])
            waiting = set() if isinstance(pel, Exception) else {p["message_id"] for p in pel}
        out = []
        for entry_id, fields in entries:
            status: Status = (
                "pending" if entry_id in waiting or _id_key(entry_id) > last else "done"
            )
            try:
                msg = MailMessage.model_validate_json(fields[FIELD])
            except (KeyError, ValueError):
                msg = None
            out.append(StreamEntry(entry_id, status, msg))
        return out

    def read(self, entry: StreamEntry) -> MailMessage | None:
        return entry.message

    def pending(self) -> list[MailMessage]:
        return [e.message for e in self.entries() if e.status == "pending" and e.message]

    def processed(self) -> list[MailMessage]:
        return [e.message for e in self.entries() if e.status == "done" and e.message]

    def bad(self) -> list[dict]:
        """Entries moved aside because they did not parse."""
        return [json.loads(x) for x in self.link.call(lambda r: r.lrange(self.bad_key, 0, -1))]


class StreamWaker:
    """The `Waker` of a Redis inbox: a blocking `XREAD` after the newest entry seen.

    It wakes as soon as an entry newer than what the mailbox last claimed lands (so it
    never wakes for mail already taken), returns False on timeout and promptly on stop.
    While Redis is down it sleeps out the timeout: the caller's next rescan waits for
    Redis and says so.

    Args:
        mailbox: the inbox to watch.
        stop: set by the owner to stop.
    """

    def __init__(self, mailbox: RedisMailbox, stop: threading.Event) -> None:
        self.mailbox = mailbox
        self._stop = stop
        self._closed = threading.Event()
        self._after = "0-0"
        try:
            info = mailbox._group_info(mailbox.link.client)
            if info:
                self._after = info["last-delivered-id"]
        except DOWN:
            pass

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        client = self.mailbox.link.client
        while not (self._stop.is_set() or self._closed.is_set()):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            after = max(self._after, self.mailbox.newest, key=_id_key)
            try:
                reply = client.xread(
                    {self.mailbox.key: after},
                    count=1,
                    block=max(1, int(min(left, BLOCK_MS / 1000) * 1000)),
                )
            except DOWN:
                self._stop.wait(min(left, 0.5))
                continue
            if reply:
                self._after = reply[0][1][-1][0]
                return True
        return False

    def close(self) -> None:
        self._closed.set()
