"""How the conversation list shows its rows: grouped by when they were last active, each a
title with, for a search hit, the words that matched under it.

Group headings ("Today", "Yesterday", …) are rows of their own that cannot be selected or
reached with the arrow keys, so a screen reader reads them in place and the keyboard skips
them. The delegate paints a row's two lines; the title stays the row's text (DisplayRole), so
renaming in place edits the title alone.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from ...common.text import shorten
from ..widgets.colors import muted_color

CONVERSATION_ID = Qt.ItemDataRole.UserRole
SHOWN_TITLE = Qt.ItemDataRole.UserRole + 1
SNIPPET = Qt.ItemDataRole.UserRole + 2
HEADING = Qt.ItemDataRole.UserRole + 3  # True on a group heading's row

_PADDING = 6
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


# Markdown's marks, which a snippet of a reply shows raw: quote and list marks at its start,
# heading marks before a word (the store puts a snippet on one line, so a heading may be
# mid-line), emphasis and code marks anywhere (not a lone "_" or "*": snake_case, 2*3).
_LINE_MARKS = re.compile(r"^[ \t]*(?:>|[-+*]|\d+[.)])[ \t]+|(^|(?<=\s))#{1,6}[ \t]+")
_INLINE_MARKS = re.compile(r"\*\*|__|`+|~~")


def snippet_text(snippet: str) -> str:
    """A search snippet as words: Markdown's marks taken out ("## Reversing a list Use **slicing**"
    reads "Reversing a list Use slicing"), on one line."""
    text = _INLINE_MARKS.sub("", _LINE_MARKS.sub("", snippet))
    return " ".join(text.split())


def local_time(updated_at: str) -> str:
    """A stored timestamp (ISO-8601, UTC) as a person reads it, in local time: "14 March 2024,
    09:12"; one that makes no sense is shown as it is, shortened."""
    try:
        moment = datetime.fromisoformat(updated_at).astimezone()
    except (ValueError, OverflowError):
        return shorten(updated_at, 40)
    return f"{moment.day} {_MONTHS[moment.month - 1]} {moment.year}, {moment:%H:%M}"


def date_group(updated_at: str, today: date) -> str:
    """The heading a conversation last active at updated_at (ISO-8601, UTC) goes under, in local
    time: Today, Yesterday, Earlier this week, Earlier this month, then the month ("March 2024").
    A timestamp that makes no sense (a hand-made import) goes under "Undated"."""
    try:
        day = datetime.fromisoformat(updated_at).astimezone().date()
    except (ValueError, OverflowError):
        return "Undated"
    if day >= today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    if day >= today - timedelta(days=today.weekday()):
        return "Earlier this week"
    if (day.year, day.month) == (today.year, today.month):
        return "Earlier this month"
    return f"{_MONTHS[day.month - 1]} {day.year}"


class ConversationDelegate(QStyledItemDelegate):
    """Paints a conversation's title and its search snippet, and group headings."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        line = option.fontMetrics.lineSpacing()
        if index.data(HEADING):
            return QSize(0, QFontMetrics(_heading_font(option.font)).lineSpacing() + 2 * _PADDING + 4)
        lines = 2 if index.data(SNIPPET) else 1
        return QSize(0, line * lines + 2 * _PADDING)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        options = QStyleOptionViewItem(option)
        self.initStyleOption(options, index)
        widget = options.widget
        style = widget.style() if widget is not None else QApplication.style()
        if index.data(HEADING):
            self._paint_heading(painter, options)
            return
        snippet = index.data(SNIPPET)
        options.text = ""
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, options, painter, widget)  # background, focus
        selected = bool(options.state & QStyle.StateFlag.State_Selected)
        palette = options.palette
        title_colour = palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        area = options.rect.adjusted(_PADDING, _PADDING, -_PADDING, -_PADDING)
        line = options.fontMetrics.lineSpacing()
        painter.save()
        painter.setPen(title_colour)
        title = options.fontMetrics.elidedText(index.data(Qt.ItemDataRole.DisplayRole) or "", Qt.TextElideMode.ElideRight, area.width())
        painter.drawText(QRect(area.left(), area.top(), area.width(), line), Qt.AlignmentFlag.AlignVCenter, title)
        if snippet:
            painter.setPen(title_colour if selected else muted_color(palette))
            shown = options.fontMetrics.elidedText(snippet, Qt.TextElideMode.ElideRight, area.width())
            painter.drawText(QRect(area.left(), area.top() + line, area.width(), line), Qt.AlignmentFlag.AlignVCenter, shown)
        painter.restore()

    def _paint_heading(self, painter: QPainter, options: QStyleOptionViewItem) -> None:
        font = _heading_font(options.font)
        painter.save()
        painter.setFont(font)
        painter.setPen(muted_color(options.palette))  # quieter than the titles, still 4.5:1
        area = options.rect.adjusted(_PADDING, _PADDING + 4, -_PADDING, -_PADDING)
        painter.drawText(area, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         QFontMetrics(font).elidedText(options.text, Qt.TextElideMode.ElideRight, area.width()))
        painter.restore()

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        """Renaming edits the title on its own line, not over the snippet."""
        rect = option.rect
        editor.setGeometry(QRect(rect.left(), rect.top(), rect.width(), option.fontMetrics.lineSpacing() + 2 * _PADDING))


def _heading_font(font: QFont) -> QFont:
    heading = QFont(font)
    heading.setBold(True)
    heading.setPointSizeF(font.pointSizeF() * 0.9)
    return heading
