"""The real window over real database files (hostile imports, a damaged file, a conversation of
thousands of messages, a megabyte title), driven as a user drives it. The model is scripted
(tests/support/scripted_backend.py): nothing here is about generation."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QThreadPool, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from support.damaged_database import build_conversations, damage, damaged_database
from support.window_stack import DATABASE_FILE, ModelStack, WindowStack

from app.ui.app.application import MOVE_ASIDE_BUTTON, open_store
from app.ui.chat.paging import HISTORY_SHOWN_MESSAGES
from app.ui.window.conversation_list import TITLE_SHOWN_CHARS
from app.ui.window.main_window import MESSAGES_LOADED, MainWindow

TS = "2024-01-01T00:00:00Z"


def export(messages: int = 1, title: str = "Imported", content: str = "hi") -> dict:
    return {
        "format": "hearth.conversation", "version": 1,
        "conversation": {"title": title, "created_at": TS, "updated_at": TS},
        "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{content} {i}",
                      "created_at": TS, "updated_at": TS} for i in range(messages)],
    }


class Windows:
    """Opens MainWindow over a database file in tmp_path; closes what it opened."""

    def __init__(self, qtbot, models, tmp_path):
        self.qtbot, self.tmp_path = qtbot, tmp_path
        self.model_stack = ModelStack.of(models, tmp_path)
        self.path = tmp_path / DATABASE_FILE
        self.opened: list[WindowStack] = []

    def open(self) -> MainWindow:
        self.opened.append(WindowStack.open(self.qtbot, self.model_stack, self.tmp_path, qtbot_closes=True))
        return self.opened[-1].window

    def close(self):
        for stack in self.opened:
            stack.close(engine=False)  # the scripted_models fixture shuts its bridge down


@pytest.fixture
def windows(qtbot, scripted_models, tmp_path):
    opened = Windows(qtbot, scripted_models, tmp_path)
    yield opened
    opened.close()


def import_through_the_window(qtbot, window, path: Path) -> object:
    """The import's result, once the window says it finished. It must not have finished by the
    time import_conversation returns: an import run on the GUI thread would have. (A bound on
    the call's time could not tell: 2,000 messages import in about 90 ms, and a second test
    process on the other core once held the call itself 530 ms.)"""
    with qtbot.waitSignal(window.importFinished, timeout=10_000) as finished:
        window.import_conversation(path)
        assert not finished.signal_triggered, "the import ran on the GUI thread"
    return finished.args[0]


HOSTILE = {
    "overflow.json": json.dumps(export() | {"conversation": {"title": "x", "created_at": "9999-12-31T23:59:59-23:59",
                                                              "updated_at": TS}}).encode(),
    "surrogate.json": json.dumps(export(content="\ud800")).encode(),
    "nested.json": b"[" * 100_000 + b"]" * 100_000,
    "chat.md": b"# Tea\n\n## User\n\nGreen or black?\n",
    "binary.json": bytes(range(256)) * 16,
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_import_is_one_message_in_the_window_and_imports_nothing(qtbot, windows, tmp_path, name):
    window = windows.open()
    path = tmp_path / name
    path.write_bytes(HOSTILE[name])
    assert import_through_the_window(qtbot, window, path) is None
    banner = window.store_banner
    assert banner.isVisible() and banner.message.text().startswith(f"Could not import {name}: ")
    assert len(banner.message.text()) < 400
    assert not banner.export_button.isVisible()
    assert window.store.list_conversations() == [] and window.conversations.conversation_ids() == []


def test_a_conversation_of_thousands_of_messages_imports_off_the_gui_thread_and_opens_at_once(qtbot, windows, tmp_path):
    window = windows.open()
    path = tmp_path / "long.json"
    path.write_text(json.dumps(export(messages=2_000)))
    conversation_id = import_through_the_window(qtbot, window, path)
    assert window.session.conversation_id == conversation_id
    assert window.chat.hidden_count() == 2_000 - HISTORY_SHOWN_MESSAGES
    window.session.new_conversation()
    started = time.monotonic()
    window.conversations.list.setCurrentItem(window.conversations.item_of(conversation_id))  # as a user opens it
    assert time.monotonic() - started < 1
    assert window.session.conversation_id == conversation_id
    assert window.chat.text_of_reply() == "hi 1999"
    for _ in range(MESSAGES_LOADED // HISTORY_SHOWN_MESSAGES - 1):  # the rest of what was read at first
        window.chat.show_earlier()
    assert window.chat.hidden_count() == 2_000 - MESSAGES_LOADED
    window.chat.show_earlier()  # the window reads the next messages from the store
    assert window.chat.hidden_count() == 2_000 - MESSAGES_LOADED - HISTORY_SHOWN_MESSAGES


def test_a_megabyte_title_is_shown_shortened_and_never_cut_by_an_unchanged_edit(qtbot, windows):
    title = "t" * 1_000_000
    window = windows.open()
    conversation_id = window.store.import_json(export(title=title))
    started = time.monotonic()
    for _ in range(5):
        window.refresh_conversations()
    assert time.monotonic() - started < 0.5
    item = window.conversations.item_of(conversation_id)
    assert len(item.text()) <= TITLE_SHOWN_CHARS and len(item.toolTip()) < 200
    item.setText(item.text())  # the in-place editor closed without a change
    assert window.store.get_conversation(conversation_id).title == title
    item.setText("Short")
    qtbot.waitUntil(lambda: window.store.get_conversation(conversation_id).title == "Short", timeout=2_000)


def test_a_damaged_database_is_said_in_the_window_with_what_to_do(qtbot, windows, tmp_path):
    ids = damaged_database(windows.path)
    window = windows.open()
    banner = window.store_banner
    listed = window.conversations.conversation_ids()
    assert len(listed) == len(ids)
    for conversation_id in listed:  # opening each, as a user clicks through the list
        window.conversations.list.setCurrentItem(window.conversations.item_of(conversation_id))
    assert banner.isVisible() and "conversations.sqlite3 is damaged" in banner.message.text()
    assert banner.export_button.isVisible() and banner.move_aside_button.isVisible()

    banner.hide()
    window.conversations.search.setText("lorem")
    qtbot.waitUntil(banner.isVisible, timeout=3_000)

    banner.hide()
    window.check_database()
    qtbot.waitUntil(banner.isVisible, timeout=5_000)
    assert "is damaged" in banner.message.text()

    folder = tmp_path / "rescued"
    folder.mkdir()
    written, failed = window.export_readable(folder)
    assert written and failed and written + failed == len(ids)
    rescued = sorted(folder.glob("*.json"))
    assert len(rescued) == written and json.loads(rescued[0].read_text())["format"] == "hearth.conversation"

    damaged_bytes = windows.path.read_bytes()
    moved = window.start_fresh()
    assert moved.read_bytes() == damaged_bytes  # kept, beside the new one
    assert window.conversations.conversation_ids() == [] and window.session.store is window.store
    assert "moved to" in banner.message.text() and not banner.move_aside_button.isVisible()
    window.session.new_conversation()
    assert len(window.store.list_conversations()) == 1


def test_the_startup_check_finds_nothing_in_a_sound_database(qtbot, windows):
    build_conversations(windows.path, count=2, messages=2)
    window = windows.open()
    window.check_database()
    assert QThreadPool.globalInstance().waitForDone(5_000)
    qtbot.wait(50)  # the worker's answer, queued to the GUI thread
    assert not window.store_banner.isVisible()


def answer_the_start_up_question(button_text: str, seen: list[str]) -> None:
    """Click a button of the message box start-up shows, as a user would."""
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox)
    seen.append(box.text())
    next(b for b in box.buttons() if b.text() == button_text).click()


def test_a_database_that_cannot_be_opened_can_be_moved_aside_at_start_up(qtbot, tmp_path):
    path = tmp_path / "conversations.sqlite3"
    build_conversations(path, count=1, messages=1)
    damage(path, 0, 1)  # the header: SQLite no longer sees a database
    original = path.read_bytes()
    seen = []
    QTimer.singleShot(0, lambda: answer_the_start_up_question("Quit", seen))
    assert open_store(path) is None
    assert path.read_bytes() == original and "is damaged" in seen[0]

    QTimer.singleShot(0, lambda: answer_the_start_up_question(MOVE_ASIDE_BUTTON, seen))
    store = open_store(path)
    try:
        assert store is not None and store.list_conversations() == []
    finally:
        store.close()
    (moved,) = tmp_path.glob("conversations.sqlite3.damaged-*")
    assert moved.read_bytes() == original


def test_a_sound_database_from_a_newer_hearth_is_never_offered_to_be_moved_aside(qtbot, tmp_path):
    """Only a damaged file may be moved aside: a newer Hearth's file holds every conversation."""
    import sqlite3

    path = tmp_path / "conversations.sqlite3"
    build_conversations(path, count=1, messages=1)
    with sqlite3.connect(path) as newer:
        newer.execute("PRAGMA user_version = 999")
    original = path.read_bytes()
    seen, buttons = [], []

    def look_and_close():
        box = QApplication.activeModalWidget()
        seen.append(box.text())
        buttons.extend(button.text() for button in box.buttons())
        box.buttons()[0].click()

    QTimer.singleShot(0, look_and_close)
    assert open_store(path) is None
    assert "newer version of Hearth" in seen[0] and MOVE_ASIDE_BUTTON not in buttons
    assert path.read_bytes() == original and not list(tmp_path.glob("*.damaged-*"))


def test_moving_aside_waits_for_an_import_being_written(qtbot, windows, tmp_path):
    """An import writes through its own connection by the file's name: moving the file under it
    would send the import into the old file."""
    window = windows.open()
    source = tmp_path / "big.json"
    source.write_text(json.dumps(export(messages=20_000)))
    window.import_conversation(source)  # on a worker thread
    assert window.start_fresh() is None and "import is still being written" in window.store_banner.message.text()
    qtbot.waitSignal(window.importFinished, timeout=20_000).wait()
    assert window.start_fresh() is not None
