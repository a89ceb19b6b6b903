"""An MCP server for the tests, written with the SDK's own server API (mcp 2.x `MCPServer`).

    python tests/mcp_server.py                  # stdio
    python tests/mcp_server.py --http PORTFILE  # streamable HTTP on 127.0.0.1, port written
    python tests/mcp_server.py --odd            # stdio, low-level: schemas the API refuses

Tools: add (a schema with bounds), echo, fail (the tool reports an error), sleep (async,
cancellable: past a timeout), hang (blocks the server's loop: it stops answering),
image (a PNG), pid (to kill -9 it), crash (exits in the middle of the call).
"""

import asyncio
import os
import socket
import struct
import sys
import time
import zlib
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field


def png(width: int, height: int, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A solid PNG, made by hand (zlib and struct, no imaging library)."""
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def build() -> MCPServer:
    # log_level: MCPServer() would otherwise call logging.basicConfig at INFO
    server = MCPServer("team-tests", version="1.0", log_level="WARNING")

    @server.tool()
    def add(
        a: Annotated[int, Field(description="The first number.")],
        b: Annotated[int, Field(ge=0, le=1000, description="The second, 0 to 1000.")],
    ) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def echo(text: str, repeat: int = 1) -> str:
        """Echo the text back, `repeat` times."""
        return text * repeat

    @server.tool()
    def fail(message: str = "it broke") -> str:
        """Always fails, with this message."""
        raise ToolError(message)

    @server.tool()
    async def sleep(seconds: float, mark: str = "") -> str:
        """Sleep, then say so (the server keeps answering meanwhile). `mark`: a file to
        write this server's pid to as it starts sleeping."""
        if mark:
            Path(mark).write_text(str(os.getpid()))
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    async def hang(seconds: float = 3600) -> str:
        """Block the server entirely: it answers nothing until it returns."""
        time.sleep(seconds)
        return "woke"

    @server.tool()
    def image(width: int = 64, height: int = 48) -> Image:
        """A red PNG of this size."""
        return Image(data=png(width, height), format="png")

    @server.tool()
    def pid() -> int:
        """This server's process id."""
        return os.getpid()

    @server.tool()
    def crash() -> str:
        """Exit in the middle of the call."""
        os._exit(3)

    return server


def odd_server():
    """A low-level server whose tools' schemas are passed through as written."""
    from mcp.server import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    ok = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        Tool(name="fine", description="A valid tool.", input_schema=ok),
        Tool(
            name="union",
            input_schema={"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
        ),
        Tool(name="brackets", input_schema={"type": "object", "properties": {"filter[id]": {}}}),
        Tool(name="dotted.name/with slash", input_schema=ok),
    ]

    async def list_tools(ctx, params):
        return ListToolsResult(tools=tools)

    async def call_tool(ctx, params):
        text = f"{params.name} called with {dict(params.arguments or {})}"
        return CallToolResult(content=[TextContent(type="text", text=text)])

    return Server("odd", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--odd"]:
        import anyio
        from mcp.server.stdio import stdio_server

        server = odd_server()

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
    elif argv[:1] == ["--http"]:
        import uvicorn

        app = build().streamable_http_app(host="127.0.0.1")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # before the port is told: a client connecting at once is queued
        Path(argv[1]).write_text(str(sock.getsockname()[1]))
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    else:
        build().run()


if __name__ == "__main__":
    main(sys.argv[1:])
