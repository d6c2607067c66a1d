"""The server the scripted models' call reaches: `get_weather(city)`, the call every scripted
model writes (support/model_files/scripted_families.py), written with the official SDK.

WEATHER_DELAY_S (seconds, default 0): how long a call takes, for Stop during a call and for
the window's stall measurements. WEATHER_STAMPS (a file): each call appends the wall-clock
times it began and ended, for bench/tool_loop.py to time the loop around the tool."""

from __future__ import annotations

import os
import time

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")


@server.tool(description="The weather in a city, today.")
async def get_weather(city: str) -> str:
    began = time.time()
    await anyio.sleep(float(os.environ.get("WEATHER_DELAY_S", "0")))
    stamps = os.environ.get("WEATHER_STAMPS")
    if stamps:
        with open(stamps, "a", encoding="utf-8") as file:
            file.write(f"{began} {time.time()}\n")
    return f"Sunny in {city}, 21 °C."


if __name__ == "__main__":
    server.run("stdio")
