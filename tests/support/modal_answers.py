"""Answering the modal dialogs a test's action opens, as a user would, while the action waits.

A modal dialog's exec() runs its own event loop, so the test cannot click it after the
action returns: a timer looks for the active modal widget, lets the test look at it (walk its
names, click its other buttons) and then answers it the safe way: a message box by its
Escape (or No/Cancel) button, any other dialog by its Cancel/Close button or Escape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QApplication, QDialog, QDialogButtonBox, QMessageBox, QWidget
from shiboken6 import Shiboken

POLL_MS = 20
_SEEN = "seenByModalAnswers"  # a property: a later dialog at the same address has none
_CLOSING_ROLES = (QDialogButtonBox.ButtonRole.AcceptRole, QDialogButtonBox.ButtonRole.RejectRole,
                  QDialogButtonBox.ButtonRole.YesRole, QDialogButtonBox.ButtonRole.NoRole,
                  QDialogButtonBox.ButtonRole.DestructiveRole)


@dataclass
class Answered:
    """What was met: each modal dialog's window title and class, in order, and the texts the
    test's `look` returned for them."""

    titles: list[str] = field(default_factory=list)
    notes: list[object] = field(default_factory=list)


def dismiss(dialog: QWidget) -> None:
    """Close the dialog the way that changes nothing."""
    if isinstance(dialog, QMessageBox):
        button = dialog.escapeButton() or _button_with_role(dialog, QMessageBox.ButtonRole.RejectRole, QMessageBox.ButtonRole.NoRole)
        (button or dialog.buttons()[0]).click()
        return
    for box in dialog.findChildren(QDialogButtonBox):
        button = _button_with_role(box, QDialogButtonBox.ButtonRole.RejectRole)
        if button is not None and button.isVisible() and button.isEnabled():
            button.click()
            return
    QTest.keyClick(dialog, Qt.Key.Key_Escape)


def _button_with_role(box, *roles) -> QAbstractButton | None:
    return next((b for b in box.buttons() if box.buttonRole(b) in roles), None)


def closing_buttons(dialog: QWidget) -> list[QAbstractButton]:
    """The buttons that end the dialog (its button box's accept and reject roles)."""
    found = []
    for box in dialog.findChildren(QDialogButtonBox):
        found += [b for b in box.buttons() if box.buttonRole(b) in _CLOSING_ROLES]
    if isinstance(dialog, QMessageBox):
        found += [b for b in dialog.buttons() if b not in found]
    return found


def click_every_button(dialog: QWidget) -> list[str]:
    """Click each shown, enabled button that does not end the dialog (in turn: a click may show
    or enable others), then leave the dialog to be answered. Returns what was clicked."""
    clicked: list[str] = []
    ending = closing_buttons(dialog)
    while True:
        buttons = [b for b in dialog.findChildren(QAbstractButton)
                   if b.isVisible() and b.isEnabled() and b not in ending and b.text() not in clicked]
        if not buttons or not dialog.isVisible():
            return clicked
        clicked.append(buttons[0].text())
        buttons[0].click()


@contextmanager
def answering(look: Callable[[QWidget], object] | None = None,
              answer: Callable[[QWidget], None] = dismiss) -> Iterator[Answered]:
    """While the block runs, every modal dialog that opens is passed to `look` (its result
    kept) and then answered."""
    answered = Answered()

    def poll() -> None:
        dialog = QApplication.activeModalWidget()
        if dialog is None or not Shiboken.isValid(dialog):
            return
        if dialog.property(_SEEN):  # looked at already: answer it again if it is still open
            if dialog.isVisible():
                answer(dialog)
            return
        dialog.setProperty(_SEEN, True)
        answered.titles.append(f"{type(dialog).__name__}: {dialog.windowTitle()}")
        if look is not None:
            answered.notes.append(look(dialog))
        if dialog.isVisible():
            answer(dialog)

    timer = QTimer()
    timer.setInterval(POLL_MS)
    timer.timeout.connect(poll)
    timer.start()
    try:
        yield answered
    finally:
        timer.stop()


def shown_dialogs(parent: QWidget) -> list[QDialog]:
    """The dialogs under parent on screen now (those opened without exec: Get models)."""
    return [d for d in parent.findChildren(QDialog) if d.isVisible()]
