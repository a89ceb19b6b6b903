"""A reader or writer process for the inbox contract tests, against either backend.

    inbox_proc.py WORKSPACE SPEC read AGENT SESSION_LOG [--die-at claimed|recorded|ack:K]
    inbox_proc.py WORKSPACE SPEC write AGENT SENDER COUNT [--go FILE]

`read` takes the inbox into a session log the way an agent does (team.agents.intake with
a real SessionLog: receive, record, ack), prints "ready" once the log is loaded, takes
mail until the inbox is empty and prints "drained". Tests kill it with SIGKILL at random
points and start it again; `--die-at` makes it kill itself (SIGKILL) at one exact point:
after claiming, after recording, or after acknowledging K messages. `write` waits for
FILE (so all writers start together), then delivers COUNT messages whose `seq` counts up
from 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from tiers import Tier

from team.agents.intake import Intake
from team.agents.session import SessionLog
from team.conversation import TextBlock
from team.events import MemorySink
from team.mailbox.message import MailMessage


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class DyingInbox:
    """The real inbox, killed -9 after its K-th acknowledgement."""

    def __init__(self, box, acks: int) -> None:
        self.box = box
        self.left = acks

    def done(self, claimed, **kw) -> None:
        self.box.done(claimed, **kw)
        self.left -= 1
        if self.left == 0:
            die()

    def __getattr__(self, name: str):
        return getattr(self.box, name)


def read(tier: Tier, agent: str, log: Path, die_at: str | None) -> None:
    box = tier.box(agent)
    if die_at and die_at.startswith("ack:"):
        box = DyingInbox(box, int(die_at[4:]))
    session = SessionLog(log)
    session.load()
    intake = Intake(agent, box, session, MemorySink(), started_at=time.time())
    print("ready", flush=True)
    while box.has_pending():
        messages = intake.receive()
        if die_at == "claimed":
            die()
        # the same three steps as the agent: record (fsync), then acknowledge
        session.user([TextBlock(m.content) for m in messages], [m.id for m in messages])
        if die_at == "recorded":
            die()
        intake.ack()
    session.close()
    print("drained", flush=True)


def write(tier: Tier, agent: str, sender: str, count: int, go: Path | None) -> None:
    box = tier.box(agent)
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while go and not go.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    for i in range(count):
        box.deliver(
            MailMessage.model_validate(
                {"from": sender, "to": agent, "content": f"{sender} {i}", "seq": i}
            )
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("spec")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("read")
    r.add_argument("agent")
    r.add_argument("log", type=Path)
    r.add_argument("--die-at")
    w = sub.add_parser("write")
    w.add_argument("agent")
    w.add_argument("sender")
    w.add_argument("count", type=int)
    w.add_argument("--go", type=Path)
    args = p.parse_args()
    tier = Tier(args.spec, args.root)
    if args.cmd == "read":
        read(tier, args.agent, args.log, args.die_at)
    else:
        write(tier, args.agent, args.sender, args.count, args.go)
    sys.exit(0)


if __name__ == "__main__":
    main()
