"""The chat pane, on real widgets (offscreen): streaming, Markdown, safety of model text, actions."""

from __future__ import annotations

import re
import time

import pytest
from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QColor, QDesktopServices, QGuiApplication, QPalette, QTextCursor, QTextFormat
from PySide6.QtWidgets import QApplication
from support.chat_helpers import WAIT_MS, browser, click_anchor, fragments, hrefs, plain_text, shown_view, stream

from app.engine.types import ReplyStats, ReplyStatus, StopReason
from app.ui.chat import streaming_reply
from app.ui.chat.inline_editor import InlineEditor
from app.ui.chat.markdown_render import LONG_RUN, BlockSplitter
from app.ui.chat.paging import HISTORY_SHOWN_CHARS, HISTORY_SHOWN_MESSAGES
from app.ui.chat.streaming_reply import FLUSH_INTERVAL_MS, FLUSH_SLACK_MS
from app.ui.chat.transcript import MESSAGE_SHOWN_CHARS
from app.ui.chat.view import ChatView, MessageView, stats_text

REPLY_STATS = ReplyStats(completion_tokens=128, tokens_per_s=34.5, stop_reason=StopReason.END_OF_TURN, ttft_s=0.21)


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, 700, 500)


# -- streaming ----------------------------------------------------------------------------------


def test_a_thousand_chunks_end_as_exactly_the_streamed_text(view, qtbot):
    chunks = [f"word{i}" + ("\n" if i % 40 == 39 else " ") for i in range(1000)]
    expected = "".join(chunks)
    view.begin_reply(7)
    for chunk in chunks:
        view.append_text(chunk)
    qtbot.waitUntil(lambda: view.text_of_reply() == expected, timeout=WAIT_MS)

    view.finish_reply(expected, REPLY_STATS, ReplyStatus.COMPLETE)
    assert view.text_of_reply() == expected.rstrip()  # Markdown drops the trailing space


def test_many_chunks_are_coalesced_into_few_document_updates(view, qtbot):
    view.begin_reply(1)
    started = time.perf_counter()
    for _ in range(10):  # 100 chunks per 10 ms: 10,000 chunks a second
        for i in range(100):
            view.append_text(f"t{i} ")
        qtbot.wait(10)
    qtbot.waitUntil(lambda: view.text_of_reply().count("t99 ") == 10, timeout=WAIT_MS)
    elapsed_ms = (time.perf_counter() - started) * 1000
    # At most one update per flush interval, however slow the machine running the test.
    assert 1 <= view.flush_count <= elapsed_ms / (FLUSH_INTERVAL_MS - FLUSH_SLACK_MS) + 1
    assert view.flush_count <= 20  # of 1,000 chunks


def test_a_chunk_after_a_quiet_interval_is_written_at_once_and_one_sooner_waits_for_it(view, qtbot, monkeypatch):
    """The engine worker hands text over every 40 ms, so each chunk is written in the wake that
    brings it (no second wake for a timer, and the first words show as soon as they come); a
    chunk that follows the last write sooner than FLUSH_INTERVAL_MS waits out the rest of it.
    The interval is made half a second here, which no pause between two lines of a test on a
    busy machine reaches."""
    interval_ms = 500
    monkeypatch.setattr(streaming_reply, "FLUSH_INTERVAL_MS", interval_ms)
    view.begin_reply(1)
    view.append_text("The sea")
    assert view.text_of_reply() == "The sea" and view.flush_count == 1
    view.append_text(" was calm.")
    assert view.text_of_reply() == "The sea" and view.flush_count == 1
    qtbot.waitUntil(lambda: view.text_of_reply() == "The sea was calm.", timeout=WAIT_MS)
    assert view.flush_count == 2
    qtbot.wait(interval_ms + 10)
    view.append_text(" Then")
    assert view.text_of_reply() == "The sea was calm. Then" and view.flush_count == 3


