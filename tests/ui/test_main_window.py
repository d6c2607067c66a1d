"""The real window, offscreen, with the real Gemma model and a real database file."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from support.model_files.tiny_gguf import write_tiny_gguf
from support.settings_file import ini_file
from support.window_stack import SETTINGS_FILE, ModelStack, WindowStack

from app.engine.llama.devices import offload_support
from app.engine.types import ModelSettings
from app.ui.models.table import Column
from app.ui.parameters.panel import NO_GPU_REASON

SHORT = dict(temperature=0.0, repeat_penalty=1.0, max_tokens=8, seed=1)


class Harness:
    """A window over a database and settings file in tmp_path, the model loaded once.

    The bridge and the model session outlive the window, as in Hearth; a reopened window gets a
    new conversation session over the reopened database.
    """

    def __init__(self, root, qtbot, gemma_path):
        self.root, self.qtbot, self.gemma_path = root, qtbot, gemma_path
        self.model_stack = ModelStack.start(root, model_settings={gemma_path.name: ModelSettings(n_ctx=2048)})
        self.bridge, self.models = self.model_stack.bridge, self.model_stack.models
        self.settings = ini_file(root / SETTINGS_FILE)
        self.open_window()
        self.model_stack.load(qtbot, gemma_path, 60_000)
        self.short_replies()

    def open_window(self):
        self.stack = WindowStack.open(self.qtbot, self.model_stack, self.root)
        self.store, self.downloads, self.window = self.stack.store, self.stack.downloads, self.stack.window

    def reopen_window(self):
        self.stack.close(engine=False)  # the bridge and the model outlive the window
        self.open_window()
        self.short_replies()

    def short_replies(self, **changes):
        settings = self.models.settings
        self.models.update_settings(settings.with_changes(sampling=settings.sampling.with_changes(**(SHORT | changes))))

    def send_and_wait(self, text):
        with self.qtbot.waitSignal(self.window.session.replyFinished, timeout=60_000) as finished:
            self.window.composer.edit.setPlainText(text)
            QTest.keyClick(self.window.composer.edit, Qt.Key_Return)
        reply = finished.args[0]
        return reply.message_id, reply.text, reply.stats, reply.status

    def replies(self):
        return [m for m in self.window.session.messages() if m.role == "assistant"]

    def close(self):
        self.stack.close()


@pytest.fixture
def harness(tmp_path, qtbot, gemma_path):
    harness = Harness(tmp_path, qtbot, gemma_path)
    yield harness
    harness.close()


def test_model_is_shown_in_the_status_bar(harness):
    assert "Gemma 3 270m" in harness.window.model_label.text()
    assert "CPU" in harness.window.model_label.text() or "CUDA" in harness.window.model_label.text()
    assert harness.window.context_label.text() == "Context 0 / 2,048"


def test_the_status_bar_and_the_gpu_note_say_why_the_model_runs_on_the_cpu(harness):
    """This process's own answer (a CPU build here, a CUDA build without a driver under
    `make test CUDA=1`), shown in both places the same way."""
    support = offload_support()
    note = harness.window.parameters.gpu_reason
    if support.gpu:
        assert note.isHidden() and "CUDA" in harness.window.model_label.text()
    elif support.reason:
        assert note.text() == f"The model runs on the CPU ({support.reason})."
        assert support.reason in harness.window.model_label.text()
    else:
        assert note.text() == NO_GPU_REASON and "CPU (" in harness.window.model_label.text()
    if not support.gpu:
        assert not note.isHidden() and not harness.window.parameters.gpu_layers.isEnabled()


def test_enter_sends_and_the_reply_streams_into_the_view(harness, qtbot):
    chunks = []
    harness.window.session.replyChunk.connect(chunks.append)
    message_id, text, stats, status = harness.send_and_wait("Hello there")
    assert status == "complete" and stats.completion_tokens == 8
    assert "".join(chunks) == text
    assert harness.window.chat.text_of_reply().strip() == text.strip()
    stored = harness.window.session.messages()
    assert [(m.role, m.status) for m in stored] == [("user", "complete"), ("assistant", "complete")]
    assert stored[0].content == "Hello there" and stored[1].content == text
    assert stored[1].params["max_tokens"] == 8 and stored[1].stats.stop_reason == "length"
    assert harness.window.composer.text() == ""
    assert "tok/s" in harness.window.speed_label.text()
    assert harness.window.context_label.text().startswith("Context ")


def test_a_long_prompt_shows_how_far_it_has_been_read(harness, qtbot):
    seen = []
    harness.window.session.promptProgress.connect(lambda *_: seen.append(harness.window.chat.text_of_reply()))
    harness.send_and_wait("Rivers carry sediment to the sea, where it settles into a delta. " * 45)
    assert seen and all(text.startswith("Reading the conversation… ") for text in seen)
    assert "Reading the conversation" not in harness.window.chat.text_of_reply()


def test_shift_enter_makes_a_new_line(harness):
    edit = harness.window.composer.edit
    edit.setPlainText("first")
    edit.moveCursor(edit.textCursor().MoveOperation.End)
    QTest.keyClick(edit, Qt.Key_Return, Qt.ShiftModifier)
    assert edit.toPlainText() == "first\n" and harness.window.session.conversation_id is None


def test_no_double_send_while_generating(harness, qtbot):
    harness.short_replies(max_tokens=40)
    window = harness.window
    with qtbot.waitSignal(window.session.replyFinished, timeout=60_000):
        window.composer.edit.setPlainText("First")
        window.composer._submit()
        assert window.composer.button.text() == "Stop"
        window.composer.edit.setPlainText("Second")
        QTest.keyClick(window.composer.edit, Qt.Key_Return)  # Enter while busy sends nothing
        window.send("Third")  # nor does a direct call
    users = [m.content for m in window.session.messages() if m.role == "user"]
    assert users == ["First"]
    assert window.composer.text() == "Second"  # the unsent text is kept for the user


def test_stop_keeps_the_partial_reply_and_it_is_saved_while_streaming(harness, qtbot):
    harness.short_replies(max_tokens=400, temperature=0.9)
    window = harness.window
    saved_while_streaming = []

    def check_database(_text):
        replies = harness.replies()
        if replies and replies[-1].status == "streaming" and replies[-1].content:
            saved_while_streaming.append(replies[-1].content)
            window.stop_action.trigger()

    window.session.replyChunk.connect(check_database)
    with qtbot.waitSignal(window.session.replyFinished, timeout=60_000) as finished:
        window.send("Tell me a long story")
    text, stats, status = finished.args[0].text, finished.args[0].stats, finished.args[0].status
    assert saved_while_streaming, "the partial reply was never saved while streaming"
    assert status == "cancelled" and stats.stop_reason == "cancelled"
    assert harness.replies()[-1].status == "cancelled" and harness.replies()[-1].content == text
    assert text.startswith(saved_while_streaming[0])
    assert window.composer.button.text() == "Send"


def test_regenerate_shows_a_new_reply_and_keeps_the_first_as_a_version(harness, qtbot):
    harness.send_and_wait("Name a fruit")
    first = harness.replies()[-1]
    harness.short_replies(temperature=1.0, seed=99)
    with qtbot.waitSignal(harness.window.session.replyFinished, timeout=60_000):
        harness.window.regenerate_action.trigger()
    replies = harness.replies()
    assert len(replies) == 1 and replies[0].id != first.id  # the branch shown ends in the new reply
    assert replies[0].content != first.content  # seed 99 at temperature 1 writes something else
    assert (replies[0].version, replies[0].versions) == (2, 2)
    assert harness.store.message(first.id).content == first.content  # the first reply is kept
    assert [m.role for m in harness.window.session.messages()] == ["user", "assistant"]


def test_edit_makes_a_new_version_and_continues_from_there(harness, qtbot):
    harness.send_and_wait("First question")
    harness.send_and_wait("Second question")
    before = harness.window.session.messages()
    with qtbot.waitSignal(harness.window.session.replyFinished, timeout=60_000):
        assert harness.window.session.edit(before[0].id, "Edited question")
    messages = harness.window.session.messages()
    assert [(m.role, m.content) for m in messages][0] == ("user", "Edited question")
    assert [m.role for m in messages] == ["user", "assistant"]
    assert (messages[0].version, messages[0].versions) == (2, 2)
    kept = [harness.store.message(m.id).content for m in before]  # the first branch, all of it
    assert kept == [m.content for m in before]


def test_conversations_persist_and_reload(harness, qtbot):
    _, text, _, _ = harness.send_and_wait("Remember me")
    conversation_id = harness.window.session.conversation_id
    harness.reopen_window()
    listing = harness.window.conversations
    assert listing.conversation_ids() == [conversation_id] and listing.headings() == ["Today"]
    assert listing.item_of(conversation_id).text() == "Remember me"
    listing.list.setCurrentItem(listing.item_of(conversation_id))
    assert harness.window.session.conversation_id == conversation_id
    assert harness.window.chat.text_of_reply().strip() == text.strip()


def test_export_and_import(harness, tmp_path):
    _, text, _, _ = harness.send_and_wait("Export this")
    conversation_id = harness.window.session.conversation_id
    harness.window.write_export(conversation_id, "markdown", tmp_path / "chat.md")
    harness.window.write_export(conversation_id, "json", tmp_path / "chat.json")
    markdown = (tmp_path / "chat.md").read_text()
    assert "Export this" in markdown and text.strip()[:20] in markdown
    with harness.qtbot.waitSignal(harness.window.importFinished, timeout=10_000):
        harness.window.import_conversation(tmp_path / "chat.json")  # on a worker thread
    imported = harness.window.session.conversation_id
    assert imported != conversation_id
    assert [m.content for m in harness.window.session.messages()] == ["Export this", text]
    exported = json.loads((tmp_path / "chat.json").read_text())
    assert exported["format"] == "hearth.conversation"


def test_delete_offers_undo(harness):
    harness.send_and_wait("Delete me")
    conversation_id = harness.window.session.conversation_id
    harness.window.delete_conversation(conversation_id)
    assert harness.window.conversations.conversation_ids() == []
    assert harness.window.undo_bar.undo_button.isVisible()
    harness.window.undo_bar.undo_button.click()
    assert harness.window.conversations.conversation_ids() == [conversation_id]


def test_search_by_content(harness, qtbot):
    harness.send_and_wait("Pineapples are tropical")
    harness.window.session.new_conversation()
    harness.send_and_wait("Something else")
    listing = harness.window.conversations
    listing.search.setText("pineapple")
    qtbot.waitUntil(lambda: len(listing.conversation_ids()) == 1, timeout=3000)
    assert listing.item_of(listing.conversation_ids()[0]).text() == "Pineapples are tropical"


def test_corrupt_model_in_the_picker_keeps_the_loaded_model(harness, qtbot, tmp_path):
    corrupt = tmp_path / "broken.gguf"
    with harness.gemma_path.open("rb") as source:
        corrupt.write_bytes(source.read(5_000_000))  # a truncated download
    picker = harness.window.picker
    with qtbot.waitSignal(picker.scanFinished, timeout=10_000):
        picker.add_model_file_path(corrupt)
    entry = next(e for e in picker.entries() if e.path == corrupt)
    assert not entry.usable and "truncated" in entry.error
    with qtbot.waitSignal(harness.models.loadFailed, timeout=30_000):
        harness.window.models.load(corrupt)
    assert "truncated" in picker.error_label.text()
    assert harness.models.current.path == harness.gemma_path
    assert "Gemma 3 270m" in harness.window.model_label.text()
    assert harness.send_and_wait("Still there?")[3] == "complete"


def test_keyboard_shortcuts(harness, qtbot):
    window = harness.window
    window.activateWindow()
    QTest.keyClick(window.composer.edit, Qt.Key_N, Qt.ControlModifier)
    assert window.session.conversation_id is not None  # Ctrl+N: a new chat
    harness.short_replies(max_tokens=400, temperature=0.9)
    with qtbot.waitSignal(window.session.replyFinished, timeout=60_000) as finished:
        window.send("Tell me a long story")
        qtbot.waitUntil(lambda: window.chat.text_of_reply() != "", timeout=30_000)
        QTest.keyClick(window.composer.edit, Qt.Key_Escape)  # Esc: stop
    assert finished.args[0].status == "cancelled"
    QTest.keyClick(window.chat, Qt.Key_L, Qt.ControlModifier)  # Ctrl+L: back to the input
    assert window.composer.edit.hasFocus()


def test_window_state_and_last_model_are_remembered(harness):
    harness.window.resize(780, 560)  # inside the offscreen screen (restoreGeometry clamps to it), above the least width
    harness.window.splitter.setSizes([150, 400, 200])
    sizes = harness.window.splitter.sizes()
    harness.reopen_window()
    assert (harness.window.size().width(), harness.window.size().height()) == (780, 560)
    assert harness.window.splitter.sizes() == sizes
    assert harness.settings.value("models/last") == str(harness.gemma_path)


def test_a_thread_count_applies_when_the_model_is_reloaded(harness, qtbot):
    window = harness.window
    automatic = window.models.current.device.cpu_threads
    assert f"CPU ({automatic} thread" in window.model_label.text() or window.models.current.device.backend != "CPU"
    window.parameters.cpu_threads.setValue(1)
    assert not window.parameters.reload_notice.isHidden()
    with qtbot.waitSignal(window.models.modelLoaded, timeout=60_000):
        window.parameters.reload_button.click()
    assert window.models.current.device.cpu_threads == 1
    assert window.parameters.reload_notice.isHidden()
    if window.models.current.device.backend == "CPU":
        reason = window.models.current.device.reason
        assert window.model_label.text().endswith(f"CPU (1 thread; {reason})" if reason else "CPU (1 thread)")


def test_every_file_menu_action_that_opens_a_dialog_opens_it(harness, qtbot):
    """Triggered as a user triggers them (the menu action, not the method), each opens its dialog."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    window = harness.window
    file_menu = window.menuBar().actions()[0].menu()
    for text in ("Import conversation…", "Add model file…", "Add model folder…"):
        action = next(a for a in file_menu.actions() if a.text() == text)
        shown = []

        def close_dialog():
            dialog = QApplication.activeModalWidget()
            shown.append(dialog.windowTitle() if dialog else None)
            if dialog:
                dialog.reject()

        QTimer.singleShot(200, close_dialog)
        action.trigger()
        qtbot.waitUntil(lambda: bool(shown), timeout=5_000)
        assert shown[0], f"{text} opened no dialog"


