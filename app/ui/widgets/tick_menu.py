"""A button beside Send that opens a menu of things to tick for the conversation (its tool
servers, its document collections), and the menu itself.

The pickers share a look: a button as tall as Send beside it, with the menu's mark drawn in
its text (Fusion's own mark sits cramped in the button's corner), and a menu whose ticks stay
in it (Space, Enter or a click toggle the row and leave the menu open), so several things are
chosen in one visit; Esc closes it. Names in it are the user's or a file's: `menu_text` doubles
"&" so a name is never a mnemonic.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction, QKeyEvent, QMouseEvent, QPaintEvent
from PySide6.QtWidgets import QMenu, QPushButton, QStyle, QStyleOptionToolButton, QStylePainter, QToolButton, QWidget

MENU_MARK = " ▾"  # ends the button's text
_TOGGLE_KEYS = (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def menu_text(text: str) -> str:
    """Foreign text as a menu row or button text: "&" shown, never a mnemonic."""
    return text.replace("&", "&&")


class TickMenu(QMenu):
    """A menu whose checkable rows toggle without closing it."""

    def _toggles(self) -> QAction | None:
        action = self.activeAction()
        return action if action is not None and action.isCheckable() and action.isEnabled() else None

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        action = self._toggles()
        if action is not None and self.actionGeometry(action).contains(event.position().toPoint()):
            action.trigger()
            return
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        action = self._toggles()
        if action is not None and event.key() in _TOGGLE_KEYS:
            action.trigger()
            return
        super().keyPressEvent(event)


class TickMenuButton(QToolButton):
    """The button that opens a TickMenu (`menu`), drawn like the Send button it stands beside.

    Subclasses fill the menu and call `show_label` with what the button says.
    """

    def __init__(self, accessible_name: str, menu_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleName(accessible_name)
        self.tick_menu = TickMenu(self)
        self.tick_menu.setToolTipsVisible(True)
        self.tick_menu.setAccessibleName(menu_name)
        self.setMenu(self.tick_menu)

    def show_label(self, text: str) -> None:
        """The button's words (the menu's mark is added)."""
        self.setText(text + MENU_MARK)

    def sizeHint(self) -> QSize:
        """As tall as the Send button beside it, so the two line up."""
        hint = super().sizeHint()
        return QSize(hint.width(), max(hint.height(), QPushButton("Send").sizeHint().height()))

    def paintEvent(self, event: QPaintEvent) -> None:
        """A button like Send, without the corner mark of a menu (the text ends with one)."""
        painter = QStylePainter(self)
        option = QStyleOptionToolButton()
        self.initStyleOption(option)
        option.features &= ~QStyleOptionToolButton.ToolButtonFeature.HasMenu
        painter.drawComplexControl(QStyle.ComplexControl.CC_ToolButton, option)