def test_a_completed_block_is_rendered_while_the_tail_stays_plain(view, qtbot):
    view.begin_reply(1)
    view.append_text("# Title\n\nSome **bold** text\n\n")
    qtbot.waitUntil(lambda: view.flush_count == 1, timeout=WAIT_MS)

    document = browser(view).document()
    title = document.findBlockByNumber(0)
    while title.text() != "Title":
        assert title.text() != "# Title", "the heading was left as plain text"
        title = title.next()
    assert title.blockFormat().headingLevel() == 1
    # The paragraph after it has not completed (the next line could still continue it).
    assert "Some **bold** text" in view.text_of_reply()

    view.append_text("Next")
    qtbot.waitUntil(lambda: "Some bold text" in view.text_of_reply(), timeout=WAIT_MS)
    assert view.text_of_reply().endswith("Next")


def test_a_streamed_reply_shows_what_the_same_reply_shows_rendered_whole(view, qtbot):
    reply = (
        "## Plan\n\nFirst a paragraph\nwith a line break.\n\n- one\n- two\n\n"
        "```python\nprint('hi')\n\n\nx = 1\n```\nAfter the code.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThe end."
    )
    view.begin_reply(1)
    stream(qtbot, view, [reply[i : i + 3] for i in range(0, len(reply), 3)])
    view.finish_reply(reply, REPLY_STATS, ReplyStatus.COMPLETE)

    whole = ChatView()
    qtbot.addWidget(whole)
    whole.set_messages([MessageView(1, "assistant", reply, REPLY_STATS)])
    assert view.text_of_reply() == whole.text_of_reply()
    assert plain_text(view) == plain_text(whole)


THINKING_REPLY = (
    "<think>\nThe user asks about **deltas**.\n\n```\nnot a real fence\n\n# nor a heading\n</think>\n\n"
    "A **delta** is a landform.\n\n- sediment\n- slow water"
)


def test_a_reasoning_section_is_shown_muted_under_a_caption_apart_from_the_answer(view):
    view.set_messages([MessageView(1, "assistant", THINKING_REPLY, REPLY_STATS)])
    text = plain_text(view)
    assert "<think>" not in text and "</think>" not in text
    assert text.index("Thinking") < text.index("The user asks about deltas.") < text.index("A delta is a landform.")
    colours = {fragment: fmt.foreground().color().name() for fragment, fmt in fragments(view)}
    assert colours["The user asks about "] != colours["A "]  # the reasoning is set apart in colour
    assert colours["A "] == colours["slow water"]


def test_a_streamed_reasoning_section_ends_as_the_same_reply_rendered_whole(view, qtbot):
    view.begin_reply(1)
    stream(qtbot, view, [THINKING_REPLY[i : i + 4] for i in range(0, 40, 4)])
    # Still streaming, as plain text, but under the caption it will have, without the tag.
    assert view.text_of_reply().startswith("Thinking\nThe user asks about **deltas**.")
    stream(qtbot, view, [THINKING_REPLY[i : i + 4] for i in range(40, len(THINKING_REPLY), 4)])
    view.finish_reply(THINKING_REPLY, REPLY_STATS, ReplyStatus.COMPLETE)

    whole = ChatView()
    qtbot.addWidget(whole)
    whole.set_messages([MessageView(1, "assistant", THINKING_REPLY, REPLY_STATS)])
    assert plain_text(view) == plain_text(whole)


@pytest.mark.parametrize("content, shown", [
    ("<think>\n\n</think>\n\nNo reasoning.", "No reasoning."),  # Qwen3 with thinking off
    ("Mentioning <think> later is just text.", "Mentioning <think> later is just text."),
    ("<think>\nStopped while thinking", "Thinking\nStopped while thinking"),
])
def test_empty_late_and_unfinished_reasoning(view, content, shown):
    view.set_messages([MessageView(1, "assistant", content)])
    assert view.text_of_reply() == shown


