"""What each board operation does to the records: pure functions, no storage.

Every backend runs an operation the same way: inside its atomic section it loads the
stored records (`{id: Task}`), calls the function here, and stores the records it
returns. So dependency checks, cycle refusal and the derived `blocked` status behave the
same on files and on Redis, and can be tested without either.

Stored records never say `blocked`; `derive` computes it on the way out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from team.tasks import wording
from team.tasks.model import Task, TaskError

Tasks = Mapping[int, Task]


# -- reading ----------------------------------------------------------------------------


def waiting_on(task: Task, tasks: Tasks) -> list[int]:
    """The blockers of `task` that are not completed (missing ones count as not)."""
    return [b for b in task.blocked_by if b not in tasks or tasks[b].status != "completed"]


def derive(task: Task, tasks: Tasks) -> Task:
    """`task` as users see it: pending with an unfinished blocker reads `blocked`."""
    if task.status in ("pending", "blocked"):
        status = "blocked" if waiting_on(task, tasks) else "pending"
        if status != task.status:
            return task.model_copy(update={"status": status})
    return task


def derive_all(tasks: Tasks) -> list[Task]:
    """Every task with its derived status, by id."""
    return [derive(tasks[i], tasks) for i in sorted(tasks)]


def stuck(tasks: Tasks) -> set[int]:
    """Blocked tasks that can never become claimable: a blocker, or a blocker's blocker,
    failed, was cancelled, or does not exist. They need a person (reopen, cancel)."""
    memo: dict[int, bool] = {}

    def dead(i: int, seen: frozenset[int]) -> bool:
        if i in memo:
            return memo[i]
        t = tasks.get(i)
        if t is None or i in seen:  # a cycle can only come from a hand-edited file
            return True
        if t.status in ("failed", "cancelled"):
            result = True
        elif t.status == "completed":
            result = False
        else:
            result = any(dead(b, seen | {i}) for b in t.blocked_by)
        memo[i] = result
        return result

    return {
        i
        for i, t in tasks.items()
        if not t.finished and waiting_on(t, tasks) and dead(i, frozenset())
    }


def claimable(tasks: Tasks) -> list[Task]:
    """Pending, owned by nobody, every blocker completed; oldest first."""
    return [t for t in derive_all(tasks) if t.status == "pending" and t.owner is None]


def open_for(tasks: Tasks, agent: str) -> list[Task]:
    """Tasks owned by `agent` that are not finished (pending, blocked or in progress)."""
    return [t for t in derive_all(tasks) if t.owner == agent and not t.finished]


def all_done(tasks: Tasks) -> bool:
    """Nothing left that could still run: no pending or in-progress task, and no blocked
    one that may yet be unblocked (a task stuck behind a failed one does not count)."""
    dead = stuck(tasks)
    return all(t.finished or t.id in dead for t in tasks.values())


def unblocked_by(task_id: int, tasks: Tasks) -> list[Task]:
    """Tasks that `task_id` completing has just made claimable."""
    return [
        derive(t, tasks)
        for t in derive_all(tasks)
        if task_id in t.blocked_by and t.status == "pending"
    ]


def dependents(task_id: int, tasks: Tasks) -> list[int]:
    """Unfinished tasks that wait on `task_id`."""
    return [t.id for t in tasks.values() if task_id in t.blocked_by and not t.finished]


# -- checks -----------------------------------------------------------------------------


def check_blockers(tasks: Tasks, task_id: int | None, blocked_by: Sequence[int]) -> list[int]:
    """The blocker list to store for `task_id` (None: a new task), checked.

    Raises:
        TaskError: an unknown id, or a list that would close a dependency cycle.
    """
    ids = list(dict.fromkeys(int(b) for b in blocked_by))  # keep order, drop repeats
    unknown = [b for b in ids if b not in tasks]
    if unknown:
        raise TaskError(f"no task {_ids(unknown)} to be blocked by")
    if task_id is None:
        return ids  # nothing can wait on a task that does not exist yet: no cycle
    path = _path_to(task_id, ids, tasks)
    if path is not None:
        chain = " -> ".join(f"#{i}" for i in [task_id, *path])
        raise TaskError(f"dependency cycle refused: {chain} (each waits on the next)")
    return ids


def _path_to(target: int, starts: Iterable[int], tasks: Tasks) -> list[int] | None:
    """A chain of blocked_by links from one of `starts` back to `target`, if any."""
    stack = [(s, [s]) for s in starts]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node == target:
            return path
        if node in seen or node not in tasks:
            continue
        seen.add(node)
        stack.extend((b, [*path, b]) for b in tasks[node].blocked_by)
    return None


# -- transitions: each returns the records to store ---------------------------------------


def new_task(
    tasks: Tasks,
    subject: str,
    *,
    task_id: int,
    owner: str | None,
    description: str,
    created_by: str,
    blocked_by: Sequence[int],
    now: float,
) -> Task:
    check_subject(subject)
    return Task(
        id=task_id,
        subject=subject,
        description=description,
        owner=owner,
        blocked_by=check_blockers(tasks, None, blocked_by),
        created_by=created_by,
        created_at=now,
        updated_at=now,
    )


def claim(tasks: Tasks, task_id: int, agent: str, now: float) -> Task:
    """pending (open, or assigned to `agent`) -> in_progress. Repeating it is harmless."""
    task = derive(need(tasks, task_id), tasks)
    if task.status == "completed":
        by = f" by {task.owner}" if task.owner else ""
        raise TaskError(f"task #{task.id} is already completed{by}")
    if task.status in ("failed", "cancelled"):
        raise TaskError(
            f"task #{task.id} is {task.status} (reopen it first: team task reopen {task.id})"
        )
    if task.owner not in (None, agent):
        raise TaskError(f"task #{task.id} is owned by {task.owner}, not {agent}")
    if task.status == "blocked":
        raise TaskError(
            f"task #{task.id} is blocked by {_ids(waiting_on(task, tasks))}: "
            "it can be claimed once they are completed"
        )
    if task.status == "in_progress":
        return task
    return _stored(task, status="in_progress", owner=agent, updated_at=now)


def finish(
    tasks: Tasks, task_id: int, agent: str, status: str, result: str | None, now: float
) -> Task:
    """The owner marks its task completed or failed. Repeating the same is harmless."""
    task = derive(need(tasks, task_id), tasks)
    if task.owner != agent:
        if task.owner is None:
            raise TaskError(f"task #{task_id} is not yours: nobody has claimed it (claim it first)")
        done = "was completed" if task.status == "completed" else "is owned"
        raise TaskError(f"task #{task_id} {done} by {task.owner}, not {agent}")
    if task.status == status:
        return task
    if task.status == "cancelled":
        raise TaskError(f"task #{task_id} was cancelled; drop it")
    if task.finished:
        raise TaskError(f"task #{task_id} is already {task.status}")
    if task.status == "blocked" and status == "completed":
        raise TaskError(
            f"task #{task_id} is blocked by {_ids(waiting_on(task, tasks))}: "
            "it cannot be completed before they are"
        )
    done_at = now if status == "completed" else None
    return _stored(task, status=status, result=result, updated_at=now, completed_at=done_at)


def release(tasks: Tasks, task_id: int, agent: str, now: float) -> Task:
    """The owner gives an in-progress task back: pending again, still assigned to it."""
    task = derive(need(tasks, task_id), tasks)
    if task.owner != agent:
        raise TaskError(f"task #{task_id} is not yours (owner: {task.owner or 'nobody'})")
    if task.finished:
        raise TaskError(f"task #{task_id} is already {task.status}")
    return _stored(task, status="pending", updated_at=now)


def cancel(tasks: Tasks, task_id: int, now: float) -> Task:
    task = derive(need(tasks, task_id), tasks)
    if task.status == "cancelled":
        return task
    if task.status == "completed":
        raise TaskError(f"task #{task_id} is already completed; nothing to cancel")
    return _stored(task, status="cancelled", updated_at=now)


def reassign(tasks: Tasks, task_id: int, owner: str | None, now: float) -> Task:
    """A new owner (None: open for anyone); work in progress starts over as pending."""
    task = derive(need(tasks, task_id), tasks)
    if task.finished:
        raise TaskError(
            f"task #{task_id} is {task.status}; reopen it first (team task reopen {task_id})"
        )
    if task.owner == owner:
        return task
    return _stored(task, owner=owner, status="pending", updated_at=now, plan=None, plan_state=None)


def reopen(tasks: Tasks, task_id: int, now: float) -> Task:
    task = derive(need(tasks, task_id), tasks)
    if not task.finished:
        raise TaskError(f"task #{task_id} is {task.status}, not finished: nothing to reopen")
    return _stored(
        task,
        status="pending",
        result=None,
        completed_at=None,
        updated_at=now,
        plan=None,
        plan_state=None,
        plan_feedback=None,
    )


def set_blocked_by(tasks: Tasks, task_id: int, blocked_by: Sequence[int], now: float) -> Task:
    task = derive(need(tasks, task_id), tasks)
    if task.finished:
        raise TaskError(f"task #{task_id} is {task.status}: its dependencies no longer matter")
    if task.status == "in_progress" and blocked_by:
        raise TaskError(f"task #{task_id} is already in progress; it cannot wait now")
    ids = check_blockers(tasks, task_id, blocked_by)
    return _stored(task, blocked_by=ids, updated_at=now)


def submit_plan(tasks: Tasks, task_id: int, agent: str, plan: str, now: float) -> Task:
    task = derive(need(tasks, task_id), tasks)
    if not plan.strip():
        raise TaskError("the plan is empty")
    if task.owner != agent or task.status != "in_progress":
        raise TaskError(f"task #{task_id} is not in progress with you: claim it first")
    if task.plan_state == "approved":
        raise TaskError(wording.already_approved(task_id))
    return _stored(task, plan=plan, plan_state="submitted", plan_feedback=None, updated_at=now)


def review_plan(
    tasks: Tasks, task_id: int, approve: bool, feedback: str | None, now: float
) -> Task:
    task = derive(need(tasks, task_id), tasks)
    if task.plan_state != "submitted":
        state = f"its plan is {task.plan_state}" if task.plan_state else "it has no plan"
        raise TaskError(f"task #{task_id} has no plan waiting for review ({state})")
    if not approve and not (feedback or "").strip():
        raise TaskError("say why the plan is rejected (--why TEXT)")
    state = "approved" if approve else "rejected"
    return _stored(task, plan_state=state, plan_feedback=feedback, updated_at=now)


def check_subject(subject: str) -> None:
    """A task needs a subject; the backends also ask before their atomic section."""
    if not subject.strip():
        raise TaskError("a task needs a subject (got empty text)")


def need(tasks: Tasks, task_id: int) -> Task:
    task = tasks.get(int(task_id))
    if task is None:
        raise TaskError(f"no task #{task_id}")
    return task


def _stored(task: Task, **changes: object) -> Task:
    """The record to write: `blocked` is never stored, it is derived on reading."""
    out = task.model_copy(update=changes)
    if out.status == "blocked":
        out = out.model_copy(update={"status": "pending"})
    return out


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)
