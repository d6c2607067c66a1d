"""A reply's sources in the transcript and opened from their citations: under the reply a framed
"Sources" block, a numbered link per passage the question was given (the file's name, its page)
with the start of the passage; a click opens the source view, which draws a PDF's page (PDFium)
and shows the passage, or says the file is gone. Real store, real view, real PDF."""

from __future__ import annotations

import pytest
from support.chat_helpers import click_anchor, hrefs, plain_text, shown_view
from support.pdf_pages import write_pdf

from app.conversation.exchange import begin_reply
from app.engine.sampling import SamplingParams
from app.engine.tools.types import ToolCall
from app.engine.types import ReplyStats, StopReason
from app.store import ConversationStore, Source, StoredMessage, ToolResult
from app.ui.chat.documents.sources_block import source_href
from app.ui.chat.view import MessageView
from app.ui.dialogs.source_view import NOT_COLLECTED, SourceView

ENDED = ReplyStats(prompt_tokens=80, completion_tokens=9, stop_reason=StopReason.END_OF_TURN)
CALLED = ReplyStats(prompt_tokens=40, completion_tokens=12, stop_reason=StopReason.TOOL_CALLS)


def message_view(message: StoredMessage) -> MessageView:
    """As the window builds one from a stored message."""
    return MessageView(message.id, message.role, message.content, message.stats, message.status, message.model,
                       message.version, message.versions, message.tool_calls, message.tool_result, message.sources)


@pytest.fixture
def store(tmp_path):
    opened = ConversationStore(tmp_path / "conversations.db")
    yield opened
    opened.close()


def asked(store, sources: tuple[Source, ...], tool_step: bool = False) -> tuple[int, list[MessageView]]:
    cid = store.create_conversation(title="Garden")
    question = store.add_message(cid, "user", "When do I prune roses?")
    store.set_sources(question, sources)
    if tool_step:
        call = ToolCall(0, "call_1", "lookup", "{}")
        begin_reply(store, cid, "", "tiny.gguf", SamplingParams()).finish("Looking.", CALLED, tool_calls=(call,))
        store.add_tool_result(cid, ToolResult("call_1", "lookup", "nothing"))
    begin_reply(store, cid, "", "tiny.gguf", SamplingParams()).finish("In late winter [1], before growth [2].", ENDED)
    return question, [message_view(m) for m in store.recent_messages(cid, 50).messages]


def test_a_reply_lists_its_sources_numbered_with_links(qtbot, store, tmp_path):
    sources = (Source(str(tmp_path / "roses.pdf"), "Prune roses in late winter, before new growth starts.", 3, "Roses"),
               Source(str(tmp_path / "notes.md"), "Cut just above an outward-facing bud."))
    question, messages = asked(store, sources)
    view = shown_view(qtbot, 700, 900)
    view.set_messages(messages)
    text = plain_text(view)
    assert "Sources\n[1] roses.pdf · page 3\n“Prune roses in late winter" in text
    assert "[2] notes.md\n“Cut just above an outward-facing bud.”" in text
    assert text.index("In late winter") < text.index("Sources")
    assert [href for href in hrefs(view) if "open-source" in href] == [source_href(question, 1), source_href(question, 2)]
    with qtbot.waitSignal(view.sourceOpened) as opened:
        click_anchor(qtbot, view, source_href(question, 2))
    assert opened.args == [question, 2]


def test_a_turn_with_tool_calls_lists_them_once_under_its_last_reply(qtbot, store, tmp_path):
    _question, messages = asked(store, (Source(str(tmp_path / "a.txt"), "Alpha."),), tool_step=True)
    view = shown_view(qtbot, 700, 900)
    view.set_messages(messages)
    text = plain_text(view)
    assert text.count("Sources") == 1 and text.index("Sources") > text.index("In late winter")