def test_the_model_list_sorts_from_the_view_menu_as_from_its_header(harness, qtbot, tmp_path):
    """Qt's header never takes the keyboard focus: View → Sort models by is the keyboard's way."""
    folder = tmp_path / "more-models"
    write_tiny_gguf(folder / "1.gguf", name="Zebra finch")
    write_tiny_gguf(folder / "2.gguf", name="Aardvark")
    picker = harness.window.picker
    with qtbot.waitSignal(picker.scanFinished, timeout=10_000):
        picker.add_folder_path(folder)
    view_menu = next(a.menu() for a in harness.window.menuBar().actions() if a.text() == "&View")
    sort = next(a.menu() for a in view_menu.actions() if a.menu() and a.text() == "&Sort models by")
    actions = {a.text(): a for a in sort.actions() if not a.isSeparator()}
    header = picker.view.horizontalHeader()
    assert actions["Order found"].isChecked()

    def names() -> list[str]:
        proxy = picker.proxy
        shown = [proxy.index(row, Column.NAME).data() for row in range(proxy.rowCount())]
        return [n for n in shown if n in ("Zebra finch", "Aardvark")]

    found = names()
    assert found == ["Zebra finch", "Aardvark"]  # in the order their files were found
    actions["Name"].trigger()
    assert names() == ["Aardvark", "Zebra finch"] and actions["Name"].isChecked()
    actions["Order found"].trigger()
    assert header.sortIndicatorSection() == -1 and names() == found
    actions["Name"].trigger()
    actions["Name"].trigger()  # again: the other way
    assert names() == ["Zebra finch", "Aardvark"] and header.sortIndicatorOrder() == Qt.DescendingOrder
    harness.window.resize(1400, 800)  # wide enough that the picker shows its Size column
    qtbot.waitUntil(lambda: not picker.view.isColumnHidden(Column.SIZE), timeout=2_000)
    x = header.sectionViewportPosition(Column.SIZE) + header.sectionSize(Column.SIZE) // 2
    QTest.mouseClick(header.viewport(), Qt.LeftButton, pos=QPoint(x, header.height() // 2))
    assert actions["Size"].isChecked() and header.sortIndicatorSection() == Column.SIZE


def test_the_fit_column_is_planned_again_for_load_settings_not_for_each_sampling_edit(harness, monkeypatch):
    """A sampling or system-prompt edit is a settingsChanged on every keystroke; re-planning
    every listed file for it was wasted work on the GUI thread."""
    picker, models = harness.window.picker, harness.models
    replanned = []
    refresh = picker.refresh_fits
    monkeypatch.setattr(picker, "refresh_fits", lambda: (replanned.append(1), refresh()))
    row = picker.model.row_of(harness.gemma_path)
    tip = picker.model.index(row, Column.FIT).data(Qt.ToolTipRole)

    harness.short_replies(temperature=0.3)
    models.update_settings(models.settings.with_changes(system_prompt="Be brief."))
    assert replanned == []
    models.update_settings(models.settings.with_changes(n_ctx=8192))
    assert replanned == [1]
    assert picker.model.index(row, Column.FIT).data(Qt.ToolTipRole) != tip  # a bigger KV cache
