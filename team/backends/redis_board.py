"""The task board on Redis (a `Board`), for a team spread over several machines.

Keys (README, "A team across machines"):

    team:<team>:tasks             hash: id -> JSON record, of the tasks not finished
    team:<team>:tasks:done        hash: id -> JSON record, of the finished tasks
    team:<team>:tasks:done:order  sorted set: finished ids by when they finished
    team:<team>:tasks:next        the last id handed out
    team:<team>:tasks:version     counts writes, so readers re-read only after a change
    team:<team>:tasks:made:<t>    a create's token -> its id (a day), so a create repeated
                                  after a lost reply adds nothing

Finished tasks live apart, so what a reader fetches after each change and what a write
reads in its transaction are the unfinished tasks (and the finished ones they wait on,
one `HMGET`), however many the team has finished (docs/design.md, "Task board"). A
board written before the split keeps working: finished records found among the
unfinished ones are moved by the next write.

Every write is optimistic and atomic: `WATCH` the hashes, read the unfinished records,
let `team.tasks.rules` (the same rules as the file board) decide, reading any other
record it names, then `MULTI`/`EXEC` the one changed record. If any other node wrote in
between, `EXEC` fails and the operation runs again on what is there now, so two nodes
racing for one task have one winner and a claim is checked against its blockers as
they are at that moment.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, Sequence

import redis
from pydantic import ValidationError

from team.backends.redis_link import RedisLink
from team.tasks import rules
from team.tasks.model import Task
from team.tasks.operations import Change, RuleBoard, Stored, apply_rule

log = logging.getLogger(__name__)

MADE_TTL_S = 86_400


class RedisBoard(RuleBoard):
    """The team's tasks on Redis. Safe to share between threads, processes and nodes."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link
        self.key = link.key("tasks")
        self.done_key = link.key("tasks", "done")
        self.order_key = link.key("tasks", "done", "order")
        self.next_key = link.key("tasks", "next")
        self.version_key = link.key("tasks", "version")
        self._cache: tuple[str | None, dict[int, Task]] | None = None
        self._cache_lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()

    # -- reading -------------------------------------------------------------------

    def _hot(self) -> dict[int, Task]:
        """The unfinished records and the finished ones they wait on; fetched again only
        when the version moved."""

        def read(r: redis.Redis) -> dict[int, Task]:
            version = r.get(self.version_key)
            with self._cache_lock:
                if self._cache is not None and self._cache[0] == version and version:
                    return dict(self._cache[1])
            pipe = r.pipeline(transaction=True)
            pipe.get(self.version_key)
            pipe.hgetall(self.key)
            version, raw = pipe.execute()
            tasks = self._parse(raw)
            tasks.update(self._finished(r, _blockers(tasks.values()) - tasks.keys()))
            with self._cache_lock:
                self._cache = (version, tasks)
            return dict(tasks)

        return self.link.call(read)

    def _records(self) -> Mapping[int, Task]:
        return Stored(self._hot(), lambda i: self.link.call(lambda r: self._finished_one(r, i)))

    def _finished(self, r: redis.Redis, ids: Iterable[int]) -> dict[int, Task]:
        ids = sorted(ids)
        if not ids:
            return {}
        raw = r.hmget(self.done_key, [str(i) for i in ids])
        return self._parse({str(i): v for i, v in zip(ids, raw, strict=True) if v is not None})

    def _finished_one(self, r: redis.Redis, task_id: int) -> Task | None:
        return self._finished(r, [task_id]).get(task_id)

    def _parse(self, raw: dict[str, str]) -> dict[int, Task]:
        out = {}
        for field, data in raw.items():
            try:
                task = Task.model_validate_json(data)
                if str(task.id) != field:
                    raise ValueError(f"it says id {task.id}")
            except (ValidationError, ValueError) as e:
                if (field, data) not in self._warned:
                    self._warned.add((field, data))
                    reason = str(e).splitlines()[0]
                    log.warning("skipping unreadable task %s in %s: %s", field, self.key, reason)
                continue
            out[task.id] = task
        return out

    def get(self, task_id: int) -> Task:
        tasks = self._records()
        return rules.derive(rules.need(tasks, task_id), tasks)

    def list(self) -> list[Task]:
        """Every task, finished ones included: the one read that grows with the board."""

        def read(r: redis.Redis) -> dict[int, Task]:
            pipe = r.pipeline(transaction=True)
            pipe.hgetall(self.done_key)
            pipe.hgetall(self.key)
            done, hot = pipe.execute()
            return {**self._parse(done), **self._parse(hot)}

        return rules.derive_all(self.link.call(read))

    def unfinished(self) -> list[Task]:
        return [t for t in rules.derive_all(self._records()) if not t.finished]

    def recently_finished(self, limit: int) -> list[Task]:
        if limit <= 0:
            return []

        def read(r: redis.Redis) -> list[Task]:
            ids = [int(i) for i in r.zrange(self.order_key, -limit, -1)]
            return list(self._finished(r, ids).values())

        # a board from before the split may still hold finished records among the hot
        done = [t for t in self._hot().values() if t.finished] + self.link.call(read)
        unique = {t.id: t for t in done}.values()
        newest = sorted(unique, key=lambda t: (t.updated_at, t.id))[-limit:]
        return sorted(newest, key=lambda t: t.id)

    def open_for(self, agent: str) -> list[Task]:
        return rules.open_for(self._records(), agent)

    def unclaimed(self) -> list[Task]:
        return rules.claimable(self._records())

    def all_done(self) -> bool:
        return rules.all_done(self._records())

    # -- writing -------------------------------------------------------------------

    def create(
        self,
        subject: str,
        *,
        owner: str | None = None,
        description: str = "",
        created_by: str = "user",
        blocked_by: Sequence[int] = (),
    ) -> Task:
        rules.check_subject(subject)
        made = self.link.key("tasks", "made", uuid.uuid4().hex)

        def attempt(pipe: redis.client.Pipeline) -> Task:
            pipe.watch(self.key, self.done_key, self.next_key, made)
            done = pipe.get(made)
            hot = self._parse(pipe.hgetall(self.key))
            tasks = Stored(hot, lambda i: self._finished_one(pipe, i))
            if done is not None:  # our earlier attempt went through; its reply was lost
                return rules.derive(rules.need(tasks, int(done)), tasks)
            last = max([int(pipe.get(self.next_key) or 0), *hot], default=0)
            task = rules.new_task(
                tasks,
                subject,
                task_id=last + 1,
                owner=owner,
                description=description,
                created_by=created_by,
                blocked_by=blocked_by,
                now=time.time(),
            )
            pipe.multi()
            self._store(pipe, task, hot)
            pipe.set(self.next_key, task.id)
            pipe.set(made, task.id, ex=MADE_TTL_S)
            pipe.execute()
            return rules.derive(task, ChainMap({task.id: task}, tasks))

        return self._transact(attempt)

    def discard(self, task_id: int) -> None:
        """Remove a task that was never announced (its delivery failed)."""

        def drop(r: redis.Redis) -> None:
            pipe = r.pipeline(transaction=True)
            pipe.hdel(self.key, str(task_id))
            pipe.hdel(self.done_key, str(task_id))
            pipe.zrem(self.order_key, str(task_id))
            pipe.incr(self.version_key)
            pipe.execute()

        self.link.call(drop)

    # -- internals -----------------------------------------------------------------

    def _store(self, pipe: redis.client.Pipeline, task: Task, hot: dict[int, Task]) -> None:
        """Queue the writes that put `task` in its hash (inside MULTI), and move any
        finished record still among the unfinished (a board from before the split)."""
        stale = [t for t in hot.values() if t.finished and t.id != task.id]
        for t in [*stale, task]:
            field = str(t.id)
            if t.finished:
                pipe.hdel(self.key, field)
                pipe.hset(self.done_key, field, t.model_dump_json())
                pipe.zadd(self.order_key, {field: t.updated_at})
            else:
                pipe.hset(self.key, field, t.model_dump_json())
                pipe.hdel(self.done_key, field)
                pipe.zrem(self.order_key, field)
        pipe.incr(self.version_key)

    def _apply(self, change: Change) -> Task | None:
        """Run one rule on the current records and store what it returns, atomically."""

        def attempt(pipe: redis.client.Pipeline) -> Task | None:
            pipe.watch(self.key, self.done_key)
            hot = self._parse(pipe.hgetall(self.key))

            def store(task: Task) -> None:
                pipe.multi()
                self._store(pipe, task, hot)
                pipe.execute()  # WatchError if another writer got in: decided again

            tasks = Stored(hot, lambda i: self._finished_one(pipe, i))
            return apply_rule(tasks, change, time.time(), store)

        return self._transact(attempt)

    def _transact(self, attempt: Callable[[redis.client.Pipeline], object]):
        """`attempt` under WATCH until no other writer got in between."""

        def run(r: redis.Redis):
            while True:
                with r.pipeline(transaction=True) as pipe:
                    try:
                        return attempt(pipe)
                    except redis.WatchError:
                        continue  # someone wrote meanwhile: decide again on what is there

        return self.link.call(run)


def _blockers(tasks: Iterable[Task]) -> set[int]:
    return {b for t in tasks for b in t.blocked_by}
