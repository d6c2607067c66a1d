"""The model picker made as a test needs it: its folders scanned before the test looks (the
scan runs on a thread of its own, and its result is queued to the GUI thread)."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from app.owners.settings import Settings
from app.ui.models.picker import ModelPicker

SCAN_TIMEOUT_MS = 10_000


def make_picker(qtbot, settings: QSettings) -> ModelPicker:
    picker = ModelPicker(Settings(settings))
    qtbot.addWidget(picker)
    # The first scan's result is queued to this thread, so waiting after creating it misses nothing.
    with qtbot.waitSignal(picker.scanFinished, timeout=SCAN_TIMEOUT_MS):
        pass
    return picker


def rescanned(qtbot, picker, action):
    with qtbot.waitSignal(picker.scanFinished, timeout=SCAN_TIMEOUT_MS):
        action()
