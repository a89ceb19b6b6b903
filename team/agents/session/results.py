"""What is too large for the context is kept whole beside it (docs/design.md, "Tool
results that fit").

One tool result of 2 MB is more than a 200k-token window, and every request of the
segment would carry it again. So every block that enters an agent's conversation
passes `Results`: a tool result, an inbox message or a note longer than the cap is
written whole to `.team/agents/<agent>/results/<id>.txt` (tmp + fsync + rename, before
the record that names it), and the conversation keeps its head, its tail and one line
saying how to read the rest (`read_result{id, offset?, limit?}`). The session log,
the transcripts, the summaries and every later request then hold what the model was
shown; the whole is on disk, under `.team/`, which no agent can write.

Every tool passes here (the loop records every user turn through `Context.record`),
so bash, the file and board tools, and MCP tools get the same cap; mail is bounded as
it is taken in (`Intake`), so its data (`InboxMail.body`) and its text agree. Replay
records through the same `Context`, so it replays under the same rule.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import replace
from pathlib import Path

from team.core.conversation import Block, InboxMail, TextBlock, ToolResultBlock
from team.mailbox.message import MailMessage

HEAD_SHARE = 0.6
TAIL_SHARE = 0.3  # the rest of the cap is the note between them
KEY = re.compile(r"^[A-Za-z0-9_.-]{1,160}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class ResultNotFound(Exception):
    """No kept result has that id (the model's typo, or another agent's id)."""


class Results:
    """One agent's results folder and the cap of what its context shows.

    Args:
        folder: where whole texts are kept (`Workspace.results_dir`).
        cap: the most characters one block brings into the context.
        fsync: make each kept text durable before the record naming it (off in replay).
    """

    def __init__(self, folder: Path, cap: int, *, fsync: bool = True) -> None:
        self.folder = folder
        self.cap = cap
        self.fsync = fsync

    # -- bounding ------------------------------------------------------------------------

    def blocks(self, blocks: tuple[Block, ...]) -> tuple[Block, ...]:
        """`blocks` with every oversized one cut (the same tuple when none is)."""
        if not any(_size(b) > self.cap for b in blocks):
            return blocks
        return tuple(self.block(b) for b in blocks)

    def block(self, b: Block) -> Block:
        """`b`, or its head and tail with a pointer to the whole, kept on disk."""
        if isinstance(b, TextBlock) and b.mail is not None:
            mail = self.mail(b.mail)
            return b if mail is b.mail else replace(b, text=mail.render(), mail=mail)
        if isinstance(b, ToolResultBlock) and not b.mail and len(b.content) > self.cap:
            key = self.keep(b.tool_use_id or "result", b.content)
            return replace(b, content=self.cut(key, b.content, "result"))
        if isinstance(b, TextBlock) and len(b.text) > self.cap:
            key = self.keep(f"text-{uuid.uuid4().hex[:12]}", b.text)
            return replace(b, text=self.cut(key, b.text, "text"))
        return b  # a read_inbox result: each message in it was bounded as it was taken in

    def mail(self, mail: InboxMail) -> InboxMail:
        """The message with a body the context can hold: a preview when it is long."""
        if len(mail.body) <= self.cap:
            return mail
        key = self.keep(f"mail-{mail.id}", mail.body)
        return replace(mail, body=self.cut(key, mail.body, "message"))

    def message(self, msg: MailMessage) -> MailMessage:
        """An inbox message as it enters the conversation (see `mail`)."""
        if len(msg.content) <= self.cap:
            return msg
        key = self.keep(f"mail-{msg.id}", msg.content)
        return msg.model_copy(update={"content": self.cut(key, msg.content, "message")})

    def cut(self, key: str, text: str, what: str) -> str:
        """Head, one line on where the whole is and how to read on, tail."""
        head, tail = int(self.cap * HEAD_SHARE), int(self.cap * TAIL_SHARE)
        lines = text.count("\n") + 1
        note = (
            f"\n[... {len(text) - head - tail:,} of {len(text):,} characters ({lines:,} "
            f"lines) of this {what} are not shown here. The whole {what} is kept: "
            f'read_result{{"id": "{key}", "offset": {head}}} reads on from here, '
            f"up to {self.read_limit:,} characters a call.]\n"
        )
        return text[:head] + note + text[len(text) - tail :]

    # -- keeping and reading -------------------------------------------------------------

    def keep(self, name: str, text: str) -> str:
        """Write `text` whole under a key made from `name`; returns the key."""
        base = _UNSAFE.sub("_", name)[:120] or "result"
        self.folder.mkdir(parents=True, exist_ok=True)
        key, n = base, 1
        while (self.folder / f"{key}.txt").exists():  # an id seen twice (a replayed log)
            n += 1
            key = f"{base}-{n}"
        target = self.folder / f"{key}.txt"
        tmp = target.with_name(f".{key}.{uuid.uuid4().hex[:8]}.tmp")
        with open(tmp, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)  # rename: a reader never sees half of it
        return key

    @property
    def read_limit(self) -> int:
        """The most characters one `read_result` returns: its answer fits the cap."""
        return max(100, self.cap - 300)

    def read(self, key: str, offset: int = 0, limit: int | None = None) -> str:
        """Characters `offset` to `offset + limit` of a kept text, said as such.

        Raises:
            ResultNotFound: no kept text has that key.
            ValueError: a negative offset or a limit below 1.
        """
        if not KEY.match(key):
            raise ResultNotFound(f"no kept result {key!r} (ids look like toolu_01ab...)")
        path = self.folder / f"{key}.txt"
        try:
            text = path.read_text(encoding="utf-8", errors="surrogatepass")
        except FileNotFoundError:
            raise ResultNotFound(f"no kept result {key!r}") from None
        if offset < 0:
            raise ValueError("offset must be 0 or more")
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1")
        limit = min(limit or self.read_limit, self.read_limit)
        total = len(text)
        start = min(offset, total)
        end = min(total, start + limit)
        out = f"[{key}: characters {start:,}-{end:,} of {total:,}]\n{text[start:end]}"
        if end < total:
            return out + f'\n[... read_result{{"id": "{key}", "offset": {end}}} reads on]'
        return out + "\n[end]"


def _size(block: Block) -> int:
    if isinstance(block, TextBlock):
        return max(len(block.text), len(block.mail.body) if block.mail else 0)
    if isinstance(block, ToolResultBlock):
        return len(block.content)
    return 0
