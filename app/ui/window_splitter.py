"""The window's three columns, conversations | chat | side panel, where the side panels give
way before the chat does.

On a small window (1024×640) Qt's splitter would keep both side panels at their size and
squeeze the chat between them. Here, whenever the window is resized (or a saved layout from a
bigger screen is restored), the chat gets at least CHAT_WIDTH: the side panel gives way first,
down to its minimum, then the conversation list. The user can still drag the handles; the
chat never goes below CHAT_MIN_WIDTH.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QSplitter, QWidget

CHAT_WIDTH = 520  # what the chat keeps before the side panels give way
CHAT_MIN_WIDTH = 320  # below this no drag can squeeze it
LIST_WIDTHS = (160, 230, 380)  # the conversation list: minimum, at first, maximum
SIDE_WIDTHS = (240, 400, 900)  # the model and parameters panel: minimum, at first, maximum
LIST, CHAT, SIDE = range(3)


class PanelSplitter(QSplitter):
    def __init__(self, conversations: QWidget, chat: QWidget, side: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        for widget, (minimum, _first, maximum) in ((conversations, LIST_WIDTHS), (side, SIDE_WIDTHS)):
            widget.setMinimumWidth(minimum)
            widget.setMaximumWidth(maximum)
        chat.setMinimumWidth(CHAT_MIN_WIDTH)
        self.addWidget(conversations)
        self.addWidget(chat)
        self.addWidget(side)
        self.setStretchFactor(CHAT, 1)
        for index in range(3):
            self.setCollapsible(index, False)
        self.setSizes([LIST_WIDTHS[1], CHAT_WIDTH * 2, SIDE_WIDTHS[1]])

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.give_chat_room()

    def restoreState(self, state) -> bool:
        restored = super().restoreState(state)
        self.give_chat_room()
        return restored

    def give_chat_room(self) -> None:
        """Narrow the side panel, then the list, towards their minimums until the chat has
        CHAT_WIDTH (or they are at their minimums). A hidden panel has no width to give."""
        sizes = self.sizes()
        if len(sizes) != 3 or not sum(sizes):
            return
        short = CHAT_WIDTH - sizes[CHAT]
        for panel, (minimum, _first, _maximum) in ((SIDE, SIDE_WIDTHS), (LIST, LIST_WIDTHS)):
            if short <= 0:
                break
            given = max(0, min(short, sizes[panel] - minimum))
            sizes[panel] -= given
            sizes[CHAT] += given
            short -= given
        if sizes != self.sizes():
            self.setSizes(sizes)
