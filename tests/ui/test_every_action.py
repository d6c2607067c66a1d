"""Every menu action of the main window, and every button of every dialog Hearth opens, used the
way a user would, ends without an exception and without a crash report.

Hearth's crash handler is installed as the application installs it, writing into a temporary
HEARTH_HOME; pytest-qt still sees each exception a slot raises (its capture is on, and fails
the test with the traceback). Each action runs twice: once with every file dialog cancelled,
once with a file chosen. A native file dialog cannot be driven offscreen (on a desktop it is
the platform's own window, outside Qt's widgets), so QFileDialog's functions are answered by
the test; message boxes and Hearth's own dialogs are real and answered by clicking them
(tests/support/modal_answers.py). Get models runs offline (HF_HUB_OFFLINE and an endpoint that
refuses connections): its buttons must say so, not reach the network.
"""

from __future__ import annotations

import faulthandler
import json
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QThreadPool
from PySide6.QtGui import QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QFileDialog
from support.modal_answers import answering, click_every_button, shown_dialogs
from support.scripted_window import ScriptedWindow, menu_actions

from app.owners.settings import Appearance
from app.ui.app import crash
from app.ui.window import appearance

SETTLE_MS = 5_000  # replies, imports and scans are scripted or local: far less in practice
QUIT = "File → Quit"


@pytest.fixture
def crash_reports(tmp_path, monkeypatch) -> Path:
    """Hearth's crash handler, as run_gui installs it, reporting into tmp_path; pytest-qt's
    capture is kept behind it, so an exception both fails the test and leaves a report."""
    monkeypatch.setenv("HEARTH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(faulthandler, "enable", lambda *args, **kwargs: None)  # pytest keeps its own
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # put back afterwards
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    qt_capture = sys.excepthook
    crash.install()
    report = sys.excepthook

    def both(*exc_info) -> None:
        report(*exc_info)
        qt_capture(*exc_info)

    sys.excepthook = both
    return tmp_path / "home" / "logs"


class FileDialogs:
    """QFileDialog's static functions, answered: cancelled, or with a file of the kind asked for."""

    def __init__(self, folder: Path, monkeypatch):
        self.folder = folder
        self.choose = False
        self.asked: list[str] = []
        folder.mkdir()
        self.model_folder = folder / "models"
        self.model_folder.mkdir()
        self.not_a_model = folder / "not-a-model.gguf"
        self.not_a_model.write_bytes(b"no weights: a file the model list must show as unusable")
        monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(self.save))
        monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(self.open))
        monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(self.directory))

    def save(self, _parent=None, caption="", suggested="", *_args, **_kwargs) -> tuple[str, str]:
        self.asked.append(caption)
        if not self.choose:
            return "", ""
        # JSON goes where it cannot be written, so the failure's message box is met too.
        folder = self.folder / "no such folder" if suggested.endswith(".json") else self.folder
        return str(folder / Path(suggested).name), ""

    def open(self, _parent=None, caption="", _directory="", filter="", *_args, **_kwargs) -> tuple[str, str]:
        self.asked.append(caption)
        if not self.choose:
            return "", ""
        if ".gguf" in filter:
            return str(self.not_a_model), filter
        return str(self.write_export()), filter

    def directory(self, _parent=None, caption="", *_args, **_kwargs) -> str:
        self.asked.append(caption)
        return str(self.model_folder) if self.choose else ""

    def write_export(self) -> Path:
        path = self.folder / "import-me.json"
        ts = "2024-01-01T00:00:00Z"
        path.write_text(json.dumps({
            "format": "hearth.conversation", "version": 1,
            "conversation": {"title": "Imported", "created_at": ts, "updated_at": ts},
            "messages": [{"role": "user", "content": "hi", "created_at": ts, "updated_at": ts},
                         {"role": "assistant", "content": "hello", "created_at": ts, "updated_at": ts}],
        }), encoding="utf-8")
        return path


@pytest.fixture
def opened(qapp, qtbot, scripted_models, tmp_path, gemma_path, monkeypatch, crash_reports):
    """The window with a conversation (something to export, regenerate and stop); afterwards,
    the application's palette as it was (View → Appearance changes it)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing answers
    palette = QPalette(qapp.palette())
    window = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_path)
    window.send("Hello")
    yield window
    window.close()
    appearance.apply(qapp, Appearance.SYSTEM)
    qapp.setPalette(palette)


def settle(qtbot, window) -> None:
    """Wait until a reply has finished, and the work on worker threads (an import, the model
    list's scan, a search) has finished and its answer has reached the window."""
    qtbot.waitUntil(lambda: not window.session.busy, timeout=SETTLE_MS)
    assert QThreadPool.globalInstance().waitForDone(SETTLE_MS)
    QApplication.processEvents()  # the answers are queued signals


def test_every_menu_action_and_dialog_button(opened, qtbot, tmp_path, monkeypatch, crash_reports):
    window = opened.window
    files = FileDialogs(tmp_path / "files", monkeypatch)
    actions = [(title, action) for title, action in menu_actions(window) if title != QUIT]
    assert len(actions) >= 10, [title for title, _ in actions]
    met: dict[str, list[str]] = {}
    for choose in (False, True):
        files.choose = choose
        for title, action in actions:
            if not action.isEnabled():
                continue
            with answering(look=click_every_button) as answered:
                action.trigger()
                for dialog in shown_dialogs(window):  # opened without exec (Get models)
                    clicked = click_every_button(dialog)
                    settle(qtbot, window)
                    answered.titles.append(f"{dialog.windowTitle()}: clicked {', '.join(clicked)}")
                    dialog.close()
                settle(qtbot, window)
            met.setdefault(title, []).extend(answered.titles)

    print(json.dumps(met, indent=1, ensure_ascii=False))  # shown when the test fails
    assert met["Help → Keyboard shortcuts"] == ["ShortcutsDialog: Keyboard shortcuts"] * 2
    assert "Search" in met["File → Get models from Hugging Face…"][0], "Search was clicked (offline)"
    assert "QMessageBox: Export failed" in met["File → Export as JSON…"], "the JSON export's failure was said"
    assert list((tmp_path / "files").glob("*.md")), "the Markdown export was written"
    assert "Imported" in [c.title for c in window.session.store.list_conversations()], "the chosen file was imported"
    assert not list(crash_reports.glob("crash-*.txt")), "a crash report was written"


def test_the_template_editor_buttons(opened, qtbot, crash_reports):
    window = opened.window
    window.side_panel.setCurrentWidget(window.parameters)
    window.parameters.template_button.click()
    editors = [d for d in shown_dialogs(window) if d.windowTitle().startswith("Chat template")]
    assert len(editors) == 1
    editor = editors[0]
    QTest.keyClicks(editor.source_edit, "{# edited #}")  # Reset is enabled by an edit
    assert editor.reset_button.text() in click_every_button(editor)
    QTest.keyClicks(editor.source_edit, "{# edited again #}")
    with answering():  # in case Save asks before it replaces the template
        editor.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    assert not editor.isVisible()
    settle(qtbot, window)
    assert not list(crash_reports.glob("crash-*.txt"))


def test_quit_closes_the_window_and_keeps_its_state(opened, qtbot, tmp_path):
    window = opened.window
    next(action for title, action in menu_actions(window) if title == QUIT).trigger()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=SETTLE_MS)
    assert "geometry" in (tmp_path / "hearth.ini").read_text(encoding="utf-8"), "the window's size was saved"
