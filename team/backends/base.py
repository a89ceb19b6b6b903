"""Where a team's shared state lives: inboxes, the task board and agent leases.

`files` (the default) keeps it all under `.team/` on this machine. A Redis URL puts it on
one Redis server, so agents on several machines ("nodes") form one team; session logs,
transcripts and `events.db` stay on the node that runs the agent either way
(README, "A team across machines").

`open_backend` picks one; the rest of the code sees only the `Backend` protocol.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Protocol

from team.mailbox.maildir import MaildirMailbox
from team.workspace.backend_spec import FILES, chosen
from team.workspace.places import Workspace

if TYPE_CHECKING:  # imported where used: `team send` needs neither watchfiles nor the board
    from team.mailbox.waker import Waker
    from team.tasks import TaskBoard
    from team.workspace.config import TeamConfig
    from team.workspace.snapshot import ConfigView


class Backend(Protocol):
    """The seams the runtime and the CLI use; `FilesBackend` and `RedisBackend`."""

    spec: str
    """"files", or the Redis URL."""

    def mailbox(self, agent: str): ...
    def waker(self, agent: str, stop: threading.Event) -> Waker: ...
    def board(self): ...
    def close(self) -> None: ...


def node_name() -> str:
    """This node's name in leases and consumer names: TEAM_NODE, else the host name."""
    import socket  # not at load: `team send` and `team status` on files never ask

    return os.environ.get("TEAM_NODE", "").strip() or socket.gethostname()


class FilesBackend:
    """Everything under the workspace's `.team/`: one machine."""

    spec = FILES

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def mailbox(self, agent: str) -> MaildirMailbox:
        return MaildirMailbox(self.ws.inbox_dir(agent))

    def waker(self, agent: str, stop: threading.Event) -> Waker:
        from team.mailbox.waker import make_waker

        return make_waker([self.mailbox(agent).new_dir], stop)

    def board(self) -> TaskBoard:
        from team.tasks import TaskBoard

        return TaskBoard(self.ws.tasks_dir)

    def close(self) -> None:
        pass


class RedisBackend:
    """Inboxes as streams, the board and leases on one Redis server.

    Args:
        url: the Redis URL.
        namespace: the team's name (keys start with `team:<name>:`).
        wait: wait out Redis outages (running agents) instead of failing (the CLI).
        stop: ends such a wait.
        node: this node's name (default `node_name()`).
    """

    def __init__(
        self,
        url: str,
        namespace: str,
        *,
        wait: bool = False,
        stop: threading.Event | None = None,
        node: str | None = None,
    ) -> None:
        from team.backends.redis_link import RedisLink

        self.spec = url
        self.node = node or node_name()
        self.link = RedisLink(url, namespace, wait=wait, stop=stop)
        self._boxes: dict[str, object] = {}
        self._lock = threading.Lock()

    def mailbox(self, agent: str):
        """The agent's inbox; one object per agent, so its claims are remembered."""
        from team.backends.redis_inbox import RedisMailbox

        with self._lock:
            box = self._boxes.get(agent)
            if box is None:
                box = self._boxes[agent] = RedisMailbox(self.link, agent, self.node)
            return box

    def waker(self, agent: str, stop: threading.Event) -> Waker:
        from team.backends.redis_inbox import StreamWaker

        return StreamWaker(self.mailbox(agent), stop)

    def board(self):
        """The task board on this Redis (`team.backends.redis_board.RedisBoard`)."""
        from team.backends.redis_board import RedisBoard

        return RedisBoard(self.link)

    def close(self) -> None:
        self.link.close()


def open_backend(
    ws: Workspace,
    config: TeamConfig | ConfigView,
    *,
    wait: bool = False,
    stop: threading.Event | None = None,
    node: str | None = None,
) -> FilesBackend | RedisBackend:
    """The team's backend: TEAM_BACKEND, else `[team] backend`.

    Args:
        wait: for running agents: wait while Redis is down. The CLI fails fast instead.

    Raises:
        ConfigError: TEAM_BACKEND is not a backend.
    """
    try:
        spec = chosen(config.team.backend)
    except ValueError as e:
        from team.workspace.config import ConfigError

        raise ConfigError(str(e)) from None
    if spec == FILES:
        return FilesBackend(ws)
    return RedisBackend(spec, config.team.name, wait=wait, stop=stop, node=node)