def test_prompt_progress_stands_where_the_reply_will_be_until_its_text_arrives(view, qtbot):
    view.set_messages([MessageView(1, "user", "A long question")])
    view.begin_reply(2)
    view.show_prompt_progress(512, 1_300)
    assert "Reading the conversation… 512 of 1,300 tokens" in plain_text(view)
    view.show_prompt_progress(1_024, 1_300)
    assert "1,024 of 1,300" in plain_text(view) and "512 of" not in plain_text(view)
    stream(qtbot, view, ["The answer"])
    assert view.text_of_reply() == "The answer" and "Reading the conversation" not in plain_text(view)
    view.show_prompt_progress(1_300, 1_300)  # late: the reply has begun, nothing changes
    assert view.text_of_reply() == "The answer"
    view.finish_reply("The answer", REPLY_STATS, ReplyStatus.COMPLETE)
    assert view.text_of_reply() == "The answer"


def test_a_reply_stopped_while_the_prompt_is_read_leaves_no_note(view):
    view.begin_reply(1)
    view.show_prompt_progress(512, 4_000)
    view.finish_reply("", ReplyStats(completion_tokens=0, stop_reason=StopReason.CANCELLED), ReplyStatus.CANCELLED)
    assert "Reading the conversation" not in plain_text(view)


def test_finish_renders_the_authoritative_text_when_it_differs(view, qtbot):
    view.begin_reply(1)
    stream(qtbot, view, ["Hello wor", "ld<|im_e"])
    view.finish_reply("Hello **world**", None, ReplyStatus.COMPLETE)
    assert view.text_of_reply() == "Hello world"
    assert "<|im_e" not in plain_text(view)


def test_finish_shows_the_reply_stats_in_words(view):
    view.begin_reply(1)
    view.append_text("Hi")
    assert view.is_streaming()
    view.finish_reply("Hi", REPLY_STATS, ReplyStatus.COMPLETE)
    assert not view.is_streaming()
    assert "128 tokens · 34.5 tok/s · first token 0.21 s · end of turn" in plain_text(view)

    view.begin_reply(2)
    view.finish_reply("Cut sh", ReplyStats(completion_tokens=1, stop_reason=StopReason.CANCELLED), ReplyStatus.CANCELLED)
    assert "1 token · stopped" in plain_text(view)


@pytest.mark.parametrize("stats, status, words", [
    (ReplyStats(completion_tokens=3, stop_reason=StopReason.LENGTH), ReplyStatus.COMPLETE, "3 tokens · length limit"),
    (ReplyStats(completion_tokens=2, stop_reason=StopReason.STOP_STRING), ReplyStatus.COMPLETE, "2 tokens · stop string"),
    (ReplyStats(completion_tokens=5, stop_reason=StopReason.INTERRUPTED), ReplyStatus.CANCELLED, "5 tokens · interrupted"),
    # No stop reason (an imported record) or nothing measured: the status says how it ended.
    (ReplyStats(completion_tokens=3, stop_reason=None), ReplyStatus.CANCELLED, "3 tokens · stopped"),
    (None, ReplyStatus.CANCELLED, "stopped"),
    (None, ReplyStatus.ERROR, "error"),
    (None, ReplyStatus.COMPLETE, ""),
    # Not counted is not zero: a reply cut off by a crash, or one that never started.
    (ReplyStats.from_dict({"stop_reason": "interrupted"}), ReplyStatus.CANCELLED, "interrupted"),
    (ReplyStats.failed("The template failed"), ReplyStatus.ERROR, "error"),
    (ReplyStats(completion_tokens=0, stop_reason=StopReason.CANCELLED), ReplyStatus.CANCELLED, "0 tokens · stopped"),
    # Measured but not counted: a server that sends no usage.
    (ReplyStats(completion_tokens=None, tokens_per_s=30.0, stop_reason=StopReason.END_OF_TURN), ReplyStatus.COMPLETE,
     "token count not reported by the server · 30.0 tok/s · end of turn"),
])
def test_stats_in_words(stats, status, words):
    assert stats_text(stats, status) == words


