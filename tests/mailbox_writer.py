"""A writer process for the mailbox tests: delivers messages into one inbox.

    mailbox_writer.py ROOT SENDER COUNT [--go FILE] [--size BYTES]

Waits for FILE to exist (so all writers start together), then delivers COUNT messages
whose `seq` field counts up from 0. Prints "tmp-ready" first, so a test can time a kill.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from team.mailbox.maildir import MaildirMailbox
from team.mailbox.message import MailMessage


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("sender")
    p.add_argument("count", type=int)
    p.add_argument("--go", type=Path)
    p.add_argument("--size", type=int, default=0)
    args = p.parse_args()
    box = MaildirMailbox(args.root)
    print("ready", flush=True)
    deadline = time.monotonic() + 30
    while args.go and not args.go.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    pad = "x" * args.size
    for i in range(args.count):
        box.deliver(
            MailMessage.model_validate(
                {"from": args.sender, "to": "alice", "content": f"{args.sender} {i}{pad}", "seq": i}
            )
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
