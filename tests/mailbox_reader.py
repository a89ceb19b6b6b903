"""A reader process for the mailbox tests: drains one inbox into a JSONL journal.

    mailbox_reader.py ROOT JOURNAL

Prints "ready" once the journal is loaded, drains until the inbox is empty, and prints
"drained". Tests kill it with SIGKILL at random points and start it again.
"""

from __future__ import annotations

import sys
from pathlib import Path

from team.mailbox.journal import JsonlJournal, drain
from team.mailbox.maildir import MaildirMailbox


def main() -> None:
    box = MaildirMailbox(Path(sys.argv[1]))
    with JsonlJournal(Path(sys.argv[2])) as journal:
        print("ready", flush=True)
        while box.has_pending():
            drain(box, journal)
    print("drained", flush=True)


if __name__ == "__main__":
    main()
