"""Making a conversation valid again after its session log lost records.

A damaged middle record of `session.jsonl` is skipped on load; what is left can break
the Messages API's rules (a tool result whose call was in the lost record, a call whose
result was). Sending it would be a 400 on every call, and the agent would crash-loop.
`repair` reshapes it into a valid conversation without dropping any text: results whose
call is gone become plain text, calls whose result is gone are answered as interrupted.
"""

from __future__ import annotations

from team.agents.session.log import SessionLog
from team.compaction.history import History
from team.core.conversation import (
    Block,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    append_user,
    render_block,
)

LOST_RESULT = (
    "Interrupted: this call's result was lost from the session log, so it is unknown. "
    "Run it again if you still need it."
)
LOST_START = "(The start of this conversation was lost from the session log.)"


def load_repaired(session: SessionLog) -> tuple[History, str | None]:
    """The log's conversation, valid for the API, and one line saying what was mended
    (None when the log was whole): a damaged log never makes a crash loop."""
    history = session.load()
    fixed, fixes = repair(history.messages)
    if fixes:
        history.messages = fixed
        history.usage_tokens, history.usage_index = None, 0  # the usage was for another text
    if not (fixes or session.skipped):
        return history, None
    lines = ", ".join(map(str, session.skipped[:5])) or "none"
    detail = (
        f"skipped {len(session.skipped)} unreadable records (lines {lines}); "
        f"{len(fixes)} repairs" + (f", e.g. {fixes[0]}" if fixes else "")
    )
    return history, f"{session.path}: {detail}"


def repair(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """A valid conversation holding everything `messages` holds, and what was changed.

    A trailing assistant turn's unanswered calls are left alone: resuming answers
    those as interrupted anyway (`SessionLog.interrupted_results`).
    """
    out: list[Message] = []
    fixes: list[str] = []
    seen_ids: set[str] = set()
    for m in messages:
        if m.role == "user":
            _add_user(out, m, fixes)
            continue
        blocks: list[Block] = []
        for b in m.content:
            if isinstance(b, ToolResultBlock) or (isinstance(b, ToolUseBlock) and b.id in seen_ids):
                blocks.append(TextBlock(render_block(b)))  # not valid here: keep it as text
                fixes.append(f"kept a misplaced {_kind(b)} as text")
            elif isinstance(b, TextBlock) and not b.text.strip():
                continue
            else:
                if isinstance(b, ToolUseBlock):
                    seen_ids.add(b.id)
                blocks.append(b)
        if not blocks:
            fixes.append("dropped an empty assistant turn")
            continue
        if not out:
            out.append(Message.user(LOST_START))
            fixes.append("the first user turn was lost")
        elif out[-1].role == "assistant" and out[-1].tool_uses():
            results = [_lost(u) for u in out[-1].tool_uses()]
            out.append(Message("user", tuple(results)))
            fixes.append(f"answered {len(results)} calls whose results were lost")
        out.append(Message("assistant", tuple(blocks)))
    return out, fixes


def _add_user(out: list[Message], m: Message, fixes: list[str]) -> None:
    prev = out[-1] if out and out[-1].role == "assistant" else None
    calls = {u.id: u for u in prev.tool_uses()} if prev else {}
    results: list[Block] = []
    others: list[Block] = []
    answered: set[str] = set()
    for b in m.content:
        if (
            isinstance(b, ToolResultBlock)
            and b.tool_use_id in calls
            and b.tool_use_id not in answered
        ):
            answered.add(b.tool_use_id)
            results.append(b)
        elif isinstance(b, ToolResultBlock | ToolUseBlock):
            others.append(TextBlock(render_block(b)))
            fixes.append(f"kept a {_kind(b)} whose call was lost as text")
        elif isinstance(b, TextBlock) and not b.text.strip():
            continue
        else:
            others.append(b)
    missing = [u for uid, u in calls.items() if uid not in answered]
    if missing:
        fixes.append(f"answered {len(missing)} calls whose results were lost")
    results += [_lost(u) for u in missing]
    blocks = results + others
    if not blocks:
        fixes.append("dropped an empty user turn")
        return
    append_user(out, *blocks)  # merges into a trailing user turn, results first


def _lost(use: ToolUseBlock) -> ToolResultBlock:
    return ToolResultBlock(use.id, LOST_RESULT, use.name, is_error=True)


def _kind(b: Block) -> str:
    return "tool result" if isinstance(b, ToolResultBlock) else "tool call"
