"""The window with tool servers, as the application opens it, for the agent loop's GUI tests and
bench: the real llama.cpp on the scripted Qwen3 model (support/model_files/scripted_models.py:
its greedy reply is always the call `get_weather {"city": "Paris"}`) and the servers given,
saved in Settings → Tools as a user would have them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.tool_servers.types import ServerConfig, Transport
from app.ui.chat.tool_card import CardState, ToolCallCard
from support.model_files.scripted_models import scripted_models
from support.window_stack import ModelStack, Shown, WindowStack

WEATHER = Path(__file__).resolve().parent / "mcp_servers" / "weather.py"
WAIT_MS = 30_000


def weather(delay_s: float = 0.0, stamps: Path | None = None) -> ServerConfig:
    """The weather server (mcp_servers/weather.py); `stamps`: the file where it notes each call it runs."""
    env = (("WEATHER_DELAY_S", str(delay_s)),) + ((("WEATHER_STAMPS", str(stamps)),) if stamps else ())
    return ServerConfig("weather", Transport.STDIO, sys.executable, (str(WEATHER),), env=env, enabled=True)


@contextmanager
def window_with_tools(qtbot, folder: Path, servers: list[ServerConfig], step_limit: int = 3) -> Iterator[WindowStack]:
    stack = ModelStack.start(folder)
    stack.settings.tools.set_servers(servers)
    stack.settings.tools.step_limit = step_limit
    stack.load(qtbot, scripted_models()["qwen3"].path, WAIT_MS)
    opened = WindowStack.open(qtbot, stack, folder, shown=Shown.ACTIVE, size=(1024, 720), tools=True)
    try:
        yield opened
    finally:
        opened.close_tools()
        opened.window.close()
        stack.shutdown()


def tick(qtbot, opened: WindowStack, name: str, tools: int | None = 1) -> None:
    """Tick a server in the tools button's menu, as a click on its row does, and wait until it
    has started (`tools`: the count the button then shows; None: do not wait)."""
    picker = opened.window.tool_calls.picker
    row = next(action for action in picker.server_menu.actions() if action.text().startswith(name))
    row.trigger()
    if tools is not None:
        qtbot.waitUntil(lambda: f"Tools · {tools}" in picker.text(), timeout=WAIT_MS)


def card_asking(qtbot, opened: WindowStack, count: int) -> ToolCallCard:
    """The `count`th card of the turn, once it asks."""
    chat = opened.window.chat

    def asking():
        cards = chat.tool_cards()
        return len(cards) >= count and cards[count - 1].state is CardState.AWAITING

    qtbot.waitUntil(asking, timeout=WAIT_MS)
    return chat.tool_cards()[count - 1]


def turn_over(qtbot, opened: WindowStack) -> None:
    qtbot.waitUntil(lambda: not opened.session.busy, timeout=WAIT_MS)


def exchange(opened: WindowStack) -> list[tuple[str, str]]:
    """The branch shown as (role, what it holds): a reply's call names, a result's text."""
    return [(m.role, ",".join(c.name for c in m.tool_calls) if m.role == "assistant" else m.content)
            for m in opened.store.messages(opened.session.conversation_id) if m.role != "system"]
