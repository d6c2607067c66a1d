"""The live tool cards under a reply: calls being asked about, running or just ended, laid over
gaps in the transcript as the inline editor is (inline_editor.EditorOverlay).

The document cannot hold a widget, so each card has a gap of its own: a block of the card's
height, marked with TOOL_GAP (its call id) so it is found again however the text before it
changed, and holding one zero-width space so that the writer, which reuses an empty block at the
end of the document (DocumentWriter.new_block), never writes the next reply into it. A card's
gap follows the message that was last when the card came (its anchor), after that message's
footer and the context line, and after the gaps of the cards that came before it: so a reply
written after the cards (the agent loop's next step) comes below them, and when the transcript
is written afresh (a new palette, an edit opened, an earlier page shown) the gaps are written
again in the same place.

The cards follow their gaps as the pane scrolls, resizes or changes, a gap grows or shrinks
with its card, and a card the keyboard reaches is scrolled into view. Who asks for a card (the
window, through ChatView) clears them when it shows the conversation afresh from the store,
where the calls and their results are then shown as stored (stored.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import shiboken6
from PySide6.QtCore import QObject, QRectF, Qt
from PySide6.QtGui import QTextBlock, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QApplication, QWidget

from ....tool_servers.approval import PendingCall
from ..browser import ChatBrowser
from ..document import DIVIDER, MESSAGE_END, find_block
from ..markdown_render import ZERO_WIDTH_SPACE
from ..tool_card import CardState, ToolCallCard

# A live card's gap; its value is the call id. (document.py's marks are UserProperty + 1 to 3.)
TOOL_GAP = QTextFormat.Property.UserProperty + 4
_GAP_PX = 8  # above and below a card, inside its gap


@dataclass
class _Live:
    card: ToolCallCard
    anchor: int | None  # the message the card's gap follows (None: the end of the transcript)


class LiveToolCards(QObject):
    """The live cards over `browser`'s document, oldest first.

    Each change to the document is returned as (where, characters gained or lost), for the
    pane to move the positions it keeps (the transcript's, the streaming reply's).
    """

    def __init__(self, browser: ChatBrowser) -> None:
        super().__init__(browser)
        self._browser = browser
        self._document = browser.document()
        self._live: list[_Live] = []
        browser.verticalScrollBar().valueChanged.connect(self.place)
        # Queued: the layout says it changed while it is still laying out.
        self._document.documentLayout().update.connect(self._layout_changed, Qt.ConnectionType.QueuedConnection)
        QApplication.instance().focusChanged.connect(self._focus_changed)

    def __bool__(self) -> bool:
        return bool(self._live)

    def add(self, pending: PendingCall, anchor: int | None, awaiting: bool,
            ) -> tuple[ToolCallCard, list[tuple[int, int]]]:
        """A card for this call after the message with id `anchor` (and any cards already
        there); it takes the keyboard if it asks and no earlier card is still asking."""
        asking = any(live.card.state is CardState.AWAITING for live in self._live)
        card = ToolCallCard(pending, awaiting, self._browser.viewport())
        card.heightChanged.connect(lambda _height, card=card: self._resize_gap(card))
        card.decided.connect(lambda _decision: self._next_question())
        live = _Live(card, anchor)
        self._live.append(live)
        change = self._write_gap(live)
        self.place()
        if awaiting and not asking:
            self._scroll_into_view(card)
            card.take_focus()
        return card, [change]

    def card(self, call_id: str) -> ToolCallCard | None:
        return next((live.card for live in self._live if live.card.pending.call_id == call_id), None)

    def cards(self) -> list[ToolCallCard]:
        return [live.card for live in self._live]

    def clear(self) -> list[tuple[int, int]]:
        """Take every card away, and its gap out of the document."""
        changes = []
        for live in self._live:
            block = self._gap_of(live.card)
            if block.isValid():
                cursor = QTextCursor(block)
                cursor.movePosition(QTextCursor.MoveOperation.PreviousBlock)
                cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
                start = cursor.position()
                cursor.setPosition(block.position() + block.length() - 1, QTextCursor.MoveMode.KeepAnchor)
                cursor.removeSelectedText()
                changes.append((start, start - (block.position() + block.length() - 1)))
            live.card.hide()
            live.card.deleteLater()
        self._live.clear()
        return changes

    def write_gaps(self) -> list[tuple[int, int]]:
        """The document was written afresh: write each card's gap again, in order."""
        return [self._write_gap(live) for live in self._live]

    def place(self, *_changed: object) -> None:
        """Lay each card over its gap, where the gap is now in the viewport."""
        layout = self._document.documentLayout()
        offset_x, offset_y = self._browser.horizontalScrollBar().value(), self._browser.verticalScrollBar().value()
        for live in self._live:
            block = self._gap_of(live.card)
            if not block.isValid():
                live.card.hide()
                continue
            area = layout.blockBoundingRect(block).translated(-offset_x, -offset_y).toRect()
            live.card.setGeometry(area.x(), area.y() + _GAP_PX, area.width(), live.card.preferred_height(area.width()))
            live.card.show()

    # -- inside ---------------------------------------------------------------------------------

    def _gap_of(self, card: ToolCallCard) -> QTextBlock:
        return find_block(self._document, TOOL_GAP, card.pending.call_id, backwards=True)

    def _gap_format(self, card: ToolCallCard) -> QTextBlockFormat:
        gap = QTextBlockFormat()
        gap.setProperty(TOOL_GAP, card.pending.call_id)
        width = card.width() if card.isVisible() else self._browser.viewport().width() - 2 * self._browser.side_margin()
        height = card.preferred_height(max(width, 200)) + 2 * _GAP_PX
        gap.setLineHeight(height, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
        return gap

    def _write_gap(self, live: _Live) -> tuple[int, int]:
        """Write the card's gap after its anchor's footer, the context line and the gaps there."""
        footer = None if live.anchor is None else find_block(self._document, MESSAGE_END, live.anchor, backwards=True)
        block = footer if footer is not None and footer.isValid() else self._document.lastBlock()
        while block.next().isValid() and (block.next().blockFormat().property(DIVIDER)
                                          or block.next().blockFormat().hasProperty(TOOL_GAP)):
            block = block.next()
        cursor = QTextCursor(block)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
        at = cursor.position()
        cursor.insertBlock(self._gap_format(live.card), QTextCharFormat())
        cursor.insertText(ZERO_WIDTH_SPACE)
        return at, cursor.position() - at

    def _resize_gap(self, card: ToolCallCard) -> None:
        block = self._gap_of(card)
        if not block.isValid():
            return
        wanted = self._gap_format(card)
        if block.blockFormat().lineHeight() != wanted.lineHeight():
            QTextCursor(block).setBlockFormat(wanted)
        self.place()

    def _layout_changed(self, _area: QRectF) -> None:
        self.place()

    def _next_question(self) -> None:
        """A card was answered: the keyboard goes on to the next card still asking, if any."""
        waiting = next((live.card for live in self._live if live.card.state is CardState.AWAITING), None)
        if waiting is not None:
            self._scroll_into_view(waiting)
            waiting.take_focus()

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        if new is None or not shiboken6.isValid(self):
            return
        card = next((live.card for live in self._live if live.card.isAncestorOf(new)), None)
        if card is not None:
            self._scroll_into_view(card)

    def _scroll_into_view(self, card: ToolCallCard) -> None:
        """Scroll the pane so that the whole card shows (its top, if it is taller than the pane)."""
        self.place()
        self._browser.bring_into_view(card.geometry())
