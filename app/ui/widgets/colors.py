"""Status colours (errors, muted text) that stay readable in the light and the dark palette.

A fixed red or "gray" that reads well on white is too dark on a dark window (the dark error red
was 2.9:1, grey labels 3.4:1, greyed model rows 1.9:1). So each colour here is derived from
the palette it is shown on, and moved towards the text colour until it has WCAG's 4.5:1
contrast for body text against every background it can sit on (the window, list rows and
their alternate rows). `set_tone` keeps a label's colour right when the palette changes while
the application runs (the system switches to dark, or the user picks an appearance).
"""

from __future__ import annotations

from enum import Enum

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

MIN_CONTRAST = 4.5  # WCAG 2 AA for body text
_BACKGROUNDS = (QPalette.ColorRole.Window, QPalette.ColorRole.Base, QPalette.ColorRole.AlternateBase)
_LIGHT_RED, _DARK_RED = QColor("#c62828"), QColor("#f28b82")
_MUTED_MIX = 0.45  # how far muted text starts towards the background: clearly secondary
_STEP = 0.05


def mix(a: QColor, b: QColor, amount: float) -> QColor:
    """a moved `amount` of the way towards b."""
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * amount,
        a.greenF() + (b.greenF() - a.greenF()) * amount,
        a.blueF() + (b.blueF() - a.blueF()) * amount,
    )


def contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio, from 1 (none) to 21 (black on white)."""

    def luminance(c: QColor) -> float:
        def linear(v: float) -> float:
            return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF())

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def worst_contrast(color: QColor, palette: QPalette) -> float:
    """The lowest contrast `color` has against the backgrounds text sits on in `palette`."""
    return min(contrast(color, palette.color(QPalette.ColorGroup.Active, role)) for role in _BACKGROUNDS)


def _text(palette: QPalette) -> QColor:
    return palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Text)


def _readable(color: QColor, palette: QPalette) -> QColor:
    """`color`, moved step by step towards the palette's text colour until it reads on every
    background (the text colour itself is the last resort)."""
    text = _text(palette)
    amount = 0.0
    while amount < 1.0:
        candidate = mix(color, text, amount)
        if worst_contrast(candidate, palette) >= MIN_CONTRAST:
            return candidate
        amount += _STEP
    return text


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Base).lightness() < 128


def error_color(palette: QPalette) -> QColor:
    """A red for error text, at least 4.5:1 against the palette's window and list rows."""
    return _readable(_DARK_RED if is_dark(palette) else _LIGHT_RED, palette)


def muted_color(palette: QPalette) -> QColor:
    """Secondary text (paths, notes, unusable rows): visibly quieter than the text, and still
    at least 4.5:1 against the palette's window and list rows."""
    base = palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Base)
    return _readable(mix(_text(palette), base, _MUTED_MIX), palette)


class Tone(Enum):
    """How a label's text is coloured."""

    NORMAL = "normal"
    MUTED = "muted"
    ERROR = "error"


def tone_color(tone: Tone, palette: QPalette) -> QColor:
    if tone is Tone.ERROR:
        return error_color(palette)
    if tone is Tone.MUTED:
        return muted_color(palette)
    return palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.WindowText)


_TONE_PROPERTY = "hearthTone"
_TEXT_ROLES = (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text)


class _ToneKeeper(QObject):
    """Re-colours toned widgets when their palette changes (it changes when the application's
    does). Setting the colour is itself a palette change, so it stops once the colour is right."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.PaletteChange and isinstance(watched, QWidget):
            _apply(watched)
        return False


_keeper: _ToneKeeper | None = None


def set_tone(widget: QWidget, tone: Tone) -> None:
    """Colour `widget`'s text for `tone`, now and after every palette change."""
    global _keeper
    if _keeper is None:
        _keeper = _ToneKeeper(QApplication.instance())
    if widget.property(_TONE_PROPERTY) is None:
        widget.installEventFilter(_keeper)
    widget.setProperty(_TONE_PROPERTY, tone.value)
    _apply(widget)


def tone_of(widget: QWidget) -> Tone:
    value = widget.property(_TONE_PROPERTY)
    return Tone(value) if value else Tone.NORMAL


def _apply(widget: QWidget) -> None:
    tone = tone_of(widget)
    if tone is Tone.NORMAL:
        if widget.palette().resolveMask():  # back to the inherited palette, disabled grey included
            widget.setPalette(QPalette())
        return
    palette = widget.palette()
    # From the palette the widget inherits: its own holds the colour set here last, which would
    # otherwise count as its text colour.
    parent = widget.parentWidget()
    wanted = tone_color(tone, parent.palette() if parent is not None else QApplication.palette(widget))
    if any(palette.color(QPalette.ColorGroup.Active, role) != wanted for role in _TEXT_ROLES):
        for role in _TEXT_ROLES:
            palette.setColor(role, wanted)
        widget.setPalette(palette)
