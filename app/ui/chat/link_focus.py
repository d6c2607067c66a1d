"""The keyboard's place among the chat pane's links: said to a screen reader, and kept.

In a QTextBrowser, Tab moves a focus mark from link to link and Enter activates the marked
one, but Qt tells assistive technology nothing when the mark moves (no cursor or selection
event), so a screen reader user tabbing through a transcript heard nothing at all. LinkFocus
announces each link the mark reaches, by its full name (the tooltip given to arrows and other
terse links) or else its text. It also puts the mark on a given link, e.g. on a version arrow
again after the conversation was shown afresh below it.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QTextBrowser

from ..widgets.announce import announce

_MOVES = (Qt.Key.Key_Tab, Qt.Key.Key_Backtab)
_OTHER_KEYS = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.MetaModifier


class LinkFocus(QObject):
    """Announces the link the keyboard reaches in `browser`, and marks a link on request."""

    def __init__(self, browser: QTextBrowser) -> None:
        super().__init__(browser)
        self._browser = browser
        browser.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) and event.key() in _MOVES
            and not event.modifiers() & _OTHER_KEYS  # Ctrl+Tab and the like move nothing here
        ):
            # The browser moves the mark when it handles the key, after this filter.
            QTimer.singleShot(0, self._say_marked)
        return False

    def marked_href(self) -> str | None:
        """The href of the link the keyboard's mark is on, or None."""
        cursor = self._browser.textCursor()
        if not cursor.hasSelection():
            return None
        inside = QTextCursor(cursor)
        inside.setPosition(cursor.selectionStart() + 1)
        fmt = inside.charFormat()
        return fmt.anchorHref() if fmt.isAnchor() else None

    def mark(self, href: str, start: int = 0) -> bool:
        """Put the keyboard's mark on the first link to `href` at or after `start`, as Tab
        would (Enter activates it, Tab goes on from it); False if there is none."""
        block = self._browser.document().findBlock(start)
        while block.isValid():
            fragments = block.begin()
            while not fragments.atEnd():
                fragment = fragments.fragment()
                if fragment.charFormat().anchorHref() == href:
                    cursor = QTextCursor(self._browser.document())
                    cursor.setPosition(fragment.position())
                    cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
                    self._browser.setTextCursor(cursor)
                    return True
                fragments += 1
            block = block.next()
        return False

    def _say_marked(self) -> None:
        if self.marked_href() is None or not self._browser.hasFocus():
            return
        cursor = self._browser.textCursor()
        inside = QTextCursor(cursor)
        inside.setPosition(cursor.selectionStart() + 1)
        name = inside.charFormat().toolTip() or cursor.selectedText()
        announce(self._browser, f"{name}, link")
