"""Serving `team mcp`: over stdio (what an MCP client starts), or streamable HTTP on
127.0.0.1 with a bearer token.

Over HTTP the token is made once and kept in `.team/mcp.token` (readable by its owner
only), and every request must carry `Authorization: Bearer <token>`: anything on the
machine can reach 127.0.0.1, and this server can steer the team. The SDK also refuses
requests whose Host is not the loopback one (DNS rebinding). The socket listens before
the ready line is printed, so a client that connects on reading it is never refused.
"""

from __future__ import annotations

import hmac
import socket
from collections.abc import Callable
from typing import Any

from team.serve.tools import build
from team.workspace.places import Workspace

HOST = "127.0.0.1"


def serve_stdio(ws: Workspace) -> None:
    """Serve on stdin/stdout until the client closes them."""
    build(ws).run()


def serve_http(ws: Workspace, port: int, say: Callable[[str], None]) -> None:
    """Serve on http://127.0.0.1:PORT/mcp (0: any free port) until stopped."""
    import uvicorn

    server = build(ws)
    token = bearer_token(ws)
    app = BearerGate(server.streamable_http_app(host=HOST), token)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    say(
        f"team mcp: serving http://{HOST}:{sock.getsockname()[1]}/mcp "
        f"(send Authorization: Bearer <the token in {ws.mcp_token}>)"
    )
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def bearer_token(ws: Workspace) -> str:
    """The workspace's token for `team mcp --http`, made on first use."""
    from team.workspace.tokens import stored_token

    return stored_token(ws.mcp_token)[0]


class BearerGate:
    """ASGI middleware: an HTTP request without the right bearer token gets a 401 (the
    lifespan passes through: it starts the SDK's session manager)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                headers = [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": b"missing or wrong token\n"})
                return
        await self.app(scope, receive, send)