def test_chunks_with_no_reply_streaming_are_ignored(view, qtbot):
    view.set_messages([MessageView(1, "user", "hi")])
    view.append_text("late chunk")
    qtbot.wait(FLUSH_INTERVAL_MS * 2)
    assert "late chunk" not in plain_text(view)


# -- Markdown -----------------------------------------------------------------------------------


def test_code_is_highlighted_and_copy_puts_only_the_code_on_the_clipboard(view, qtbot):
    code = "def f(x):\n    return x * 2  # twice"
    view.set_messages([MessageView(1, "assistant", f"Here:\n\n```python\n{code}\n```\n\nDone.")])

    colours = {fmt.foreground().color().name() for text, fmt in fragments(view) if text.strip() in ("def", "return", "# twice")}
    assert len(colours) >= 2, "keywords and comments should be coloured differently"
    copy = [href for href in hrefs(view) if href.startswith("hearth:copy-code/")]
    assert len(copy) == 1

    with qtbot.waitSignal(view.copied, timeout=WAIT_MS):
        click_anchor(qtbot, view, copy[0])
    assert QGuiApplication.clipboard().text() == code


@pytest.mark.parametrize(
    "content",
    ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", '<p><img src="file:///etc/passwd"></p>'],
)
def test_html_in_model_output_is_shown_as_text(view, content):
    view.set_messages([MessageView(1, "assistant", f"Look: {content}\n\n{content}")])
    html = browser(view).document().toHtml()
    assert "<img" not in html and "<script" not in html
    assert content in plain_text(view)
    assert not any(fmt.isImageFormat() for _text, fmt in fragments(view))


def test_markdown_images_become_text_and_nothing_is_loaded(view):
    view.set_messages([MessageView(1, "assistant", "![secret](file:///etc/passwd) ![logo](https://example.com/a.png)")])
    assert not any(fmt.isImageFormat() for _text, fmt in fragments(view))
    assert "[image: secret]" in plain_text(view)
    assert "file:" not in " ".join(hrefs(view))


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "file:///etc/passwd"])
def test_links_other_than_http_are_not_clickable(view, qtbot, url):
    view.set_messages([MessageView(1, "assistant", f"[click me]({url})")])
    assert all(not fmt.isAnchor() for text, fmt in fragments(view) if "click me" in text)
    assert url.split(":")[0].lower() not in browser(view).document().toHtml().lower()

    # Even a forged click on such a URL does nothing.
    activated = []
    view.linkActivated.connect(activated.append)
    browser(view).anchorClicked.emit(QUrl(url))
    assert activated == []


class _UrlRecorder(QObject):
    def __init__(self):
        super().__init__()
        self.opened = []

    @Slot(QUrl)
    def open(self, url):
        self.opened.append(url)


def test_an_http_link_is_handed_to_the_window_and_not_opened(view, qtbot):
    recorder = _UrlRecorder()
    for scheme in ("http", "https"):
        QDesktopServices.setUrlHandler(scheme, recorder, "open")
    try:
        view.set_messages([MessageView(1, "assistant", "See [the docs](https://example.com/docs).")])
        with qtbot.waitSignal(view.linkActivated, timeout=WAIT_MS) as clicked:
            click_anchor(qtbot, view, "https://example.com/docs")
        assert clicked.args[0] == QUrl("https://example.com/docs")
        qtbot.wait(50)
        assert recorder.opened == []
        assert browser(view).source().isEmpty()
    finally:
        for scheme in ("http", "https"):
            QDesktopServices.unsetUrlHandler(scheme)


