"""How the window shows store errors: one banner above the chat, whichever slot meets them.

A damaged or full database, or a bad import, raises StoreError from deep inside a slot. Let
through, Qt would only write a crash report and the user would see nothing; so slots that
touch the store are wrapped by `reports_store_errors` (a method of an object whose
`store_banner` is the banner) or `guarded`, and the banner says what happened and, for a
damaged database, what can be done (export what is readable; move the file aside and start
fresh, keeping it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from ...store import DatabaseDamaged, StoreError, shorten
from ..widgets.colors import Tone, set_tone


def reports_store_errors(slot):
    """A slot of the window or one of its controllers whose StoreError (a damaged or full
    database) is shown in its `store_banner` instead of escaping into Qt, which would only
    write a crash report."""

    @functools.wraps(slot)
    def reported(self, *args, **kwargs):
        try:
            return slot(self, *args, **kwargs)
        except StoreError as exc:
            self.store_banner.show_error(exc)
            return None

    return reported


def guarded(call: Callable, banner: StoreProblemBanner) -> Callable:
    """call (a session method the window connects to) with its StoreError shown in the banner."""

    def reported(*args):
        try:
            return call(*args)
        except StoreError as exc:
            banner.show_error(exc)
            return None

    return reported


class StoreProblemBanner(QFrame):
    """The one place store errors are shown: a line above the chat, with what can be done
    about a damaged database. Hidden until there is something to say."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # paths and SQLite's words, not HTML
        set_tone(self.message, Tone.ERROR)
        self.export_button = QPushButton("Export readable conversations…")
        self.move_aside_button = QPushButton("Move aside and start fresh…")
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.clicked.connect(self.hide)
        # The message across the whole width, the buttons on a row under it: beside the buttons
        # a two-line message was squeezed into a column twenty lines tall.
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for button in (self.export_button, self.move_aside_button, self.dismiss_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        self.hide()

    def show_error(self, error: StoreError) -> None:
        """A StoreError as the user reads it; for a damaged database, with what can be done."""
        damaged = isinstance(error, DatabaseDamaged)
        text = shorten(str(error), 400)
        if damaged:
            text += (" Some conversations may not open or be found. Export what is readable, or move the "
                     "file aside (it is kept) and start with an empty one.")
        self.show_problem(text, damaged)

    def show_problem(self, text: str, damaged: bool) -> None:
        self.message.setText(text)
        self.export_button.setVisible(damaged)
        self.move_aside_button.setVisible(damaged)
        self.show()
