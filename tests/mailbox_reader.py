"""A reader process for the mailbox crash test: a real agent taking in its inbox.

    mailbox_reader.py WORKSPACE [KILL_AT]

Builds agent `alice` of a one-agent team in WORKSPACE with the real builder and calls
`Agent.take_inbox` (receive, record in the session log, acknowledge) until the inbox is
empty, then prints "drained". KILL_AT makes the process SIGKILL itself at an exact
point, so a test knows each kill landed mid-drain:

    receive:N   right after the Nth non-empty receive (claimed, nothing recorded yet)
    done:N      just before the Nth message is marked done (recorded, not all acked)
"""

from __future__ import annotations

import os
import signal
import sys

from team.agents.build import Parts, build_agent
from team.backends.base import FilesBackend
from team.core.events import MemorySink
from team.llm.scripted import ScriptedModel
from team.mailbox.maildir import MaildirMailbox
from team.mailbox.waker import PollingWaker
from team.tasks import TaskBoard
from team.workspace.config import parse_config
from team.workspace.places import Workspace


class DyingMailbox:
    """A real Maildir inbox whose owner process dies at the chosen call."""

    def __init__(self, box: MaildirMailbox, kill_at: str | None) -> None:
        self.box = box
        kind, _, n = (kill_at or "none:0").partition(":")
        self.kind, self.left = kind, int(n)

    def _count(self, kind: str) -> None:
        if self.kind == kind:
            self.left -= 1
            if self.left == 0:
                os.kill(os.getpid(), signal.SIGKILL)

    def receive(self):
        claims = self.box.receive()
        if claims:
            self._count("receive")
        return claims

    def done(self, claimed) -> None:
        self._count("done")
        self.box.done(claimed)

    def __getattr__(self, name: str):
        return getattr(self.box, name)


class DyingInboxes(FilesBackend):
    def __init__(self, ws: Workspace, kill_at: str | None) -> None:
        super().__init__(ws)
        self.kill_at = kill_at

    def mailbox(self, agent: str):
        box = super().mailbox(agent)
        return DyingMailbox(box, self.kill_at) if agent == "alice" else box


def main() -> None:
    ws = Workspace.at(sys.argv[1])
    kill_at = sys.argv[2] if len(sys.argv) > 2 else None
    config = parse_config({"agents": [{"name": "alice", "role": "reader"}]}, "test")
    parts = Parts(
        ws=ws,
        config=config,
        model=ScriptedModel(),
        sink=MemorySink(),
        board=TaskBoard(ws.tasks_dir),
        inboxes=DyingInboxes(ws, kill_at),
    )
    agent = build_agent(parts, "alice", waker=PollingWaker(parts.stop))
    agent.resume()
    print("ready", flush=True)
    mailbox = parts.inboxes.mailbox("alice")
    while mailbox.has_pending():
        agent.take_inbox()
    agent.close()
    print("drained", flush=True)


if __name__ == "__main__":
    main()
