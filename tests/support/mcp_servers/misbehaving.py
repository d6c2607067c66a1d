"""MCP servers that misbehave, one way each: `python misbehaving.py MODE`.

    crash       a tool `crash` that ends the process mid-call (after a word on stderr), and
                a tool `ok` that answers, to see it back after its restart
    hang        a tool `hang` that never answers
    huge        a tool `huge` that returns 12 MB of text (and one of 12 MB of non-ASCII text)

    crash, hang and huge also offer `get_weather(city)`, misbehaving the same way: the call the
    suite's scripted models write (support/model_files/scripted_families.py), so a model in the
    window meets each misbehaviour as a user's would.
    many        400 tools, some named with HTML, a right-to-left override, control characters
                and spaces, and a 100 KB description
    garbage     prints lines that are not JSON-RPC on stdout, and nothing else
    mute        reads its input and never answers, not even initialize

The SDK ones are MCPServer's own; `garbage` and `mute` are plain Python, as a broken program is.
"""

from __future__ import annotations

import os
import sys
import time

HUGE_CHARS = 12_000_000


def sdk_server(mode: str):
    import anyio
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(f"misbehaving-{mode}")
    if mode == "crash":
        @server.tool(description="Ends the server's process before it answers.")
        def crash() -> str:
            print("crash: giving up on purpose", file=sys.stderr, flush=True)
            os._exit(7)

        @server.tool(name="get_weather", description="Ends the server's process before it answers.")
        def crash_weather(city: str) -> str:
            return crash()

        @server.tool(description="Answers.")
        def ok() -> str:
            return "ok"
    elif mode == "hang":
        @server.tool(description="Never answers.")
        async def hang() -> str:
            await anyio.sleep_forever()
            return ""

        @server.tool(name="get_weather", description="Never answers.")
        async def hang_weather(city: str) -> str:
            return await hang()

        @server.tool(description="Answers.")
        def ok() -> str:
            return "ok"
    elif mode == "huge":
        @server.tool(description="12 MB of text.", structured_output=False)
        def huge() -> str:
            return "x" * HUGE_CHARS

        @server.tool(description="12 MB of text, each character two bytes of UTF-8.", structured_output=False)
        def huge_accents() -> str:
            return "é" * (HUGE_CHARS // 2)

        @server.tool(name="get_weather", description="12 MB of text.", structured_output=False)
        def huge_weather(city: str) -> str:
            return huge()
    elif mode == "many":
        bad = ["<b>bold</b>", "<img src=x onerror=alert(1)>", "evil\u202etxt.exe", "bell\x07", "new\nline",
               "has space", "tab\there", "nul\x00byte", "", "x" * 129]
        def fine() -> str:
            return "fine"

        for index in range(400):
            name = bad[index] if index < len(bad) else f"tool_{index:03d}"
            description = "y" * 100_000 if index == 399 else f"<i>tool</i> number {index}"
            server.add_tool(fine, name=name, description=description)
    else:
        raise SystemExit(f"unknown mode {mode}")
    return server


def garbage() -> None:
    for line in ("hello, I am not JSON-RPC", "Traceback (most recent call last): oops"):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    time.sleep(3600)


def mute() -> None:
    for _ in sys.stdin:
        pass  # read, and never answer
    time.sleep(3600)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "garbage":
        garbage()
    elif mode == "mute":
        mute()
    else:
        sdk_server(mode).run("stdio")
