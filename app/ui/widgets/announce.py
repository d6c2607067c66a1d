"""Saying something to a screen reader that has no place of its own on screen.

The end of a streamed reply, or an error while it ran, happens away from where the focus is
(the message box), so a screen reader would not mention it. Qt 6.8 added
QAccessibleAnnouncementEvent for this, passed on as an ARIA-style live announcement (AT-SPI on
Linux, UI Automation's notification on Windows, NSAccessibility on macOS). Hearth pins a
PySide6 that has it (pyproject.toml), so there is no fallback to a status label to keep.
"""

from __future__ import annotations

from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QWidget


def announce(widget: QWidget, text: str, urgent: bool = False) -> None:
    """Have assistive technology say `text`, as coming from `widget`.

    A polite announcement waits until the screen reader has finished what it is saying; an
    urgent one (an error) interrupts it.
    """
    event = QAccessibleAnnouncementEvent(widget, text)
    event.setPoliteness(
        QAccessible.AnnouncementPoliteness.Assertive if urgent else QAccessible.AnnouncementPoliteness.Polite
    )
    QAccessible.updateAccessibility(event)
