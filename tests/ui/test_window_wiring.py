"""The window's parts wired together, used as a user uses them over a scripted model: the
context meter while a reply grows, one name for the model everywhere, the model selector above
the chat, the side panels giving way on a small window, the welcome's links, editing a message
in the transcript, and unloading the model."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTextBrowser
from support.flow_harness import MODEL, WAIT_MS, FlowWindow, GatedScript

from app.conversation.context_use import ContextUse
from app.ui.chat.welcome import BASE_PROMPTS
from app.ui.window.context_meter import METER_INTERVAL_MS
from app.ui.window.splitter import CHAT_WIDTH, LIST_WIDTHS, SIDE_WIDTHS

MAX_LINKS = 30


@pytest.fixture
def flow(qtbot, gemma_info, tmp_path):
    window = FlowWindow(qtbot, GatedScript(gemma_info), tmp_path)
    yield window
    window.close()


def transcript(window) -> QTextBrowser:
    return window.chat.findChild(QTextBrowser)


def activate_link(browser: QTextBrowser, href_start: str) -> None:
    """Tab through the transcript's links to the first whose target starts with href_start and
    press Enter on it, as a keyboard user does."""
    browser.setFocus()
    for _ in range(MAX_LINKS):
        QTest.keyClick(browser, Qt.Key.Key_Tab)
        if browser.textCursor().charFormat().anchorHref().startswith(href_start):
            QTest.keyClick(browser, Qt.Key.Key_Return)
            return
    pytest.fail(f"no link to {href_start} in the transcript")


def test_the_context_meter_moves_while_the_reply_grows(flow, qtbot):
    label = flow.window.context_label
    assert label.text() == "Context 0 / 4,096"
    flow.script.gated, flow.script.replies = True, ["A reply that grows piece by piece until it ends"]
    flow.type_and_send("Grow")
    qtbot.waitUntil(lambda: label.text().startswith("Context ≈"), timeout=WAIT_MS)
    seen = {label.text()}
    for _ in range(3):
        flow.script.release()
        qtbot.waitUntil(lambda: label.text() not in seen, timeout=WAIT_MS)
        seen.add(label.text())
    counts = sorted(int(text.split("≈")[1].split(" /")[0].replace(",", "")) for text in seen)
    assert len(counts) == 4 and counts[0] < counts[-1]
    flow.script.gated = False
    flow.script.release()
    qtbot.waitUntil(lambda: not flow.session.busy, timeout=WAIT_MS)
    stats = flow.session.messages()[-1].stats
    assert label.text() == f"Context {stats.prompt_tokens + stats.completion_tokens:,} / 4,096"


def test_the_reply_is_headed_by_the_models_own_name_as_in_the_status_bar(flow):
    flow.send_and_wait("Who are you?")
    name = flow.models.current.name
    assert name in flow.window.model_label.text()
    text = transcript(flow.window).toPlainText()
    assert name in text and MODEL.name not in text  # not the file name
    assert flow.session.messages()[-1].model == MODEL.name  # what is recorded stays the file


def test_the_model_selector_above_the_chat_loads_the_model_chosen(flow, qtbot, gemma_path):
    header = flow.window.chat_header
    assert header.combo.accessibleName() == "Model" and header.label.buddy() is header.combo
    with qtbot.waitSignal(flow.window.picker.scanFinished, timeout=WAIT_MS):
        flow.window.picker.add_model_file_path(gemma_path)  # the real default model, in the list
    paths = [header.combo.itemData(i) for i in range(header.combo.count())]
    assert paths.index(MODEL) == header.combo.currentIndex() and gemma_path in paths
    name = flow.models.current.name
    # Two files, one name: each is shown by the model's name, with its file name to tell them apart.
    assert header.combo.currentText() == f"{name} ({MODEL.name})"
    assert header.combo.itemText(paths.index(gemma_path)) == f"{name} ({gemma_path.name})"
    header.combo.setFocus()
    key = Qt.Key.Key_Down if paths.index(gemma_path) > paths.index(MODEL) else Qt.Key.Key_Up
    with qtbot.waitSignal(flow.models.modelLoaded, timeout=WAIT_MS) as loaded:
        for _ in range(abs(paths.index(gemma_path) - paths.index(MODEL))):
            QTest.keyClick(header.combo, key)
        assert header.state.text() == "Loading…" and header.state.isVisible()
    assert loaded.args[0].path == gemma_path and header.shown_path() == gemma_path
    assert not header.state.isVisible()


@pytest.mark.parametrize("width, height", [(1024, 640), (1920, 1080)])
def test_the_side_panels_give_way_to_the_chat_on_a_small_window(flow, qtbot, width, height):
    window = flow.window
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == width)
    list_width, chat_width, side_width = window.splitter.sizes()
    assert chat_width >= CHAT_WIDTH
    assert list_width >= LIST_WIDTHS[0] and side_width >= SIDE_WIDTHS[0]
    if width == 1024:
        assert side_width < SIDE_WIDTHS[1]  # narrower than at first, for the chat
    else:
        assert (list_width, side_width) == (LIST_WIDTHS[1], SIDE_WIDTHS[1])


def test_the_welcomes_links_open_get_models_and_put_a_prompt_in_the_message_box(flow, qtbot):
    window = flow.window
    assert flow.session.conversation_id is None  # an empty chat: the welcome
    activate_link(transcript(window), "hearth:get-models")
    qtbot.waitUntil(lambda: window.model_display.get_models_dialog is not None and window.model_display.get_models_dialog.isVisible(), timeout=WAIT_MS)
    window.model_display.get_models_dialog.close()
    activate_link(transcript(window), "hearth:prompt/")
    prompt = window.composer.text()
    assert prompt in BASE_PROMPTS  # the scripted model is the default Gemma, a base model
    assert window.composer.edit.hasFocus() and flow.session.conversation_id is None  # not sent


def test_an_edit_in_the_transcript_is_answered_again(flow, qtbot):
    flow.script.replies = ["First answer.", "Second answer."]
    flow.send_and_wait("Fisrt question")
    window = flow.window
    activate_link(transcript(window), "hearth:edit/")
    box = window.focusWidget()
    assert box.accessibleName() == "Edit message"
    box.selectAll()
    QTest.keyClicks(box, "First question")
    with qtbot.waitSignal(flow.session.replyFinished, timeout=WAIT_MS):
        QTest.keyClick(box, Qt.Key.Key_Return)
    assert [m.content for m in flow.session.messages()] == ["First question", "Second answer."]


def test_unloading_the_model_says_there_is_none(flow, qtbot):
    window = flow.window
    with qtbot.waitSignal(flow.models.modelUnloaded, timeout=WAIT_MS):
        window.picker.unload_button.click()
    assert window.model_label.text() == "No model" and window.context_label.text() == ""
    assert window.chat_header.combo.currentIndex() == -1
    assert "No model is loaded" in transcript(window).toPlainText()


def test_the_view_menu_hides_and_shows_each_side_panel(flow, qtbot):
    window = flow.window
    list_width, chat_width, side_width = window.splitter.sizes()
    window.conversations_action.trigger()
    assert window.left_panel.isHidden() and not window.conversations_action.isChecked()
    assert window.splitter.sizes()[1] > chat_width
    window.conversations_action.trigger()
    window.panel_action.trigger()
    assert not window.left_panel.isHidden() and window.side_panel.isHidden()
    window.panel_action.trigger()
    qtbot.waitUntil(lambda: window.splitter.sizes() == [list_width, chat_width, side_width], timeout=WAIT_MS)


def test_the_meter_shows_a_burst_of_estimates_at_its_first_and_its_last(flow, qtbot):
    """A streaming reply estimates at every chunk; each new text relays out the status bar (#31),
    so the meter writes the first of a burst at once and the latest when its interval ends,
    and the engine's count at once, whenever it comes."""
    label, meter = flow.window.context_label, flow.window.model_display.context_meter
    qtbot.wait(METER_INTERVAL_MS * 2)  # whatever the window showed last has had its interval
    for tokens in range(100, 110):  # ten estimates within one interval, as ten chunks send them
        meter.show(ContextUse(tokens, estimated=True))
    assert label.text() == "Context ≈100 / 4,096"
    qtbot.waitUntil(lambda: label.text() == "Context ≈109 / 4,096", timeout=WAIT_MS)
    meter.show(ContextUse(120, estimated=True))  # within the next interval: waits for its end
    meter.show(ContextUse(118, estimated=False))  # the engine's count: at once, and final
    assert label.text() == "Context 118 / 4,096"
    qtbot.wait(METER_INTERVAL_MS * 2)
    assert label.text() == "Context 118 / 4,096"  # the estimate it replaced never shows
    meter.show(ContextUse(130, estimated=True))  # the count ended the interval: the next estimate shows at once
    assert label.text() == "Context ≈130 / 4,096"
