"""The context a compaction starts: the identity block, the summary, the transcript's
path, and what the model had not seen yet (docs/design.md, "Compaction")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from team.compaction.clip import clip_text
from team.compaction.history import History
from team.core.conversation import Message, TaskNote, TextBlock, ToolResultBlock
from team.llm.base import AgentFacts

CARRY_CHARS = 4000  # unseen tool output carried into the new context, per result


def new_context(
    identity: str,
    summary: str,
    transcript: Path,
    layer: str,
    history: History,
    facts: AgentFacts | None,
) -> Message:
    """Identity, summary and transcript path in one block (which names the open
    tasks as data too), then what the model has not seen yet, then "continue"."""
    head = "\n\n".join(
        [
            identity,
            f"Your conversation was compacted ({layer}, segment {history.segment + 1}). "
            f"Summary of everything before this point:\n\n{summary}",
            f"The full transcript is in {transcript} (read_file it if you need details).",
        ]
    )
    mine = tuple(TaskNote(t, "open", s) for t, s in facts.tasks) if facts else ()
    blocks: list[TextBlock] = [TextBlock(head, tasks=mine)]
    carried = unseen(history)
    if carried:
        blocks.append(TextBlock("New since your last turn (not yet answered):"))
        blocks += carried
    blocks.append(TextBlock("Continue your work from here."))
    return Message("user", tuple(blocks))


def unseen(history: History) -> list[TextBlock]:
    """Content after the last assistant turn: the model has not seen it yet.

    Text (inbox messages, reminders) is carried in full, with its data: it is
    instructions. Tool results, `read_inbox` included, are carried up to
    `CARRY_CHARS` each, with a pointer to the transcript for the rest.
    """
    if not history.messages or history.messages[-1].role != "user":
        return []
    if len(history.messages) == 1:  # the segment is only this message: nothing to add
        return []
    out: list[TextBlock] = []
    for b in history.messages[-1].content:
        if isinstance(b, ToolResultBlock) and b.mail:  # read_inbox: the messages
            out += [TextBlock.of_mail(m) for m in b.mail]
        elif isinstance(b, ToolResultBlock):
            text = b.content
            if len(text) > CARRY_CHARS:
                text = text[:CARRY_CHARS] + "\n[... cut here; the full output is in the transcript]"
            text += "".join(f"\n{i.describe()}" for i in b.images)  # in the transcript
            out.append(TextBlock(f"[result of {b.name or 'tool'}]\n{text}", tasks=b.tasks))
        elif isinstance(b, TextBlock):
            out.append(replace(b, text=clip_text(b.text)))  # a 10 MB message is cut
    return out
