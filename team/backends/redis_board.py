"""The task board on Redis (a `Board`), for a team spread over several machines.

Keys (README, "A team across machines"):

    team:<team>:tasks            hash: task id -> the task's JSON record
    team:<team>:tasks:next       the last id handed out
    team:<team>:tasks:version    counts writes, so readers re-parse only after a change
    team:<team>:tasks:made:<t>   a create's token -> its id (a day), so a create repeated
                                 after a lost reply adds nothing

Every write is optimistic and atomic: `WATCH` the hash, read every record, let
`team.tasks.rules` (the same rules as the file board) decide, then `MULTI`/`EXEC` the one
changed record. If any other node wrote in between, `EXEC` fails and the operation runs
again on what is there now, so two nodes racing for one task have one winner and a claim
is checked against its blockers as they are at that moment.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence

import redis
from pydantic import ValidationError

from team.backends.redis_link import RedisLink
from team.tasks import rules
from team.tasks.model import Task, TaskError
from team.tasks.operations import Change, RuleBoard, apply_rule

log = logging.getLogger(__name__)

MADE_TTL_S = 86_400


class RedisBoard(RuleBoard):
    """The team's tasks on Redis. Safe to share between threads, processes and nodes."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link
        self.key = link.key("tasks")
        self.next_key = link.key("tasks", "next")
        self.version_key = link.key("tasks", "version")
        self._cache: tuple[str | None, dict[int, Task]] | None = None
        self._cache_lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()

    # -- reading -------------------------------------------------------------------

    def _records(self) -> dict[int, Task]:
        """The stored records; parsed again only when the version moved."""

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
            with self._cache_lock:
                self._cache = (version, tasks)
            return dict(tasks)

        return self.link.call(read)

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
        return rules.derive_all(self._records())

    def unfinished(self) -> list[Task]:
        return [t for t in rules.derive_all(self._records()) if not t.finished]

    def recently_finished(self, limit: int) -> list[Task]:
        done = [t for t in self._records().values() if t.finished]
        newest = sorted(done, key=lambda t: (t.updated_at, t.id))[-limit:] if limit > 0 else []
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
        if not subject.strip():
            raise TaskError("a task needs a subject (got empty text)")
        made = self.link.key("tasks", "made", uuid.uuid4().hex)

        def attempt(pipe: redis.client.Pipeline) -> Task:
            pipe.watch(self.key, self.next_key, made)
            done = pipe.get(made)
            tasks = self._parse(pipe.hgetall(self.key))
            if done is not None:  # our earlier attempt went through; its reply was lost
                return rules.derive(rules.need(tasks, int(done)), tasks)
            last = max([int(pipe.get(self.next_key) or 0), *tasks], default=0)
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
            pipe.hset(self.key, str(task.id), task.model_dump_json())
            pipe.set(self.next_key, task.id)
            pipe.set(made, task.id, ex=MADE_TTL_S)
            pipe.incr(self.version_key)
            pipe.execute()
            return rules.derive(task, {**tasks, task.id: task})

        return self._transact(attempt)

    def discard(self, task_id: int) -> None:
        """Remove a task that was never announced (its delivery failed)."""

        def drop(r: redis.Redis) -> None:
            pipe = r.pipeline(transaction=True)
            pipe.hdel(self.key, str(task_id))
            pipe.incr(self.version_key)
            pipe.execute()

        self.link.call(drop)

    # -- internals -----------------------------------------------------------------

    def _apply(self, change: Change) -> Task | None:
        """Run one rule on the current records and store what it returns, atomically."""

        def attempt(pipe: redis.client.Pipeline) -> Task | None:
            pipe.watch(self.key)

            def store(task: Task) -> None:
                pipe.multi()
                pipe.hset(self.key, str(task.id), task.model_dump_json())
                pipe.incr(self.version_key)
                pipe.execute()  # WatchError if another writer got in: decided again

            return apply_rule(self._parse(pipe.hgetall(self.key)), change, time.time(), store)

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