@pytest.mark.parametrize(
    "content, shown",
    [
        ("- a\n- b", "a\nb"),
        ("# Head\n\ntext", "Head\ntext"),
        ("> quote\n\nx", "\nquote\nx"),  # a quote is a one-cell table: the same thin spacer
        ("```\ncode\n```\nafter", "code   Copy\ncode\nafter"),
        ("| a |\n|---|\n| 1 |\n\nafter", "\na\n1\nafter"),  # a thin spacer: a table needs a block before it
    ],
)
def test_a_body_keeps_its_first_blocks_format_and_gains_no_empty_lines(view, content, shown):
    view.set_messages([MessageView(1, "assistant", content)])
    assert view.text_of_reply() == shown
    document = browser(view).document()
    label = document.begin()
    assert label.text() == "Assistant"
    first = label.next()
    if content.startswith("-"):
        assert first.textList() is not None
    elif content.startswith("#"):
        assert first.blockFormat().headingLevel() == 1
    elif content.startswith(">"):
        assert first.blockFormat().lineHeight() < 10
        cell = QTextCursor(first.next())
        assert cell.currentTable().cellAt(cell).format().toTableCellFormat().leftBorder() > 0  # its rule
    elif content.startswith("|"):
        assert first.blockFormat().lineHeight() < 10


@pytest.mark.parametrize("indent", ["  ", "   ", "    "])
def test_nested_lists_nest_however_the_model_indents_them(view, indent):
    view.set_messages([MessageView(1, "assistant", f"1. one\n{indent}- sub\n{indent}- sub two\n2. two")])
    levels = {}
    block = browser(view).document().begin()
    while block.isValid():
        if block.textList() is not None:
            levels[block.text()] = block.textList().format().indent()
        block = block.next()
    assert levels["sub"] == levels["sub two"] == levels["one"] + 1 == levels["two"] + 1


def rules_right_after_tables(view: ChatView) -> int:
    count = 0
    block = browser(view).document().begin()
    while block.isValid():
        previous = block.previous()
        if (
            block.blockFormat().hasProperty(QTextFormat.Property.BlockTrailingHorizontalRulerWidth)
            and previous.isValid()
            and QTextCursor(previous).currentTable() is not None
        ):
            count += 1
        block = block.next()
    return count


def test_a_rule_after_code_is_not_drawn_beside_it(view, qtbot):
    """Qt lays out a rule that directly follows a table at the table's right edge."""
    reply = "```\ncode\n```\n\n---\n\nafter"
    view.set_messages([MessageView(1, "assistant", reply)])
    assert view.text_of_reply() == "code   Copy\ncode\n\n\nafter"
    assert rules_right_after_tables(view) == 0

    view.begin_reply(2)
    stream(qtbot, view, list(reply))
    assert rules_right_after_tables(view) == 0
    view.finish_reply(reply, None, ReplyStatus.COMPLETE)
    assert rules_right_after_tables(view) == 0


# -- actions ------------------------------------------------------------------------------------


def test_edit_regenerate_and_copy_links(view, qtbot):
    view.set_messages([MessageView(11, "user", "Question?"), MessageView(12, "assistant", "**Answer**", REPLY_STATS)])

    click_anchor(qtbot, view, "hearth:edit/11")
    assert view.findChild(InlineEditor).text() == "Question?"  # tests/ui/test_chat_editing.py has more
    with qtbot.waitSignal(view.regenerateRequested, timeout=WAIT_MS):
        click_anchor(qtbot, view, "hearth:regenerate")
    with qtbot.waitSignal(view.copied, timeout=WAIT_MS):
        click_anchor(qtbot, view, "hearth:copy-message/1")
    assert QGuiApplication.clipboard().text() == "**Answer**"  # the message's own text


def test_only_the_last_reply_offers_regenerate(view, qtbot):
    view.set_messages([
        MessageView(1, "user", "a"), MessageView(2, "assistant", "b"),
        MessageView(3, "user", "c"), MessageView(4, "assistant", "d"),
    ])
    assert hrefs(view).count("hearth:regenerate") == 1
    assert "hearth:regenerate" in last_footer_hrefs(view)

    view.add_message(MessageView(5, "user", "e"))
    assert "hearth:regenerate" not in hrefs(view)
    view.begin_reply(6)
    assert "hearth:regenerate" not in hrefs(view)
    view.finish_reply("f", None, ReplyStatus.COMPLETE)
    assert hrefs(view).count("hearth:regenerate") == 1
    assert "hearth:regenerate" in last_footer_hrefs(view)