def test_a_hostile_file_name_and_passage_are_shown_as_inert_text(qtbot, store, tmp_path):
    _question, messages = asked(store, (Source("/docs/<b>x<i>\u202etxt.exe", "<script>alert(1)</script>\x07"),))
    view = shown_view(qtbot, 700, 900)
    view.set_messages(messages)
    text = plain_text(view)
    assert "[1] <b>x<i>�txt.exe" in text and "“<script>alert(1)</script>�”" in text
    assert not any(href.startswith(("http", "file", "javascript")) for href in hrefs(view))


def test_a_pdf_source_opens_at_its_page_with_the_passage(qtbot, tmp_path):
    pdf = write_pdf(tmp_path / "roses.pdf", [["Roses"], ["Prune roses in late winter."], ["Index"]])
    view = SourceView(Source(str(pdf), "Prune roses in late winter.", 2, "Roses"), 1)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(lambda: view.page.pixmap() is not None and not view.page.pixmap().isNull(), timeout=10_000)
    assert "Page 2 of 3" in view.where.text() and view.passage.toPlainText() == "Roses\n\nPrune roses in late winter."
    image = view.page.pixmap().toImage()
    assert image.width() >= 700 and image.pixelColor(5, 5).lightness() > 240  # a white page, drawn
    assert view.open_button.isEnabled() and not view.problem.isVisible()
    assert view.accessibleName() == "Source 1: roses.pdf, page 2"


def test_a_source_whose_file_is_gone_still_shows_what_the_reply_read(qtbot, tmp_path):
    view = SourceView(Source(str(tmp_path / "moved.pdf"), "The passage as indexed.", 4), 2)
    qtbot.addWidget(view)
    view.show()
    assert view.problem.isVisible() and "no longer there" in view.problem.text()
    assert not view.open_button.isEnabled() and view.folder_button.isEnabled()
    assert view.passage.toPlainText() == "The passage as indexed." and not view.page_area.isVisible()


def test_a_file_hearth_does_not_index_is_not_handed_to_the_system(qtbot, tmp_path):
    program = tmp_path / "run.sh"
    program.write_text("#!/bin/sh\necho hi\n")
    view = SourceView(Source(str(program), "echo hi"), 1)  # a record someone edited by hand
    qtbot.addWidget(view)
    assert not view.open_button.isEnabled()


def test_a_script_is_shown_but_not_handed_to_the_system(qtbot, tmp_path):
    script = tmp_path / "setup.bat"
    script.write_text("del /q *\n")
    view = SourceView(Source(str(script), "del /q *"), 1)  # indexed as code: a system may run it
    qtbot.addWidget(view)
    assert not view.open_button.isEnabled() and view.folder_button.isEnabled()
    assert view.passage.toPlainText() == "del /q *"


def test_a_pdf_that_changed_since_it_was_read_is_said_not_drawn(qtbot, tmp_path):
    pdf = write_pdf(tmp_path / "short.pdf", [["One page now"]])
    view = SourceView(Source(str(pdf), "A passage from page 4, when it had more.", 4), 1)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitUntil(view.problem.isVisible, timeout=10_000)
    assert view.problem.text() == "The page could not be drawn: the file has no page 4 (it has 1)."
    assert not view.page_area.isVisible() and view.passage.toPlainText().startswith("A passage from page 4")


def test_a_file_outside_every_collection_is_neither_read_nor_handed_over(qtbot, tmp_path):
    pdf = write_pdf(tmp_path / "elsewhere.pdf", [["Page one"]])  # an imported record may name any path
    view = SourceView(Source(str(pdf), "The passage as recorded.", 1), 1, in_collections=False)
    qtbot.addWidget(view)
    view.show()
    assert view.problem.isVisible() and view.problem.text() == NOT_COLLECTED
    assert not view.open_button.isEnabled() and not view.folder_button.isEnabled()
    assert not view.page_area.isVisible() and view.page.pixmap().isNull()
    assert view.passage.toPlainText() == "The passage as recorded."
