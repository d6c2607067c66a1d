"""Light and dark appearance: the system's, or the one chosen in View → Appearance.

Fusion gives the same look on every platform, but it only turns dark where the platform
theme hands it a dark palette, and many Linux desktops (and the offscreen platform) report a
dark colour scheme without one. So Hearth builds both palettes itself and sets the one that
applies: the user's choice (kept in the settings file), or while that is System, the system's
scheme, followed while Hearth runs. HEARTH_APPEARANCE=light|dark overrides both (the tests,
screenshots).

Both palettes keep text that must be read at WCAG's 4.5:1 or more against the backgrounds it
is drawn on: greyed rows (unusable model files) are drawn in the disabled Text colour on Base
and AlternateBase, hints in PlaceholderText on Base and Window. Fusion's own light palette
greys them to 1.6:1 and 4.0:1, and its selection blue under white text is 3.7:1.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QColor, QPalette
from PySide6.QtWidgets import QApplication, QMenu, QStyleFactory, QWidget

from ...owners.settings import Appearance, Settings

# Grey text on light backgrounds: 5.3:1 on white, 4.6:1 on Fusion's window grey (#efefef).
LIGHT_MUTED_TEXT = "#6b6b6b"
# The light selection: white text on it is 5.3:1.
LIGHT_HIGHLIGHT = "#2d6db0"
# Grey text on dark backgrounds: 4.7:1 on the lightest of them (buttons, #2d2f33).
DARK_MUTED_TEXT = "#959a9f"

CHOICES = {
    Appearance.SYSTEM: ("&System", "Light or dark as the system is set, following its changes"),
    Appearance.LIGHT: ("&Light", "Always light"),
    Appearance.DARK: ("&Dark", "Always dark"),
}

_TEXT_ROLES = (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText)
_READABLE_GROUPS = (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive)


def light_palette() -> QPalette:
    """Fusion's light palette, with its greys and its selection dark enough to read."""
    palette = QStyleFactory.create("Fusion").standardPalette()
    muted = QColor(LIGHT_MUTED_TEXT)
    palette.setColor(QPalette.ColorRole.PlaceholderText, muted)
    for role in _TEXT_ROLES:
        palette.setColor(QPalette.ColorGroup.Disabled, role, muted)
    for group in _READABLE_GROUPS:
        palette.setColor(group, QPalette.ColorRole.Highlight, QColor(LIGHT_HIGHLIGHT))
    return palette


def dark_palette() -> QPalette:
    palette = QPalette()
    R = QPalette.ColorRole
    colours = {
        R.Window: "#202124", R.WindowText: "#e8eaed", R.Base: "#17181a",
        R.AlternateBase: "#26282b", R.ToolTipBase: "#303134", R.ToolTipText: "#e8eaed",
        R.PlaceholderText: "#9aa0a6", R.Text: "#e8eaed", R.Button: "#2d2f33",
        R.ButtonText: "#e8eaed", R.BrightText: "#ff6b6b", R.Link: "#8ab4f8",
        R.LinkVisited: "#c58af9", R.Highlight: "#3d6fb4", R.HighlightedText: "#ffffff",
        R.Light: "#3c4043", R.Midlight: "#34363a", R.Mid: "#2a2c2f",
        R.Dark: "#111213", R.Shadow: "#000000",
    }
    for role, colour in colours.items():
        palette.setColor(role, QColor(colour))
    for role in _TEXT_ROLES:
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(DARK_MUTED_TEXT))
    return palette


def effective_choice(choice: Appearance) -> Appearance:
    """The choice, unless HEARTH_APPEARANCE forces light or dark."""
    forced = os.environ.get("HEARTH_APPEARANCE", "").lower()
    return Appearance(forced) if forced in (Appearance.LIGHT, Appearance.DARK) else choice


def system_scheme(app: QApplication) -> Qt.ColorScheme:
    """What the platform says the system's scheme is now (Unknown where it cannot say)."""
    return app.styleHints().colorScheme()


def scheme(app: QApplication, choice: Appearance = Appearance.SYSTEM) -> Qt.ColorScheme:
    """Light or dark, for this choice (System: what the system says now)."""
    choice = effective_choice(choice)
    if choice is Appearance.SYSTEM:
        return system_scheme(app)
    return Qt.ColorScheme.Dark if choice is Appearance.DARK else Qt.ColorScheme.Light


class _Follower(QObject):
    """Keeps the application's palette on its appearance: one per application, so that applying
    another choice does not connect to the system's changes again."""

    def __init__(self, app: QApplication):
        super().__init__(app)
        self.choice = Appearance.SYSTEM
        self._requested = Qt.ColorScheme.Unknown  # what was asked of the platform: nothing yet
        app.styleHints().colorSchemeChanged.connect(self.update)

    def update(self, *_changed) -> None:
        app = QApplication.instance()
        choice = effective_choice(self.choice)
        # Asking the platform for the scheme too makes what Qt does not draw (title bars,
        # native dialogs) match, where the platform can; Unknown hands it back to the system.
        wanted = Qt.ColorScheme.Unknown if choice is Appearance.SYSTEM else scheme(app, choice)
        if wanted != self._requested:
            self._requested = wanted  # first: the request may emit colorSchemeChanged at once
            if wanted == Qt.ColorScheme.Unknown:
                app.styleHints().unsetColorScheme()
            else:
                app.styleHints().setColorScheme(wanted)
        dark = scheme(app, choice) == Qt.ColorScheme.Dark
        app.setPalette(dark_palette() if dark else light_palette())


def apply(app: QApplication, choice: Appearance = Appearance.SYSTEM) -> None:
    """Set the palette for this choice now, and while it is System, whenever the system's
    scheme changes."""
    follower = app.findChild(_Follower) or _Follower(app)
    follower.choice = choice
    follower.update()


def appearance_menu(parent: QWidget, settings: Settings) -> QMenu:
    """View → Appearance: System, Light or Dark, one checked; a choice applies at once and is
    written to the settings file, so the next start opens with it."""
    menu = QMenu("&Appearance", parent)
    group = QActionGroup(menu)
    group.setExclusive(True)
    current = settings.appearance
    for choice, (text, tip) in CHOICES.items():
        action = QAction(text, menu)
        action.setCheckable(True)
        action.setChecked(choice is current)
        action.setStatusTip(tip)
        action.setData(choice.value)
        action.triggered.connect(lambda _checked=False, chosen=choice: _choose(settings, chosen))
        group.addAction(action)
        menu.addAction(action)
    return menu


def _choose(settings: Settings, choice: Appearance) -> None:
    settings.appearance = choice
    settings.sync()
    apply(QApplication.instance(), choice)