def last_footer_hrefs(view: ChatView) -> list[str]:
    """The links of the document's last line (the footer of the last message)."""
    block = browser(view).document().lastBlock()
    it = block.begin()
    found = []
    while not it.atEnd():
        if it.fragment().charFormat().isAnchor():
            found.append(it.fragment().charFormat().anchorHref())
        it += 1
    return found


# -- long conversations -------------------------------------------------------------------------


def long_conversation(pairs: int) -> list[MessageView]:
    messages = []
    for i in range(pairs):
        messages.append(MessageView(2 * i + 1, "user", f"Question number {i}?"))
        messages.append(MessageView(2 * i + 2, "assistant", f"Answer number {i}. " + "Words and more words. " * 40))
    return messages


def test_a_long_conversation_opens_on_its_newest_messages_and_pages_back_on_request(view, qtbot):
    messages = long_conversation(60)
    assert sum(len(m.content) for m in messages) > 4 * HISTORY_SHOWN_CHARS
    view.set_messages(messages)

    hidden = view.hidden_count()
    assert 0 < hidden < len(messages) - 2
    text = plain_text(view)
    assert f"Show {hidden} earlier messages" in text
    assert "Answer number 59." in text and "Question number 0?" not in text
    assert f"Question number {hidden // 2}?" in text or f"Answer number {hidden // 2}." in text
    assert view.is_following()

    oldest_shown = messages[hidden].content
    click_anchor(qtbot, view, "hearth:show-earlier")
    assert 0 < view.hidden_count() < hidden
    # The message that was the oldest shown is where the user's eyes were: at the top.
    document = browser(view).document()
    found = document.find(oldest_shown)
    assert not found.isNull()
    y = browser(view).cursorRect(found).top()  # in viewport coordinates
    assert 0 <= y < 80
    assert not view.is_following()
    # Actions keep naming the right message, shown or not.
    with qtbot.waitSignal(view.copied, timeout=WAIT_MS):
        click_anchor(qtbot, view, f"hearth:copy-message/{len(messages) - 1}")
    assert QGuiApplication.clipboard().text() == messages[-1].content

    while view.hidden_count():
        click_anchor(qtbot, view, "hearth:show-earlier")
    assert "Question number 0?" in plain_text(view) and "earlier message" not in plain_text(view)
    assert hrefs(view).count("hearth:regenerate") == 1


def test_a_short_conversation_is_shown_whole_and_two_huge_messages_are_never_hidden(view):
    view.set_messages(long_conversation(2))
    assert view.hidden_count() == 0 and "earlier message" not in plain_text(view)

    huge = "x" * (2 * HISTORY_SHOWN_CHARS)
    view.set_messages([MessageView(1, "user", "a"), MessageView(2, "user", huge), MessageView(3, "assistant", huge)])
    assert view.hidden_count() == 1 and "Show 1 earlier message" in plain_text(view)


# -- scrolling ----------------------------------------------------------------------------------


def test_the_view_follows_the_stream_until_the_user_scrolls_up(view, qtbot):
    bar = browser(view).verticalScrollBar()
    view.begin_reply(1)
    stream(qtbot, view, [f"line {i}\n" for i in range(200)])
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=WAIT_MS)
    assert view.is_following()

    bar.setValue(0)  # the user scrolls up
    assert not view.is_following()
    old_maximum = bar.maximum()
    stream(qtbot, view, [f"more {i}\n" for i in range(100)])
    qtbot.waitUntil(lambda: bar.maximum() > old_maximum, timeout=WAIT_MS)
    assert bar.value() == 0

    bar.setValue(bar.maximum())  # and back to the bottom
    assert view.is_following()
    old_maximum = bar.maximum()
    stream(qtbot, view, [f"again {i}\n" for i in range(100)])
    qtbot.waitUntil(lambda: bar.maximum() > old_maximum and bar.value() == bar.maximum(), timeout=WAIT_MS)


