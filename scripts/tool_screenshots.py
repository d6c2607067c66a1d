"""Screenshots of the tool widgets (#27), in light and dark, to look at after changing them.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/tool_screenshots.py [OUT_DIR]

Writes PNGs to OUT_DIR (default: a new temporary folder, printed): the call card in each state
(asking, running, done with its result shown, failed, denied), the tools button beside a message
box and its menu, a transcript with stored calls and results and live cards under the last
reply, and Settings → Tools with the editor of one server. Everything is made from typed values
and a throwaway conversation database; nothing is started and no server is reached.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QBuffer, QByteArray, QIODevice  # noqa: E402
from PySide6.QtGui import QColor, QImage, QPainter  # noqa: E402
from PySide6.QtWidgets import QApplication, QHBoxLayout, QWidget  # noqa: E402

from app.conversation.exchange import begin_reply  # noqa: E402
from app.engine.sampling import SamplingParams  # noqa: E402
from app.engine.tools.types import ToolCall  # noqa: E402
from app.engine.types import ReplyStats, StopReason  # noqa: E402
from app.store import ConversationStore, ToolResult  # noqa: E402
from app.tool_servers.approval import PendingCall  # noqa: E402
from app.tool_servers.types import (  # noqa: E402
    ListedTool,
    PartKind,
    ResultPart,
    ServerConfig,
    ServerState,
    ServerStatus,
    ToolOutcome,
    Transport,
)
from app.ui.chat.composer import Composer  # noqa: E402
from app.ui.chat.tool_card import ToolCallCard  # noqa: E402
from app.ui.chat.tools_picker import ToolsPicker  # noqa: E402
from app.ui.chat.view import ChatView, MessageView  # noqa: E402
from app.ui.dialogs.tool_server_editor import ToolServerEditor  # noqa: E402
from app.ui.dialogs.tool_servers import ToolServersPage  # noqa: E402
from app.ui.window.appearance import dark_palette, light_palette  # noqa: E402

DELETE = PendingCall("c1", "files", "delete_file", '{\n  "path": "/home/me/notes.txt",\n  "force": true\n}',
                     read_only=False, destructive=True)
STATUSES = [ServerStatus("files", ServerState.READY, tuple(ListedTool("files", f"t{i}") for i in range(3))),
            ServerStatus("weather", ServerState.READY, (ListedTool("weather", "forecast"), ListedTool("weather", "now"))),
            ServerStatus("search", ServerState.STARTING),
            ServerStatus("broken", ServerState.FAILED, reason="command not found: mcp-broken"),
            ServerStatus("spare", ServerState.OFF)]
CONFIGS = [ServerConfig("files", Transport.STDIO, command="npx", args=("-y", "@modelcontextprotocol/server-filesystem", "~")),
           ServerConfig("weather", Transport.HTTP, url="https://weather.example/mcp", headers=(("Authorization", "Bearer x"),)),
           ServerConfig("search", Transport.STDIO, command="uvx", args=("mcp-search",)),
           ServerConfig("broken", Transport.STDIO, command="mcp-broken"),
           ServerConfig("spare", Transport.STDIO, command="uvx", args=("spare",), enabled=False)]


def png(width: int, height: int) -> bytes:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("#e0e6ef"))
    painter = QPainter(image)
    painter.fillRect(width // 8, height // 6, width * 3 // 4, height * 2 // 3, QColor("#3a7bd5"))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def settle(app: QApplication) -> None:
    for _ in range(5):
        app.processEvents()


def cards(app: QApplication, out: Path, appearance: str) -> None:
    outcome = ToolOutcome("Deleted /home/me/notes.txt (2.1 KB).\nThe trash was emptied.", elapsed_s=0.42, parts=(
        ResultPart(PartKind.TEXT, "Deleted /home/me/notes.txt (2.1 KB).\nThe trash was emptied."),
        ResultPart(PartKind.IMAGE, data=png(320, 180), mime="image/png"),
        ResultPart(PartKind.JSON, '{\n  "deleted": 1,\n  "freed_bytes": 2150\n}')))
    failed = ToolOutcome("The call timed out after 60 s.", error=True, elapsed_s=60.0)
    for state in ("asking", "running", "done", "result", "failed", "denied"):
        card = ToolCallCard(DELETE, awaiting=state == "asking")
        card.resize(600, 100)
        card.show()
        if state in ("done", "result"):
            card.set_outcome(outcome)
        if state == "result":
            card.result_toggle.setChecked(True)
        if state == "failed":
            card.set_outcome(failed)
        if state == "denied":
            card.set_denied()
        settle(app)
        card.resize(600, card.preferred_height())
        settle(app)
        card.grab().save(str(out / f"card-{state}-{appearance}.png"))
        card.close()


def picker(app: QApplication, out: Path, appearance: str) -> None:
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    composer = Composer()
    tools = ToolsPicker()
    tools.set_statuses(STATUSES)
    tools.set_chosen(frozenset({"files", "weather", "search"}))
    layout.addWidget(composer, 1)
    composer.add_beside_send(tools)  # beside Send, at its foot, as the window places it
    row.resize(720, 130)
    row.show()
    settle(app)
    row.grab().save(str(out / f"picker-{appearance}.png"))
    tools.server_menu.popup(tools.mapToGlobal(tools.rect().bottomLeft()))
    settle(app)
    tools.server_menu.grab().save(str(out / f"picker-menu-{appearance}.png"))
    tools.server_menu.close()
    row.close()


def transcript(app: QApplication, out: Path, appearance: str, folder: Path) -> None:
    store = ConversationStore(folder / f"{appearance}.db")
    cid = store.create_conversation(title="Weather")
    store.add_message(cid, "user", "Weather and time in Zürich?")
    reply = begin_reply(store, cid, "", "qwen3-4b.gguf", SamplingParams())
    reply.finish("Let me look that up.", ReplyStats(completion_tokens=12, stop_reason=StopReason.TOOL_CALLS), tool_calls=(
        ToolCall(0, "call_w", "get_weather", '{"city": "Zürich", "unit": "celsius"}'),
        ToolCall(1, "call_t", "local_time", '{"zone": "Europe/Zurich"}')))
    store.add_tool_result(cid, ToolResult("call_w", "get_weather", "\n".join(
        ["Zürich, Switzerland", "Temperature: 21 °C", "Sky: sunny", "Wind: 8 km/h W", "Humidity: 40 %",
         "Pressure: 1018 hPa", "UV index: 5", "Sunset: 21:02"])))
    store.add_tool_result(cid, ToolResult("call_t", "local_time", "The clock service is down.", error=True))
    final = begin_reply(store, cid, "", "qwen3-4b.gguf", SamplingParams())
    final.finish("It is 21 °C and sunny. Shall I delete the old notes as you asked?",
                 ReplyStats(completion_tokens=9, stop_reason=StopReason.TOOL_CALLS))
    messages = [MessageView(m.id, m.role, m.content, m.stats, m.status, m.model, m.version, m.versions,
                            m.tool_calls, m.tool_result) for m in store.recent_messages(cid, 50).messages]
    store.close()
    view = ChatView()
    view.resize(760, 1180)
    view.show()
    view.set_messages(messages)
    view.show_tool_call(DELETE)
    running = view.show_tool_call(PendingCall("c2", "weather", "forecast", '{"days": 3}', read_only=True), awaiting=False)
    assert running is not None
    settle(app)
    view.grab().save(str(out / f"transcript-{appearance}.png"))
    view.close()


def settings(app: QApplication, out: Path, appearance: str) -> None:
    page = ToolServersPage()
    page.set_configs(CONFIGS)
    page.set_statuses(STATUSES)
    page.resize(640, 380)
    page.show()
    page.table.selectRow(1)
    settle(app)
    page.grab().save(str(out / f"settings-tools-{appearance}.png"))
    editor = ToolServerEditor(CONFIGS[0] if appearance == "light" else CONFIGS[1], set())
    editor.show()
    settle(app)
    editor.grab().save(str(out / f"server-editor-{appearance}.png"))
    editor.close()
    page.close()


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="hearth-tool-shots-"))
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setStyle("Fusion")
    with tempfile.TemporaryDirectory() as folder:
        for appearance, palette in (("light", light_palette()), ("dark", dark_palette())):
            app.setPalette(palette)
            cards(app, out, appearance)
            picker(app, out, appearance)
            transcript(app, out, appearance, Path(folder))
            settings(app, out, appearance)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
