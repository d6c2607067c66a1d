"""Esc for a dialog that does not block the main window (Settings, a tool server's editor, a
source opened from a citation): the window's Stop is an application-wide Esc, which would take
the key first; a dialog claims it in its ShortcutOverride, so Esc closes the dialog and stops
nothing."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt


def claims_escape(event: QEvent) -> bool:
    """Claim Esc before application-wide shortcuts see it; True when `event` was that. Use as
    `return claims_escape(event) or super().event(event)` in the dialog's event()."""
    if event.type() == QEvent.Type.ShortcutOverride and event.key() == Qt.Key.Key_Escape:
        event.accept()
        return True
    return False
