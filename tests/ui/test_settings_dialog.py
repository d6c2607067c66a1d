"""File → Settings…, its saved-conversation-states group, used as a user would: opened from the
menu (or Ctrl+,) over a real StateCache holding real states in a temporary folder; the size it
shows is the folder's, Clear empties the folder, a budget typed in is written to the settings
file and applied to the running cache; Tab reaches every control, Esc closes; every control is
named. Over a scripted model (tests/support/scripted_backend.py): the model plays no part."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QLabel
from support.modal_answers import shown_dialogs
from support.scripted_window import ScriptedWindow, find_action
from support.settings_file import settings_at
from support.widget_walk import unnamed_widgets

from app.engine.kv.cache import StateCache, StateKey
from app.ui.dialogs.settings import SettingsDialog, size_text

MB = 1024**2
KEY = StateKey(model_size=1234, model_digest="ab" * 16, n_ctx=4096, kv_type="k=f16 v=f16 fa=0 swa_full=1",
               offloaded_layers=0, llama_version="test")
PAYLOADS = (700_000, 1_200_000, 2_500_000)  # bytes of three conversations' states: 4.2 MB in all
WAIT_MS = 5_000


@pytest.fixture
def states(tmp_path) -> StateCache:
    """A real cache in tmp_path with three conversations' states written to disk."""
    cache = StateCache(tmp_path / "kv-state")
    for conversation_id, size in enumerate(PAYLOADS, start=1):
        cache.put(KEY, conversation_id, list(range(50 * conversation_id)), bytes(size), meta=b"segments")
    return cache


@pytest.fixture
def opened(qtbot, scripted_models, tmp_path, gemma_path, states):
    window = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_path, states=states)
    yield window
    window.close()


def state_files(states: StateCache) -> list[Path]:
    return sorted(states.folder.glob("*.kvstate"))


def open_settings(qtbot, window) -> SettingsDialog:
    """File → Settings…, triggered as a click on the menu item does; the dialog, once active."""
    find_action(window, "Settings").trigger()
    dialogs = [d for d in shown_dialogs(window) if d.windowTitle() == "Settings"]
    assert len(dialogs) == 1
    dialog = dialogs[0]
    qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)  # keys go to the active window
    return dialog


def settings_file_budget(folder: Path) -> int:
    """The budget as the next start reads it: from the file, through a new QSettings."""
    return settings_at(folder / "hearth.ini").saved_state_budget


def test_the_size_shown_is_the_folders(opened, qtbot, states):
    files = state_files(states)
    assert len(files) == len(PAYLOADS), "every state fits the default budget and was written"
    dialog = open_settings(qtbot, opened.window)
    size = sum(path.stat().st_size for path in files)
    assert size > sum(PAYLOADS)  # the payloads, and each file's header, key and tokens
    assert dialog.saved_states.size_label.text() == f"{size_text(size)} in 3 conversations" == "4 MiB in 3 conversations"


def test_ctrl_comma_opens_it_and_esc_closes_it(opened, qtbot):
    window = opened.window
    QTest.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    dialog = next(d for d in shown_dialogs(window) if d.windowTitle() == "Settings")
    qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
    assert not dialog.isVisible()


def test_clear_empties_the_folder_and_says_so(opened, qtbot, states, script):
    dialog = open_settings(qtbot, opened.window)
    assert states.memory_size() > 0
    dialog.saved_states.clear_button.click()
    assert state_files(states) == []
    assert states.memory_size() == 0, "the memory tier is cleared too"
    assert dialog.saved_states.size_label.text() == "Nothing saved"
    # The loaded model's own process keeps states in memory too: it is told (engine/process).
    qtbot.waitUntil(lambda: script.states_changes == [(states.place(), True)], timeout=WAIT_MS)


def test_a_typed_budget_is_saved_and_applied(opened, qtbot, tmp_path, states):
    dialog = open_settings(qtbot, opened.window)
    budget = dialog.saved_states.budget
    assert budget.value() == 4.0 and states.disk_budget == 4096 * MB, "the default, as the cache was opened"
    budget.setFocus()
    budget.selectAll()
    QTest.keyClicks(budget, "2")
    assert states.disk_budget == 4096 * MB, "nothing applied while typing"
    QTest.keyClick(budget, Qt.Key.Key_Return)
    assert states.disk_budget == 2048 * MB
    assert settings_file_budget(tmp_path) == 2048 * MB
    assert dialog.isVisible(), "Enter in the box applies the budget; it does not close the dialog"
    budget.selectAll()
    QTest.keyClicks(budget, "0")
    QTest.keyClick(budget, Qt.Key.Key_Escape)  # typed, not entered: closing keeps it
    assert not dialog.isVisible()
    assert states.disk_budget == 0 and settings_file_budget(tmp_path) == 0
    assert state_files(states) == [] and states.memory_size() > 0, "0 keeps none on disk; memory is kept"
    dialog.show()
    assert budget.text() == "None on disk"


def test_a_smaller_budget_evicts_at_once(opened, qtbot, states, script):
    dialog = open_settings(qtbot, opened.window)
    budget = dialog.saved_states.budget
    budget.setFocus()
    budget.selectAll()
    QTest.keyClicks(budget, "0")
    QTest.keyClick(budget, Qt.Key.Key_Return)
    assert state_files(states) == []
    assert dialog.saved_states.size_label.text() == "Nothing saved"
    qtbot.waitUntil(lambda: script.states_changes == [(states.place(), False)], timeout=WAIT_MS)
    assert script.states_changes[0][0].disk_budget == 0, "the model's process keeps to the new budget too"


def test_tab_reaches_the_budget_clear_and_close(opened, qtbot):
    dialog = open_settings(qtbot, opened.window)
    group = dialog.saved_states
    reached = []
    for _ in range(6):
        reached.append(QApplication.focusWidget())
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    close = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Close)
    assert {group.budget, group.clear_button, close} <= set(reached), reached


def test_every_control_is_named(opened, qtbot):
    dialog = open_settings(qtbot, opened.window)
    assert unnamed_widgets(dialog) == []
    assert dialog.saved_states.budget.accessibleName() == "Disk budget for saved states"
    assert dialog.saved_states.clear_button.accessibleName() == "Clear saved states"


def test_without_a_cache_the_group_says_so_and_is_disabled(qtbot, scripted_models, tmp_path, gemma_path):
    window = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_path, states=None)
    try:
        group = open_settings(qtbot, window.window).saved_states
        assert not group.budget.isEnabled() and not group.clear_button.isEnabled()
        assert "could not be made" in " ".join(label.text() for label in group.findChildren(QLabel))
        assert group.size_label.text() == "Nothing (not saved this session)"
    finally:
        window.close()
