"""The window's three columns, conversations | chat | side panel, where the side panels give
way before the chat does.

On a small window (1024×640) Qt's splitter would keep both side panels at their size and
squeeze the chat between them. Here the side panels have the widths the user gave them (by
dragging a handle; at first LIST_WIDTHS[1] and SIDE_WIDTHS[1]) only as far as the chat keeps
CHAT_WIDTH: on a smaller window the side panel narrows first, down to its minimum, then the
conversation list; when the window grows again they get their widths back before the chat
grows. The chat never goes below CHAT_MIN_WIDTH, whatever is dragged.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QSplitter, QWidget

CHAT_WIDTH = 520  # what the chat keeps before the side panels give way
CHAT_MIN_WIDTH = 320  # below this no drag can squeeze it
LIST_WIDTHS = (160, 230, 380)  # the conversation list: minimum, at first, maximum
SIDE_WIDTHS = (240, 400, 900)  # the model and parameters panel: least, at first, maximum
LIST, CHAT, SIDE = range(3)


def fit(total: int, wanted: tuple[int, int], shown: tuple[bool, bool], side_minimum: int = SIDE_WIDTHS[0]) -> list[int]:
    """[list, chat, side] widths for a splitter `total` wide: the panels that are shown at
    their wanted widths, each narrowed (side panel first) towards its minimum while the chat
    has less than CHAT_WIDTH."""
    panel = {LIST: wanted[0] if shown[0] else 0, SIDE: wanted[1] if shown[1] else 0}
    short = CHAT_WIDTH - (total - panel[LIST] - panel[SIDE])
    for index, minimum in ((SIDE, side_minimum), (LIST, LIST_WIDTHS[0])):
        if short > 0 and panel[index]:
            given = max(0, min(short, panel[index] - minimum))
            panel[index] -= given
            short -= given
    return [panel[LIST], total - panel[LIST] - panel[SIDE], panel[SIDE]]


class PanelSplitter(QSplitter):
    def __init__(self, conversations: QWidget, chat: QWidget, side: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        conversations.setMinimumWidth(LIST_WIDTHS[0])
        for widget, (_minimum, _first, maximum) in ((conversations, LIST_WIDTHS), (side, SIDE_WIDTHS)):
            widget.setMaximumWidth(maximum)
        chat.setMinimumWidth(CHAT_MIN_WIDTH)
        self.addWidget(conversations)
        self.addWidget(chat)
        self.addWidget(side)
        self.setStretchFactor(CHAT, 1)
        for index in range(3):
            self.setCollapsible(index, False)
        self._wanted = (LIST_WIDTHS[1], SIDE_WIDTHS[1])  # the panels' widths, given room
        self.splitterMoved.connect(lambda _position, _index: self._remember())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.give_chat_room()

    def restoreState(self, state: QByteArray) -> bool:
        """A saved layout's panel widths are the ones wanted, fitted to this window."""
        restored = super().restoreState(state)
        if restored:
            self._remember()
            self.give_chat_room()
        return restored

    def give_chat_room(self) -> None:
        sizes = self.sizes()
        total = sum(sizes)
        if len(sizes) != 3 or not total:
            return
        shown = (not self.widget(LIST).isHidden(), not self.widget(SIDE).isHidden())
        fitted = fit(total, self._wanted, shown, self.side_minimum())
        if fitted != sizes:
            self.setSizes(fitted)

    def side_minimum(self) -> int:
        """The side panel narrows to SIDE_WIDTHS[0], or to what its controls need if more (a
        row of buttons cut short is worse than a chat a little narrower)."""
        return max(SIDE_WIDTHS[0], self.widget(SIDE).minimumSizeHint().width())

    def _remember(self) -> None:
        """The panels' widths now (a handle was dragged, a layout restored) are the wanted ones."""
        sizes = self.sizes()
        self._wanted = (sizes[LIST] or self._wanted[0], sizes[SIDE] or self._wanted[1])
