"""`team transcripts`: what each compaction archived under `.transcripts/<agent>/`.

File names are `<seq>-<utc>-<layer>.jsonl` (seq zero-padded) with one JSON message per
line; see `team.compaction.transcripts.TranscriptStore`, which writes them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from team.compaction.transcripts import parse_name
from team.core.errors import UserError
from team.workspace.places import Workspace


@dataclass(frozen=True)
class TranscriptFile:
    agent: str
    seq: int
    utc: str
    layer: str
    messages: int
    size: int  # bytes
    path: Path

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


def _count_messages(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def _agent_files(agent: str, folder: Path) -> list[TranscriptFile]:
    files = []
    for path in folder.glob("*.jsonl"):
        name = parse_name(path.name)
        if name is None:  # temp files and strays are not transcripts
            continue
        files.append(
            TranscriptFile(
                agent=agent,
                seq=name.seq,
                utc=name.utc,
                layer=name.layer,
                messages=_count_messages(path),
                size=path.stat().st_size,
                path=path,
            )
        )
    return sorted(files, key=lambda f: f.seq)


def _check_agent(ws: Workspace, agent: str) -> None:
    # An agent with transcripts is known even if it has left team.toml since; otherwise
    # the team file decides, so a typo is an error rather than an empty listing.
    if ws.transcripts_dir(agent).is_dir():
        return
    if not ws.config_path.exists():
        raise UserError(f"no transcripts for agent {agent!r} in {ws.transcripts_root}")
    ws.require_agent(ws.load_config(), agent)


def list_transcripts(ws: Workspace, agent: str | None = None) -> list[TranscriptFile]:
    """Every archived transcript, by agent then sequence number.

    Args:
        ws: the workspace.
        agent: only this agent's transcripts.

    Raises:
        UserError: `agent` is neither in team.toml nor has transcripts.
    """
    if agent is not None:
        _check_agent(ws, agent)
        agents = [agent]
    elif ws.transcripts_root.is_dir():
        agents = sorted(p.name for p in ws.transcripts_root.iterdir() if p.is_dir())
    else:
        agents = []
    files: list[TranscriptFile] = []
    for name in agents:
        folder = ws.transcripts_dir(name)
        if folder.is_dir():
            files.extend(_agent_files(name, folder))
    return files
