"""Helpers for the chat pane's tests: reading its document, clicking its links as a user does."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QTextBrowser

from app.ui.chat.streaming_reply import FLUSH_INTERVAL_MS
from app.ui.chat.view import ChatView

WAIT_MS = FLUSH_INTERVAL_MS * 20


def shown_view(qtbot, width: int, height: int, exposed: bool = False) -> ChatView:
    """A chat pane of this size, shown (and, with `exposed`, on screen and active, for the
    keyboard), closed with the test."""
    view = ChatView()
    view.resize(width, height)
    qtbot.addWidget(view)
    view.show()
    if exposed:
        qtbot.waitExposed(view)
        view.activateWindow()
    return view


def browser(view: ChatView) -> QTextBrowser:
    return view.findChild(QTextBrowser)


def plain_text(view: ChatView) -> str:
    return browser(view).document().toPlainText()


def fragments(view: ChatView):
    """(text, char format) of every run of text in the document, table cells included."""
    block = browser(view).document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            yield it.fragment().text(), it.fragment().charFormat()
            it += 1
        block = block.next()


def hrefs(view: ChatView) -> list[str]:
    return [fmt.anchorHref() for _text, fmt in fragments(view) if fmt.isAnchor()]


def click_anchor(qtbot, view: ChatView, href: str) -> None:
    """A real mouse click on the link's text, as the user would make it."""
    text_browser = browser(view)
    block = text_browser.document().begin()
    position = None
    while block.isValid() and position is None:
        it = block.begin()
        while not it.atEnd():
            if it.fragment().charFormat().anchorHref() == href:
                position = it.fragment().position()
                break
            it += 1
        block = block.next()
    assert position is not None, f"no link to {href}"
    cursor = QTextCursor(text_browser.document())
    cursor.setPosition(position + 1)
    text_browser.setTextCursor(cursor)
    text_browser.ensureCursorVisible()
    rect = text_browser.cursorRect(cursor)
    qtbot.mouseClick(text_browser.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() - 3, rect.center().y()))


def stream(qtbot, view: ChatView, chunks: list[str]) -> None:
    """Send chunks all at once and wait until they are written (some at once where the last
    write is an interval old, the rest when the interval is over)."""
    for chunk in chunks:
        view.append_text(chunk)
    qtbot.waitUntil(lambda: not view.text_waiting, timeout=WAIT_MS)
