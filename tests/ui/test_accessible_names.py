"""Every control a user can reach has a name a screen reader can say: in the main window (each
side-panel tab), and in every dialog Hearth opens (Keyboard shortcuts, Get models, the template
editor, and the message boxes Hearth builds itself).

Names are read through Qt's accessibility interface, as assistive technology reads them: the
accessible name, else a buddy label or the control's own text. A failure lists each unnamed
control with its class, the attribute that holds it and its parents, for its owner to fix.
"""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox, QPushButton
from support.modal_answers import answering, shown_dialogs
from support.scripted_window import ScriptedWindow, find_action
from support.widget_walk import interactive_widgets, unnamed_widgets

from app.owners import paths
from app.ui.app.application import ask_to_move_aside, offer_crash_reports


@pytest.fixture
def opened(qtbot, scripted_models, tmp_path, gemma_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # Get models must not reach the network
    window = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_path)
    window.send("Hello")  # a conversation in the list and a reply in the transcript
    yield window
    window.close()


def no_unnamed(where: str, unnamed: list[str]) -> None:
    assert not unnamed, f"{where}: {len(unnamed)} controls without an accessible name:\n  " + "\n  ".join(unnamed)


def test_the_walk_finds_controls_and_an_unnamed_one(qtbot):
    """The walk itself: a named button passes, a bare line edit is reported."""
    from PySide6.QtWidgets import QLineEdit, QVBoxLayout, QWidget

    root = QWidget()
    qtbot.addWidget(root)
    layout = QVBoxLayout(root)
    layout.addWidget(QPushButton("Send"))
    bare = QLineEdit()
    bare.setPlaceholderText("a placeholder is a description, not a name")
    layout.addWidget(bare)
    root.show()
    assert len(interactive_widgets(root)) == 2
    assert len(unnamed_widgets(root)) == 1 and unnamed_widgets(root)[0].startswith("QLineEdit")
    bare.setAccessibleName("Search")
    assert unnamed_widgets(root) == []


def test_the_main_window(opened):
    no_unnamed("The main window", unnamed_widgets(opened.window))


def test_keyboard_shortcuts(opened):
    with answering(look=unnamed_widgets) as answered:
        find_action(opened.window, "Keyboard shortcuts").trigger()
    assert answered.titles == ["ShortcutsDialog: Keyboard shortcuts"]
    no_unnamed("Keyboard shortcuts", answered.notes[0])


def test_get_models(opened):
    find_action(opened.window, "Get models").trigger()
    dialogs = shown_dialogs(opened.window)
    assert len(dialogs) == 1
    no_unnamed("Get models", unnamed_widgets(dialogs[0]))


def test_the_template_editor(opened, qtbot):
    parameters = opened.window.parameters
    opened.window.side_panel.setCurrentWidget(parameters)
    parameters.template_button.click()
    editors = [d for d in shown_dialogs(opened.window) if d.windowTitle().startswith("Chat template")]
    assert len(editors) == 1
    no_unnamed("The template editor", unnamed_widgets(editors[0]))
    editors[0].close()


def look_with_details(box: QMessageBox) -> tuple[int, list[str]]:
    """How many controls the box has, with its details shown where it has them (a text box
    appears), and those without a name."""
    details = next((b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.ActionRole), None)
    if details is not None:
        details.click()
    return len(interactive_widgets(box)), unnamed_widgets(box)


def test_the_message_boxes_hearth_builds(opened, tmp_path, monkeypatch):
    with answering(look=look_with_details) as answered:
        ask_to_move_aside("The conversation database is damaged.")
    assert answered.titles == ["QMessageBox: Hearth"]
    controls, unnamed = answered.notes[0]
    assert controls == 2  # Move aside, Quit
    no_unnamed("Moving a damaged database aside", unnamed)

    monkeypatch.setenv("HEARTH_HOME", str(tmp_path / "home"))
    (paths.log_dir() / "crash-20250101-000000.txt").write_text("Traceback: a crash", encoding="utf-8")
    with answering(look=look_with_details) as answered:
        offer_crash_reports(opened.window)
    assert answered.titles == ["QMessageBox: Hearth closed unexpectedly"]
    controls, unnamed = answered.notes[0]
    assert controls == 2  # Hide Details and OK (Qt's details text takes no focus)
    no_unnamed("The crash report", unnamed)
