"""Transcripts: the full history of a segment, archived before it is compacted away."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from team.conversation import Message

_SEQ = re.compile(r"^(\d+)-")


class TranscriptStore:
    """`.transcripts/<agent>/<seq>-<utc>-<layer>.jsonl`, one JSON message per line.

    Names never collide: the sequence number is claimed by creating the final name with
    `os.link` (which fails if it exists) from a fully written, fsynced temp file. Two
    compactions in the same second get different sequence numbers, and a file is never
    overwritten, so a reader never sees half a transcript.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    def _next_seq(self) -> int:
        best = 0
        if self.root.is_dir():
            for name in os.listdir(self.root):
                m = _SEQ.match(name)
                if m:
                    best = max(best, int(m.group(1)))
        return best + 1

    def write(self, messages: list[Message], layer: str) -> Path:
        """Archive `messages` (full text) and return the new file's path."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".tmp-{os.getpid()}-{id(messages)}-{datetime.now(UTC).timestamp()}"
        with open(tmp, "w", encoding="utf-8") as f:
            for m in messages:
                f.write(json.dumps(m.to_dict(), ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            seq = self._next_seq()
            while True:
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
                final = self.root / f"{seq:04d}-{stamp}-{layer}.jsonl"
                try:
                    os.link(tmp, final)  # link, not rename: fails instead of overwriting
                    break
                except FileExistsError:
                    seq += 1
        finally:
            tmp.unlink(missing_ok=True)
        dfd = os.open(self.root, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        return final

    def list(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob("*.jsonl") if _SEQ.match(p.name))


def read_transcript(path: Path) -> list[Message]:
    with open(path, encoding="utf-8") as f:
        return [Message.from_dict(json.loads(line)) for line in f if line.strip()]