# -- appearance ---------------------------------------------------------------------------------


@pytest.fixture
def dark_palette(qapp):
    original = QPalette(qapp.palette())
    dark = QPalette()
    for role, colour in [
        (QPalette.ColorRole.Window, "#2b2b2b"), (QPalette.ColorRole.WindowText, "#e6e6e6"),
        (QPalette.ColorRole.Base, "#1f1f1f"), (QPalette.ColorRole.Text, "#e6e6e6"),
        (QPalette.ColorRole.Highlight, "#3d7bd9"), (QPalette.ColorRole.Link, "#0000ff"),
    ]:
        dark.setColor(role, QColor(colour))
    yield dark
    QApplication.setPalette(original)


def test_a_palette_change_renders_again_in_the_new_colours(view, qtbot, dark_palette):
    view.set_messages([MessageView(1, "user", "hi"), MessageView(2, "assistant", "```python\nx = 1\n```")])
    view.begin_reply(3)
    stream(qtbot, view, ["still ", "streaming"])
    light_html = browser(view).document().toHtml()

    QApplication.setPalette(dark_palette)
    qtbot.waitUntil(lambda: browser(view).document().toHtml() != light_html, timeout=WAIT_MS)
    assert "#0d1117" in browser(view).document().toHtml()  # the dark code style's background
    assert view.text_of_reply() == "still streaming"
    link = next(fmt for _text, fmt in fragments(view) if fmt.isAnchor()).foreground().color()
    assert link.lightness() > 100, "links must stay readable on a dark background"

    view.append_text(" on")
    view.finish_reply("still streaming on", None, ReplyStatus.COMPLETE)
    assert view.text_of_reply() == "still streaming on"


# -- the block splitter -------------------------------------------------------------------------


def feed_by_character(text: str) -> list[str]:
    splitter = BlockSplitter()
    blocks = [block for block in map(splitter.feed, text) if block]
    return blocks + [splitter.tail]


def test_blocks_complete_at_blank_lines_headings_and_closing_fences():
    assert feed_by_character("# T\nPara\ngraph\n\nNext\n\n```py\na\n\nb\n```\ntail") == [
        "# T\n", "Para\ngraph\n\n", "Next\n\n", "```py\na\n\nb\n```\n", "tail",
    ]


def test_a_reasoning_section_that_opens_a_reply_is_one_block():
    reply = "\n<think>\nA\n\n```\nB\n\n# C\n</think>\n\nAnswer\n\nMore"
    assert feed_by_character(reply) == ["\n", "<think>\nA\n\n```\nB\n\n# C\n</think>\n", "\n", "Answer\n\n", "More"]
    # Only at the start: later, the tag is text like any other.
    assert feed_by_character("Hi\n\n<think>\nx\n\ny") == ["Hi\n\n", "<think>\nx\n\n", "y"]


def test_an_indented_line_after_a_blank_line_stays_with_its_list_item():
    assert feed_by_character("- item\n\n  more of it\n\n- next") == ["- item\n\n  more of it\n\n", "- next"]


def test_a_fence_closes_only_on_its_own_string_at_the_margin():
    assert feed_by_character("````\n```\n\nx\n  ````\n````\n\nafter") == ["````\n```\n\nx\n  ````\n````\n", "\n", "after"]


# --- hostile sizes: unbreakable runs, huge messages, thousands of messages --------------------------


def _longest_unbroken_run(view: ChatView) -> int:
    """The longest run of shown characters with no line-break opportunity, over every block."""
    longest, block = 0, browser(view).document().begin()
    while block.isValid():
        for run in re.split(r"[\s\u200b]+", block.text()):
            longest = max(longest, len(run))
        block = block.next()
    return longest


