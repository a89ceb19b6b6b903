"""Serving `team web`: where it listens, the token rule, the line it prints.

On the loopback (the default) no token is needed unless one is given. Anywhere else the
server refuses to start without one: `--token T`, or the workspace's `.team/web.token`
(made on first use, readable by its owner only, printed once when it is made). The
socket listens before the ready line is printed, so a client that connects on reading
it is never refused.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from team.core.errors import UserError
from team.workspace.places import Workspace

DEFAULT_HOST = "127.0.0.1"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def stored_token(ws: Workspace) -> tuple[str, bool]:
    """The workspace's web token, and whether it was made just now."""
    from team.workspace.tokens import stored_token as at

    return at(ws.web_token)


def choose_token(ws: Workspace, host: str, given: str | None) -> tuple[str | None, bool]:
    """The token every request must carry (None: none, on the loopback only), and
    whether to print it (it was made now).

    Raises:
        UserError: an empty or too short token, or none possible off the loopback.
    """
    if given is not None:
        if len(given.strip()) < 16:
            raise UserError("--token: give at least 16 characters (or leave it out)")
        return given.strip(), False
    if is_loopback(host):
        return None, False
    return stored_token(ws)


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as e:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.listen(128)
    return sock


def serve(
    ws: Workspace,
    host: str,
    port: int,
    token: str | None,
    say: Callable[[str], None],
    open_browser: bool = False,
) -> None:
    """Serve the workspace until stopped (Ctrl-C, SIGTERM)."""
    import uvicorn

    from team.web.app import create_app

    ws.load_config()  # a bad team.toml is one line before anything listens
    token, made = choose_token(ws, host, token)
    sock = listen(host, port)
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    url = f"http://{shown}:{sock.getsockname()[1]}/"
    if token is None:
        say(f"team web: serving {url}")
    elif made:
        say(f"team web: serving {url}?token={token}")
        say(f"(the token is kept in {ws.web_token}; it is printed only this once)")
    else:
        say(f"team web: serving {url} (open it with ?token=<the token in {ws.web_token}>)")
    if open_browser:
        import webbrowser

        webbrowser.open(url + (f"?token={token}" if token and made else ""))
    # an open page keeps its stream: Ctrl-C closes it after 2 s rather than waiting on it
    config = uvicorn.Config(
        create_app(ws, token), log_level="warning", lifespan="off", timeout_graceful_shutdown=2
    )
    uvicorn.Server(config).run(sockets=[sock])
