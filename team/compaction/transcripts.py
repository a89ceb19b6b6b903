"""Transcripts: the full history of a segment, archived before it is compacted away."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from team.core.conversation import Message

_NAME = re.compile(r"^(?P<seq>\d+)-(?P<utc>.+)-(?P<layer>[A-Za-z]+)\.jsonl$")


@dataclass(frozen=True)
class TranscriptName:
    """What a transcript's file name says: `<seq>-<utc>-<layer>.jsonl`."""

    seq: int
    utc: str
    layer: str

    def __str__(self) -> str:
        return f"{self.seq:04d}-{self.utc}-{self.layer}.jsonl"


def parse_name(name: str) -> TranscriptName | None:
    """The parts of a transcript file name; None for temp files and strays."""
    m = _NAME.match(name)
    return TranscriptName(int(m["seq"]), m["utc"], m["layer"]) if m else None


class TranscriptStore:
    """`.transcripts/<agent>/<seq>-<utc>-<layer>.jsonl`, one JSON message per line.

    Names never collide: the sequence number is claimed by creating the final name with
    `os.link` (which fails if it exists) from a fully written, fsynced temp file. Two
    compactions in the same second get different sequence numbers, and a file is never
    overwritten, so a reader never sees half a transcript.
    """

    def __init__(self, root: Path, workspace: Path | None = None) -> None:
        """`workspace`: transcripts are named relative to it (`shown`), as the agent and
        the person see them."""
        self.root = root
        self.workspace = workspace
        self._last_seq: int | None = None  # listed once; then counted (a long run has
        # thousands of transcripts, and listing them all before each one grew with the run)

    def _next_seq(self) -> int:
        if self._last_seq is not None:
            return self._last_seq + 1  # another writer's file only makes the link retry
        best = 0
        if self.root.is_dir():
            for name in os.listdir(self.root):
                if parsed := parse_name(name):
                    best = max(best, parsed.seq)
        return best + 1

    def shown(self, path: Path) -> Path:
        """`path` as the agent is told it: relative to the workspace when there is one."""
        return path.relative_to(self.workspace) if self.workspace else path

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
                final = self.root / str(TranscriptName(seq, stamp, layer))
                try:
                    os.link(tmp, final)  # link, not rename: fails instead of overwriting
                    self._last_seq = seq
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


def transcript_lines(path: Path) -> Iterator[tuple[int, Message | ValueError]]:
    """Each message of a transcript with its line number; a line that is not one gives
    the error instead, so a reader shows the rest (the format's one reader).

    Raises:
        OSError, UnicodeDecodeError: the file cannot be read as text.
    """
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, Message.from_dict(json.loads(line))
            except (AttributeError, KeyError, TypeError, ValueError) as e:  # a foreign shape
                yield n, ValueError(f"line {n} is not a message: {e}")


def read_transcript(path: Path) -> list[Message]:
    """Every message of a transcript.

    Raises:
        ValueError: a line is not a message (a damaged or foreign file).
    """
    out = []
    for _, m in transcript_lines(path):
        if isinstance(m, ValueError):
            raise m
        out.append(m)
    return out
