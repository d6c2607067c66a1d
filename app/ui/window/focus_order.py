"""Tab order by region: the window lists its regions in the order Tab should visit them
(the message box, the chat, the side panel, the conversations), and each region's own
widgets keep their order inside it.

Qt's default order is the order widgets were created in, which sent Tab from the message box
to the conversation list. QWidget.setTabOrder cannot fix it for good: it moves compound
widgets (a table, a tab bar) together with their children, and widgets created later (an
editor that opens in the transcript) land at the end of the chain. So the window asks here,
at each Tab, where the focus goes next: the order is read afresh from the regions each time.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget


def focusable_in(region: QWidget) -> list[QWidget]:
    """The widgets inside region that Tab can reach now (shown and enabled), in the window's
    focus chain order."""
    window = region.window()
    found = []
    widget = window.nextInFocusChain()
    while widget is not window:
        inside = widget is region or region.isAncestorOf(widget)
        if (inside and widget.focusPolicy() & Qt.FocusPolicy.TabFocus and widget.focusProxy() is None
                and widget.isVisibleTo(window) and widget.isEnabled()):
            found.append(widget)
        widget = widget.nextInFocusChain()
    return found


def tab_order(regions: list[QWidget]) -> list[QWidget]:
    """Every widget Tab reaches, region after region."""
    return [widget for region in regions for widget in focusable_in(region)]


def next_in_order(regions: list[QWidget], current: QWidget | None, forward: bool) -> QWidget | None:
    """Where Tab (forward) or Shift+Tab goes from current, round and round; None when current
    is not in any region (the window's own order applies then)."""
    order = tab_order(regions)
    if current is None or current not in order:
        return None
    step = 1 if forward else -1
    return order[(order.index(current) + step) % len(order)]
