"""Walking a window's widgets as a screen reader meets them: which ones a user can reach and
work, and the name Qt's accessibility interface gives each (its accessible name, else its
buddy label or its own text).

A failure must tell the widget's owner which widget it is, so each is described by its class,
the attribute that holds it (`ModelPicker.view`) and its chain of parents.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QTabBar,
    QTabWidget,
    QWidget,
)

# Buttons and check boxes, line edits, text boxes, item views and scroll areas, spin boxes,
# combo boxes, sliders, tab bars and tab widgets (a focusable pane to a screen reader); labels
# only where Tab stops on them (selectable or links).
INTERACTIVE = (
    QAbstractButton, QLineEdit, QAbstractScrollArea, QAbstractSpinBox, QComboBox, QAbstractSlider, QTabBar,
    QTabWidget, QLabel,
)


def is_interactive(widget: QWidget) -> bool:
    """A control a user can reach and work now: shown, enabled, taking focus."""
    if not isinstance(widget, INTERACTIVE) or widget.focusPolicy() == Qt.FocusPolicy.NoFocus:
        return False
    if isinstance(widget, QLabel) and not widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
        return False  # selectable with the mouse only: not a stop on the keyboard path
    if isinstance(widget.parentWidget(), (QAbstractSpinBox, QComboBox)):
        return False  # the line edit inside a spin or combo box: the box itself is what is read
    return widget.isVisible() and widget.isEnabled()


def interactive_widgets(root: QWidget) -> list[QWidget]:
    return [w for w in [root, *root.findChildren(QWidget)] if is_interactive(w)]


def accessible_name(widget: QWidget) -> str:
    interface = QAccessible.queryAccessibleInterface(widget)
    return interface.text(QAccessible.Text.Name).strip() if interface is not None else ""


def attribute_name(widget: QWidget) -> str | None:
    """`Owner.attribute` for the nearest ancestor that keeps the widget in an attribute."""
    ancestor = widget.parentWidget()
    while ancestor is not None:
        for name, value in vars(ancestor).items():
            if value is widget:
                return f"{type(ancestor).__name__}.{name}"
        ancestor = ancestor.parentWidget()
    return None


def describe(widget: QWidget) -> str:
    """The widget's class, where its owner keeps it, its text, and its parents."""
    chain = []
    ancestor = widget.parentWidget()
    while ancestor is not None:
        chain.append(type(ancestor).__name__ + (f"#{ancestor.objectName()}" if ancestor.objectName() else ""))
        ancestor = ancestor.parentWidget()
    own = type(widget).__name__ + (f"#{widget.objectName()}" if widget.objectName() else "")
    held = attribute_name(widget)
    shown = _shown_text(widget)
    return (f"{own}" + (f" ({held})" if held else "") + (f" showing {shown!r}" if shown else "")
            + " in " + " < ".join(chain))


def _shown_text(widget: QWidget) -> str:
    for reader in ("placeholderText", "text", "toolTip"):
        text = getattr(widget, reader, lambda: "")()
        if isinstance(text, str) and text.strip():
            return text.strip()[:60]
    return ""


def each_tab(root: QWidget):
    """Yield once per page of every tab widget under root (each page shown in turn), and once
    more with the tabs as they were; hidden pages are not on screen to be walked."""
    yield
    for tabs in root.findChildren(QTabWidget):
        if not tabs.isVisible():
            continue
        current = tabs.currentIndex()
        for index in range(tabs.count()):
            if index != current and tabs.isTabEnabled(index):
                tabs.setCurrentIndex(index)
                yield
        tabs.setCurrentIndex(current)


def unnamed_widgets(root: QWidget) -> list[str]:
    """Every interactive widget under root, on every tab page, that has no accessible name."""
    found: list[str] = []
    for _page in each_tab(root):
        for widget in interactive_widgets(root):
            described = describe(widget)
            if not accessible_name(widget) and described not in found:
                found.append(described)
    return found