@pytest.mark.parametrize(
    "content",
    ["x" * 1_000_000, "`" + "x" * 90_000 + "`", "# " + "y" * 90_000, "[" + "z" * 90_000 + "](https://example.com)",
     "> " + "q" * 90_000, "| a |\n|---|\n| " + "w" * 90_000 + " |", "a&b<c>" * 15_000,
     # Code lines wrap now: a line of one token, and one of 30,000 tokens (a span each).
     "```\n" + "x" * 90_000 + "\n```", "```python\n" + "a.b" * 10_000 + "\n```"],
)
def test_an_unbroken_run_renders_in_well_under_a_second_and_copies_as_it_was(view, qtbot, content):
    started = time.monotonic()
    view.set_messages([MessageView(1, "user", "hi"), MessageView(2, "assistant", content)])
    QApplication.processEvents()
    browser(view).viewport().repaint()
    assert time.monotonic() - started < 2  # minutes before (Qt's layout is quadratic in a run)
    assert _longest_unbroken_run(view) <= LONG_RUN + 2  # a tag's delimiters may touch a run
    with qtbot.waitSignal(view.copied, timeout=WAIT_MS):
        click_anchor(qtbot, view, "hearth:copy-message/1")
    assert QGuiApplication.clipboard().text() == content


def test_a_copied_selection_has_no_added_break_opportunities(view):
    word = "Supercalifragilistic" * 20
    view.set_messages([MessageView(1, "assistant", f"A {word} word.")])
    browser(view).selectAll()
    copied = browser(view).createMimeDataFromSelection()
    assert "\u200b" not in copied.text() and word in copied.text()
    assert word in view.text_of_reply()


def test_a_streamed_run_gets_break_opportunities_across_chunks(view, qtbot):
    view.begin_reply(1)
    for _ in range(300):
        view.append_text("z" * 7)  # chunks far shorter than a run: the run continues across them
        view.flush_now()
    assert _longest_unbroken_run(view) <= LONG_RUN
    assert view.text_of_reply() == "z" * 2_100
    view.finish_reply("z" * 2_100, None, ReplyStatus.COMPLETE)
    assert _longest_unbroken_run(view) <= LONG_RUN and view.text_of_reply() == "z" * 2_100


def test_a_huge_message_shows_its_beginning_and_says_so(view, qtbot):
    content = "word " * 100_000  # 500,000 characters
    started = time.monotonic()
    view.set_messages([MessageView(1, "assistant", content)])
    assert time.monotonic() - started < 3
    shown = view.text_of_reply()
    assert len(shown) < MESSAGE_SHOWN_CHARS + 200 and "400,000 more characters, not shown here" in shown
    with qtbot.waitSignal(view.copied, timeout=WAIT_MS):
        click_anchor(qtbot, view, "hearth:copy-message/0")
    assert QGuiApplication.clipboard().text() == content


def test_a_page_of_tiny_messages_is_bounded_by_their_number(view):
    messages = [MessageView(i, "user" if i % 2 == 0 else "assistant", "ok") for i in range(3_000)]
    started = time.monotonic()
    view.set_messages(messages)
    assert time.monotonic() - started < 3  # every one of them (6,000 characters) was rendered before
    assert view.hidden_count() == 3_000 - HISTORY_SHOWN_MESSAGES


def test_older_messages_not_handed_over_are_asked_for(view, qtbot):
    view.set_messages([MessageView(i, "user", f"message {i}") for i in range(100, 110)], earlier=100)
    assert view.hidden_count() == 100 and view.oldest_message_id() == 100
    with qtbot.waitSignal(view.earlierRequested, timeout=WAIT_MS):
        click_anchor(qtbot, view, "hearth:show-earlier")
    view.prepend_messages([MessageView(i, "user", f"message {i}") for i in range(50, 100)], earlier=50)
    assert view.hidden_count() == 50 + 50 - HISTORY_SHOWN_MESSAGES and view.oldest_message_id() == 50
    assert "message 99" in browser(view).toPlainText()


def test_a_megabyte_model_name_is_shortened_in_the_label(view):
    view.set_messages([MessageView(1, "assistant", "hi", model="m" * 1_000_000)])
    assert max(len(block) for block in browser(view).toPlainText().split("\n")) < 100
