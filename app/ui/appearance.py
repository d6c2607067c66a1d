"""Light and dark appearance that follows the system.

Fusion gives the same look on every platform, but it only turns dark where the platform
theme hands it a dark palette, and many Linux desktops (and the offscreen platform) report a
dark colour scheme without one. So Hearth builds the dark palette itself whenever the scheme
is dark, and follows changes while it runs. HEARTH_APPEARANCE=light|dark overrides the system.
"""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication


def dark_palette() -> QPalette:
    palette = QPalette()
    colours = {
        QPalette.Window: "#202124", QPalette.WindowText: "#e8eaed", QPalette.Base: "#17181a",
        QPalette.AlternateBase: "#26282b", QPalette.ToolTipBase: "#303134", QPalette.ToolTipText: "#e8eaed",
        QPalette.PlaceholderText: "#9aa0a6", QPalette.Text: "#e8eaed", QPalette.Button: "#2d2f33",
        QPalette.ButtonText: "#e8eaed", QPalette.BrightText: "#ff6b6b", QPalette.Link: "#8ab4f8",
        QPalette.LinkVisited: "#c58af9", QPalette.Highlight: "#3d6fb4", QPalette.HighlightedText: "#ffffff",
        QPalette.Light: "#3c4043", QPalette.Midlight: "#34363a", QPalette.Mid: "#2a2c2f",
        QPalette.Dark: "#111213", QPalette.Shadow: "#000000",
    }
    for role, colour in colours.items():
        palette.setColor(role, QColor(colour))
    for role in (QPalette.WindowText, QPalette.Text, QPalette.ButtonText):
        palette.setColor(QPalette.Disabled, role, QColor("#6f7378"))
    return palette


def scheme(app: QApplication) -> Qt.ColorScheme:
    forced = os.environ.get("HEARTH_APPEARANCE", "").lower()
    if forced in ("light", "dark"):
        return Qt.ColorScheme.Dark if forced == "dark" else Qt.ColorScheme.Light
    return app.styleHints().colorScheme()


def apply(app: QApplication) -> None:
    """Set the palette for the current scheme, and again whenever the system changes it."""

    def update(*_args):
        dark = scheme(app) == Qt.ColorScheme.Dark
        app.setPalette(dark_palette() if dark else app.style().standardPalette())

    update()
    app.styleHints().colorSchemeChanged.connect(update)
