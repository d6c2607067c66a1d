"""A well-behaved MCP server written with the official SDK (MCPServer over stdio, or Streamable
HTTP from a test's thread): arithmetic, echo, a slow tool, an image, structured content, a
tool that changes the tool list and says so, and one that shows the child's environment.

`python toolbox.py` serves stdio; `build()` gives the server for a test to serve over HTTP."""

from __future__ import annotations

import base64
import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, TextContent
from pydantic import BaseModel

# A 1x1 PNG (a red pixel): small enough for any thumbnail cap.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


class Sum(BaseModel):
    total: int
    terms: list[int]


def build() -> MCPServer:
    server = MCPServer("toolbox")

    @server.tool(description="Add two whole numbers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Say the text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Wait, then say how long.")
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="A red pixel.")
    def image() -> list:
        return [TextContent(type="text", text="a pixel:"),
                ImageContent(type="image", data=base64.b64encode(PIXEL_PNG).decode(), mime_type="image/png")]

    @server.tool(description="The sum, as structured content.")
    def structured(terms: list[int]) -> Sum:
        return Sum(total=sum(terms), terms=terms)

    @server.tool(description="Offer one more tool, and tell the client the list changed.")
    async def grow(name: str, ctx: Context) -> str:
        server.add_tool(lambda: f"I am {name}", name=name, description="added by grow")
        await ctx.notify_tools_changed()  # 2026-era clients, through subscriptions/listen
        await ctx.session.send_tool_list_changed()  # handshake-era clients, as a notification
        return f"added {name}"

    @server.tool(description="The server's environment, as JSON.")
    def env_dump() -> dict:
        return dict(os.environ)

    @server.tool(description="The request's headers (over HTTP), as JSON.")
    def headers(ctx: Context) -> dict:
        return dict(ctx.headers or {})

    @server.tool(description="Fails as a tool does.")
    def fail(why: str) -> str:
        raise ValueError(why)

    return server


if __name__ == "__main__":
    print("toolbox: starting", file=sys.stderr, flush=True)
    build().run("stdio")
