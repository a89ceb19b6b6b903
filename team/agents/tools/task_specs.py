"""The board tools' specs: what the model is told list_tasks, claim_task, ... do.

Names and schemas are a contract (docs/design.md, "What the model sees"); the handlers
are `team.agents.tools.task_tools.TaskTools`.
"""

from __future__ import annotations

from team.agents.tools.input import spec, text
from team.llm.base import ToolSpec
from team.workspace.config import AgentConfig, TeamConfig

TASK_ID = {"type": "integer", "description": "The task's id (#N)."}
IDS = {"type": "array", "items": {"type": "integer"}, "description": "Ids of tasks to wait on."}
LISTED_FINISHED = 10
"""Finished tasks `list_tasks` shows briefly (the newest); `team tasks` shows them all."""
MORE_FINISHED = 50
"""The most finished tasks `list_tasks{finished}` lists (what a board view holds)."""
DESCRIPTION_CHARS = 300
"""Of the caller's own open tasks' descriptions, what `list_tasks` shows."""
UPDATABLE = ("pending", "in_progress", "completed", "failed", "cancelled")


def task_specs(agent: AgentConfig | None = None, team: TeamConfig | None = None) -> list[ToolSpec]:
    """The board tools `agent` gets: submit_plan under plan approval, review_plan if lead."""
    specs = [
        spec(
            "list_tasks",
            "List the task board as JSON: id, subject, status (pending, in_progress, "
            "blocked, completed, failed, cancelled), owner, blocked_by (ids it waits on). "
            "Every unfinished task, with the start of the description of your own; the "
            f"{LISTED_FINISHED} most recently finished briefly (finished: more of them). "
            "get_task shows one task in full.",
            {
                "finished": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MORE_FINISHED,
                    "description": f"How many finished tasks to list (default {LISTED_FINISHED}).",
                }
            },
            [],
        ),
        spec(
            "get_task",
            "One task in full as JSON: its description, result, plan and who made it.",
            {"task_id": TASK_ID},
            ["task_id"],
        ),
        spec(
            "claim_task",
            "Claim a task: it becomes yours and in progress. Fails if another agent "
            "owns it, it is finished, or a task it is blocked by is not completed yet.",
            {"task_id": TASK_ID},
            ["task_id"],
        ),
        spec(
            "complete_task",
            "Mark one of your tasks completed, with a short result.",
            {"task_id": TASK_ID, "result": text("What was done, in a sentence or two.")},
            ["task_id"],
        ),
        spec(
            "create_task",
            "Put a new task on the board, for a teammate (owner) or open for anyone. "
            "blocked_by lists tasks that must be completed first; the owner is told when "
            "it can start.",
            {
                "subject": text("What to do, in one line."),
                "description": text("Details: files, acceptance, context (optional)."),
                "owner": text("The teammate who should do it (omit: anyone may claim it)."),
                "blocked_by": IDS,
            },
            ["subject"],
        ),
        spec(
            "update_task",
            "Change a task: its status (pending gives it back, in_progress claims, "
            "completed or failed finish it with a result, cancelled drops it), its owner "
            "(hand it to a teammate), or what it is blocked_by.",
            {
                "task_id": TASK_ID,
                "status": {"type": "string", "enum": list(UPDATABLE)},
                "result": text("With completed or failed: what happened."),
                "owner": text("A teammate to hand the task to."),
                "blocked_by": IDS,
            },
            ["task_id"],
        ),
    ]
    if agent is not None and agent.plan_approval:
        specs.append(
            spec(
                "submit_plan",
                "Submit your plan for a task you have claimed, before changing any file. "
                "Then end your turn: the approval, or the reason for a rejection, arrives "
                "as a message.",
                {"task_id": TASK_ID, "plan": text("The steps you will take, and which files.")},
                ["task_id", "plan"],
            )
        )
    if agent is not None and team is not None and team.team.lead == agent.name:
        specs.append(
            spec(
                "review_plan",
                "Approve or reject a teammate's plan for a task. A rejection needs feedback: "
                "it goes back to the teammate.",
                {
                    "task_id": TASK_ID,
                    "approve": {"type": "boolean", "description": "true to approve."},
                    "feedback": text("Why it is rejected (required then), or a note."),
                },
                ["task_id", "approve"],
            )
        )
    return specs
