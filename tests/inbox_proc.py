"""A reader or writer process for the inbox contract tests, against either backend.

    inbox_proc.py WORKSPACE SPEC read AGENT [--die-at claimed|recorded|ack:K]
    inbox_proc.py WORKSPACE SPEC write AGENT SENDER COUNT [--go FILE]

`read` is a real agent (built by `team.agents.build`) taking its inbox into its session
log with `Agent.take_inbox` (receive, record, ack): it prints "ready" once the log is
loaded, takes mail until the inbox is empty and prints "drained". `--die-at` makes it
kill itself (SIGKILL) at one exact point: after claiming, after recording (before the
first acknowledgement), or after acknowledging K messages. `write` waits for
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

from team.agents.build import Parts, build_agent
from team.core.events import MemorySink
from team.llm.scripted import ScriptedModel
from team.mailbox.message import MailMessage
from team.mailbox.waker import PollingWaker
from team.tasks import TaskBoard


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class DyingInbox:
    """The real inbox; the process is killed -9 at the chosen point of a drain."""

    def __init__(self, box, die_at: str | None) -> None:
        self.box = box
        self.die_at = die_at or ""
        self.acks = int(self.die_at[4:]) if self.die_at.startswith("ack:") else -1

    def receive(self):
        claims = self.box.receive()
        if claims and self.die_at == "claimed":
            die()
        return claims

    def done(self, claimed, **kw) -> None:
        if self.die_at == "recorded":
            die()  # the agent records before its first acknowledgement
        self.box.done(claimed, **kw)
        self.acks -= 1
        if self.acks == 0:
            die()

    def __getattr__(self, name: str):
        return getattr(self.box, name)


class DyingBackend:
    """The tier's backend, with `agent`'s inbox wrapped in a `DyingInbox`."""

    def __init__(self, backend, agent: str, die_at: str | None) -> None:
        self.backend = backend
        self.box = DyingInbox(backend.mailbox(agent), die_at)
        self.agent = agent

    def mailbox(self, agent: str):
        return self.box if agent == self.agent else self.backend.mailbox(agent)

    def waker(self, agent: str, stop):
        return PollingWaker(stop)


def read(tier: Tier, agent: str, die_at: str | None) -> None:
    parts = Parts(
        ws=tier.ws,
        config=tier.config,
        model=ScriptedModel(),
        sink=MemorySink(),
        board=TaskBoard(tier.ws.tasks_dir),
        inboxes=DyingBackend(tier.open(), agent, die_at),
    )
    reader = build_agent(parts, agent)
    reader.resume()
    print("ready", flush=True)
    mailbox = parts.inboxes.mailbox(agent)
    while mailbox.has_pending():
        reader.take_inbox()
    reader.close()
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
    r.add_argument("--die-at")
    w = sub.add_parser("write")
    w.add_argument("agent")
    w.add_argument("sender")
    w.add_argument("count", type=int)
    w.add_argument("--go", type=Path)
    args = p.parse_args()
    tier = Tier(args.spec, args.root)
    if args.cmd == "read":
        read(tier, args.agent, args.die_at)
    else:
        write(tier, args.agent, args.sender, args.count, args.go)
    sys.exit(0)


if __name__ == "__main__":
    main()
