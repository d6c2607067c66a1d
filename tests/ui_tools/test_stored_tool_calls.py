"""Stored tool calls and results in the transcript, from a real ConversationStore: a reply's
calls as small blocks under its text, each result a block under them (never a bubble, never
Markdown), an error in red, the first lines until "Show all" writes the whole in place."""

from __future__ import annotations

import time

import pytest
from support.chat_helpers import browser, click_anchor, fragments, hrefs, plain_text, shown_view

from app.conversation.exchange import begin_reply
from app.engine.sampling import SamplingParams
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, StopReason
from app.store import ConversationStore, StoredMessage, ToolResult
from app.ui.chat.markdown_render import ZERO_WIDTH_SPACE
from app.ui.chat.theme import ChatTheme
from app.ui.chat.tool_calls.stored import RESULT_LINES
from app.ui.chat.view import MessageView

CALLED = ReplyStats(prompt_tokens=40, completion_tokens=12, stop_reason=StopReason.TOOL_CALLS)
ENDED = ReplyStats(prompt_tokens=80, completion_tokens=9, stop_reason=StopReason.END_OF_TURN)
HOSTILE = "<b>x</b>\u202eexe.txt\x07"


def message_view(message: StoredMessage) -> MessageView:
    """As the window builds one from a stored message."""
    return MessageView(message.id, message.role, message.content, message.stats, message.status, message.model,
                       message.version, message.versions, message.tool_calls, message.tool_result)


def conversation(tmp_path, results: list[ToolResult], calls: tuple[ToolCall, ...]) -> list[MessageView]:
    store = ConversationStore(tmp_path / "conversations.db")
    cid = store.create_conversation(title="Weather")
    store.add_message(cid, "user", "Weather and time in Zürich?")
    reply = begin_reply(store, cid, "", "tiny.gguf", SamplingParams())
    reply.finish("Let me look that up.", CALLED, tool_calls=calls)
    for result in results:
        store.add_tool_result(cid, result)
    final = begin_reply(store, cid, "", "tiny.gguf", SamplingParams())
    final.finish("21 °C and sunny; I could not get the time.", ENDED)
    messages = [message_view(m) for m in store.recent_messages(cid, 50).messages]
    store.close()
    return messages


WEATHER = ToolCall(0, "call_w", "get_weather", '{"city": "Zürich", "unit": "celsius"}')
TIME = ToolCall(1, "call_t", "local_time", '{"zone": "Europe/Zurich"}')


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, 700, 900)


def test_calls_and_results_show_as_blocks_under_the_reply(view, tmp_path):
    messages = conversation(tmp_path, [ToolResult("call_w", "get_weather", "**21 °C** and [sunny](https://x.example)"),
                                       ToolResult("call_t", "local_time", "The clock service is down.", error=True)],
                            (WEATHER, TIME))
    view.set_messages(messages)
    text = plain_text(view)
    assert 'Tool call · get_weather\n{\n  "city": "Zürich",\n  "unit": "celsius"\n}' in text.replace("\u2028", "\n")
    assert "Tool call · local_time" in text
    assert "Result · get_weather\n**21 °C** and [sunny](https://x.example)" in text, "never rendered as Markdown"
    assert "https://x.example" not in hrefs(view)
    assert "Error · local_time\nThe clock service is down." in text
    assert text.count("tiny.gguf") == 2, "a result has no label of its own: it is no chat bubble"
    order = [text.index(words) for words in ("Let me look that up.", "Tool call", "Result", "21 °C and")]
    assert order == sorted(order)
    error = ChatTheme.from_palette(view.palette()).error
    assert any(piece == "Error · local_time" and fmt.foreground().color() == error for piece, fmt in fragments(view))


def test_a_long_result_shows_its_first_lines_until_show_all(view, qtbot, tmp_path):
    lines = [f"line {i}" for i in range(40)]
    messages = conversation(tmp_path, [ToolResult("call_w", "get_weather", "\n".join(lines))], (WEATHER,))
    view.set_messages(messages)
    text = plain_text(view).replace("\u2028", "\n")
    assert f"line {RESULT_LINES - 1}\n" in text and f"line {RESULT_LINES}\n" not in text
    assert "Show all (40 lines)" in text
    result_id = next(m.id for m in messages if m.role == "tool")
    click_anchor(qtbot, view, f"hearth:expand-result/{result_id}")
    qtbot.waitUntil(lambda: "line 39" in plain_text(view).replace("\u2028", "\n"))
    assert "Show less" in plain_text(view)
    click_anchor(qtbot, view, f"hearth:expand-result/{result_id}")
    qtbot.waitUntil(lambda: "line 39" not in plain_text(view).replace("\u2028", "\n"))


def test_foreign_names_arguments_and_results_stay_inert(view, tmp_path):
    call = ToolCall(0, "call_h", HOSTILE, '{"a": "' + HOSTILE.replace("\x07", "") + '"}')
    messages = conversation(tmp_path, [ToolResult("call_h", HOSTILE, HOSTILE + "\n<img src=x>")], (call,))
    view.set_messages(messages)
    text = plain_text(view)
    assert "Tool call · <b>x</b>\ufffdexe.txt\ufffd" in text and "Result · <b>x</b>" in text
    assert "<img src=x>" in text
    assert not any(char in text for char in "\u202e\x07")
    assert not any(fmt.fontWeight() > 600 and piece == "x" for piece, fmt in fragments(view))


def test_a_32_kb_result_shown_whole_renders_within_reason(view, qtbot, tmp_path):
    content = ("y" * 3000 + "\n") * 11  # 33 KB, in runs that lay out slowest
    messages = conversation(tmp_path, [ToolResult("call_w", "get_weather", content[: 32 * 1024])], (WEATHER,))
    started = time.perf_counter()
    view.set_messages(messages)
    result_id = next(m.id for m in messages if m.role == "tool")
    click_anchor(qtbot, view, f"hearth:expand-result/{result_id}")
    qtbot.waitUntil(lambda: plain_text(view).count("y") > 30_000)
    view.grab()
    assert time.perf_counter() - started < 1.5
    assert ZERO_WIDTH_SPACE in plain_text(view), "long runs get break opportunities"


def test_a_result_can_be_revealed_and_bounded_by_the_context_line(view, tmp_path):
    messages = conversation(tmp_path, [ToolResult("call_w", "get_weather", "sunny")], (WEATHER,))
    view.set_messages(messages)
    result_id = next(m.id for m in messages if m.role == "tool")
    assert view.reveal(result_id)
    view.set_context_boundary(result_id, 3)
    text = plain_text(view)
    line = text.index("The model did not see the 3 messages above this line")
    assert text.index("sunny") < line < text.index("21 °C and")
    assert browser(view).document().toPlainText().count("Copy") == 4, "each message keeps its footer"
