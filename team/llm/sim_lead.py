"""What a simulated lead does: split a goal into tasks with dependencies, review plans.

Stateless like the rest of the sim: the goal is the newest `goal` message in the
context, and how far the split has got is read from the lead's own `create_task` calls
after it (their results carry the new ids). The split is a small diamond, so the demo
shows tasks waiting on each other and being handed on as they unblock:

    #a survey  ->  #b implement  \\
               ->  #d document    ->  #c review and test
"""

from __future__ import annotations

from typing import Any

from team.llm.sim_reading import Call, Situation

Calls = list[tuple[str, dict[str, Any]]]


def lead_step(s: Situation) -> tuple[str, Calls] | None:
    """The lead's next reply while it is splitting a goal or has plans to review."""
    reviews = _reviews(s)
    split = _split(s)
    if not reviews and split is None:
        return None
    text, calls = split if split is not None else ("", [])
    if reviews:
        text = " ".join(
            filter(None, [f"Approving the plans for {_refs(t for t, _ in reviews)}.", text])
        )
    return text, [c for _, c in reviews] + calls


def _split(s: Situation) -> tuple[str, Calls] | None:
    if "create_task" not in s.tools:
        return None
    goals = [m for m in s.mail if m.type == "goal"]
    if not goals:
        return None
    goal = goals[-1]
    made = [c for c in s.calls if c.index > goal.index and c.use.name == "create_task"]
    ids = [_created(c) for c in made]
    if any(i is None for i in ids) and made and made[-1].result is None:
        return None  # still waiting for a result: nothing to build on
    ids = [i for i in ids if i is not None]
    aim = " ".join(goal.first_line.split())[:100]
    mates = s.teammates or [s.me]

    def task(subject: str, k: int, blocked: list[int]) -> tuple[str, dict[str, Any]]:
        args: dict[str, Any] = {"subject": subject, "owner": mates[k % len(mates)]}
        if blocked:
            args["blocked_by"] = blocked
        args["description"] = f"Part of the goal: {aim}"
        return "create_task", args

    if len(made) == 0:
        text = f"New goal: {aim}. Splitting it: a survey first, then the work that depends on it."
        return text, [task(f"Survey the project for: {aim}", 0, [])]
    if len(made) == 1 and ids:
        a = ids[0]
        text = f"Survey is #{a}; implementation and docs wait on it."
        return text, [
            task(f"Implement: {aim}", 1, [a]),
            task(f"Document: {aim}", 2, [a]),
        ]
    if len(made) == 3 and len(ids) == 3:
        text = f"Review and tests wait on #{ids[1]} and #{ids[2]}."
        return text, [task(f"Review and test: {aim}", 0, [ids[1], ids[2]])]
    if len(made) == 4 and not any(
        c.use.name == "send_message" and c.index > goal.index for c in s.calls
    ):
        plan = ", ".join(f"#{i}" for i in ids)
        content = f"Goal '{aim}' is split into {plan}; I'll hear as each one finishes."
        return f"Telling {goal.sender} the plan.", [
            ("send_message", {"to": goal.sender, "content": content})
        ]
    return None


def _reviews(s: Situation) -> list[tuple[int, tuple[str, dict[str, Any]]]]:
    if "review_plan" not in s.tools:
        return []
    # Every request still in the context that no later review answered (not only new mail:
    # after a crash the facts no longer know the mail the last turn brought).
    reviewed = {c.task: c.index for c in s.calls if c.use.name == "review_plan"}
    out: dict[int, tuple[str, dict[str, Any]]] = {}
    for m in s.mail:
        if m.type == "plan_request" and m.task is not None and m.index > reviewed.get(m.task, -1):
            args = {"task_id": m.task, "approve": True, "feedback": "Looks good; go ahead."}
            out[m.task] = ("review_plan", args)
    return list(out.items())


def _created(c: Call) -> int | None:
    if c.result is None or c.failed:
        return None
    return next((n.id for n in c.result.tasks if n.event == "created"), None)


def _refs(ids) -> str:
    return ", ".join(f"#{i}" for i in ids)


def plan_gate(s: Situation, task: int) -> tuple[str, Calls] | None:
    """Under plan approval: submit a plan for `task`, or wait for its review; None once
    the plan is approved (or the agent works without plan approval)."""
    if "submit_plan" not in s.tools:
        return None
    answers = [m for m in s.mail if m.type == "plan_response" and m.task == task]
    submits = [c for c in s.calls if c.use.name == "submit_plan" and c.task == task]
    if any(n.event == "plan_approved" for c in submits if c.result for n in c.result.tasks):
        return None  # approved before a compaction took the answer out of the context
    last = answers[-1] if answers else None
    if last is not None and last.mail.approved:
        return None
    rejected_at = last.index if last is not None else -1
    if any(c.index > rejected_at for c in submits):
        return f"Waiting for the review of my plan for task #{task}.", []
    plan = (
        f"1. Survey the files that task #{task} ({s.subject(task)}) touches.\n"
        "2. Write my findings to notes/, then tell a teammate.\n"
        "3. Complete the task with a one-line result."
    )
    if last is not None:
        plan += f"\nRevised after the review: {last.body.strip()[:200]}"
    text = f"Submitting my plan for task #{task} before I change anything."
    return text, [("submit_plan", {"task_id": task, "plan": plan})]
