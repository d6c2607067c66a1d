"""Text that must be read reaches WCAG's 4.5:1 against the background it is drawn on, in the
palettes Hearth really applies (View → Appearance: Light and Dark).

Each pair is where Qt (Fusion) or Hearth draws that text: greyed model rows are the disabled
Text colour on the enabled view's Base and AlternateBase rows, hint labels PlaceholderText on
Window. A colour with alpha (Fusion's placeholder is half-transparent black) is measured as
drawn, blended over its background.
"""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette

from app.owners.settings import Appearance
from app.ui.widgets.colors import contrast
from app.ui.window import appearance

WCAG_TEXT = 4.5
G, R = QPalette.ColorGroup, QPalette.ColorRole

# (text group, text role, background role): backgrounds are read from the Active group, as an
# enabled view draws a disabled item's text on its own (enabled) background.
PAIRS = [
    (group, text, background)
    for group in (G.Active, G.Inactive)
    for text, background in [
        (R.Text, R.Base), (R.Text, R.AlternateBase), (R.WindowText, R.Window), (R.ButtonText, R.Button),
        (R.PlaceholderText, R.Base), (R.PlaceholderText, R.Window), (R.Link, R.Base),
        (R.HighlightedText, R.Highlight), (R.ToolTipText, R.ToolTipBase),
    ]
] + [
    (G.Disabled, R.Text, R.Base), (G.Disabled, R.Text, R.AlternateBase),
    (G.Disabled, R.WindowText, R.Window), (G.Disabled, R.ButtonText, R.Button),
]


def as_drawn(colour: QColor, background: QColor) -> QColor:
    alpha = colour.alphaF()
    return QColor.fromRgbF(*(c * alpha + b * (1 - alpha) for c, b in zip(
        (colour.redF(), colour.greenF(), colour.blueF()),
        (background.redF(), background.greenF(), background.blueF()))))


def test_as_drawn_blends_a_transparent_colour():
    """Fusion's placeholder is black at half opacity: on white it reads as mid grey, 4:1."""
    half_black = QColor(0, 0, 0, 128)
    assert contrast(as_drawn(half_black, QColor("white")), QColor("white")) == pytest.approx(4.0, abs=0.05)


@pytest.fixture
def applied(qapp, monkeypatch):
    """Applies an appearance as the menu does; afterwards, the palette as it was."""
    monkeypatch.delenv("HEARTH_APPEARANCE", raising=False)
    original = QPalette(qapp.palette())

    def apply(choice: Appearance) -> QPalette:
        appearance.apply(qapp, choice)
        return QPalette(qapp.palette())

    yield apply
    appearance.apply(qapp, Appearance.SYSTEM)
    qapp.setPalette(original)


@pytest.mark.parametrize("choice", [Appearance.LIGHT, Appearance.DARK])
def test_text_reaches_4_5_to_1_in_each_appearance(applied, choice):
    palette = applied(choice)
    too_faint = []
    for group, text_role, background_role in PAIRS:
        background = palette.color(G.Active, background_role)
        text = palette.color(group, text_role)
        ratio = contrast(as_drawn(text, background), background)
        if ratio < WCAG_TEXT:
            too_faint.append(f"{group.name} {text_role.name} {text.name(QColor.NameFormat.HexArgb)} on "
                             f"{background_role.name} {background.name()}: {ratio:.2f}:1")
    assert not too_faint, f"{choice.value}: text below {WCAG_TEXT}:1:\n" + "\n".join(too_faint)


def test_disabled_text_still_looks_disabled(applied):
    """Readable, but not mistaken for enabled text: clearly fainter than it."""
    for choice in (Appearance.LIGHT, Appearance.DARK):
        palette = applied(choice)
        base = palette.color(G.Active, R.Base)
        enabled = contrast(palette.color(G.Active, R.Text), base)
        disabled = contrast(palette.color(G.Disabled, R.Text), base)
        assert disabled < enabled / 2, choice
