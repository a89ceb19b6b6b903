"""A reader process for the mailbox crash tests.

    mailbox_reader.py ROOT SESSION_LOG

Takes one inbox into an agent's session log the way an agent does (team.agents.intake
with a real SessionLog: receive, record, ack). Prints "ready" once the log is loaded,
takes mail until the inbox is empty, and prints "drained". Tests kill it with SIGKILL
at random points and start it again.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from team.agents.intake import Intake
from team.agents.session import SessionLog
from team.conversation import TextBlock
from team.events import MemorySink
from team.mailbox.maildir import MaildirMailbox


def main() -> None:
    box = MaildirMailbox(Path(sys.argv[1]))
    session = SessionLog(Path(sys.argv[2]))
    session.load()
    intake = Intake("reader", box, session, MemorySink(), started_at=time.time())
    print("ready", flush=True)
    while box.has_pending():
        messages = intake.receive()
        # the same three steps as Agent._add_user: record (fsync), then acknowledge
        session.user([TextBlock(m.content) for m in messages], [m.id for m in messages])
        intake.ack()
    session.close()
    print("drained", flush=True)


if __name__ == "__main__":
    main()
