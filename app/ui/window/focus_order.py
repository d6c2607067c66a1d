"""Tab order by region: the window lists its regions in the order Tab should visit them
(the message box, the chat, the side panel, the conversations), and each region's own
widgets keep their order inside it.

Qt's default order is the order widgets were created in, which sent Tab from the message box
to the conversation list. QWidget.setTabOrder cannot fix it for good: it moves compound
widgets (a table, a tab bar) together with their children, and widgets created later (an
editor that opens in the transcript) land at the end of the chain. So the window asks here,
at each Tab, where the focus goes next: the order is read afresh from the regions each time.

Reading the chain from Python has a cost PySide does not show (#27). Its return-value
heuristic makes the wrapper that nextInFocusChain() (or focusProxy()) returns a Python child of
the widget it was asked from; PySide exempts parentWidget() and window() from it, not these. A
walk round the chain left each widget's wrapper the Python child of the one before it, and the
window's that of the last widget; deleting any of them (a tool call's card, a closed editor)
then invalidated the wrappers of the live widgets after it and whatever they had handed out (the
transcript's scroll bar and document: "Internal C++ object (QScrollBar) already deleted"). So
the walk never asks the last widget for its next, and hands every widget it read back to its
own parent's wrapper afterwards.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget


def _walk(window: QWidget) -> list[QWidget]:
    """The window's widgets in its focus chain's order, the window left out; their wrappers are
    left tied one to the next (see _tie_back)."""
    last = window.previousInFocusChain()  # the window's Python child now: it is its descendant anyway
    chain: list[QWidget] = []
    widget = window.nextInFocusChain()
    while widget is not window:
        chain.append(widget)
        if widget is last:
            break  # its next is the window, which must not become its Python child
        widget = widget.nextInFocusChain()
    return chain


def _tie_back(widgets: list[QWidget]) -> None:
    """Make each widget's wrapper the Python child of its own parent's wrapper again: findChildren
    makes what it returns the asker's Python children, as nextInFocusChain does."""
    parents = {id(parent): parent for parent in (widget.parentWidget() for widget in widgets) if parent is not None}
    for parent in parents.values():
        parent.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly)


def focusable_in(region: QWidget) -> list[QWidget]:
    """The widgets inside region that Tab can reach now (shown and enabled), in the window's
    focus chain order."""
    window = region.window()
    chain = _walk(window)
    found = [widget for widget in chain
             if (widget is region or region.isAncestorOf(widget)) and widget.focusPolicy() & Qt.FocusPolicy.TabFocus
             and widget.focusProxy() is None and widget.isVisibleTo(window) and widget.isEnabled()]
    _tie_back(chain)  # after focusProxy(), which ties a proxy to its widget the same way
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
