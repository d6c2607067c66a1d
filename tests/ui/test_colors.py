"""Status colours computed from the real light and dark palettes reach 4.5:1, and follow a
palette change while the window is open."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QStyleFactory, QVBoxLayout, QWidget

from app.ui.widgets.colors import Tone, contrast, error_color, muted_color, set_tone, worst_contrast
from app.ui.window.appearance import dark_palette

BACKGROUNDS = (QPalette.Window, QPalette.Base, QPalette.AlternateBase)


def light_palette() -> QPalette:
    return QStyleFactory.create("Fusion").standardPalette()


PALETTES = {"light": light_palette, "dark": dark_palette}


@pytest.fixture
def restore_palette(qapp):
    previous = qapp.palette()
    yield
    qapp.setPalette(previous)


@pytest.mark.parametrize("name", PALETTES)
@pytest.mark.parametrize("colour", [error_color, muted_color])
def test_status_colours_read_on_every_background(qapp, name, colour):
    palette = PALETTES[name]()
    chosen = colour(palette)
    for role in BACKGROUNDS:
        assert contrast(chosen, palette.color(role)) >= 4.5, (name, colour.__name__, role)
    assert worst_contrast(chosen, palette) >= 4.5


def test_the_old_fixed_colours_did_not(qapp):
    """What this module replaces: the numbers the issue measured."""
    assert contrast(QColor("#c62828"), dark_palette().color(QPalette.Window)) < 3.0
    assert contrast(QColor("gray"), light_palette().color(QPalette.Window)) < 3.5


def test_the_error_colour_is_red_and_muted_text_is_quieter_than_text(qapp):
    for palette in (light_palette(), dark_palette()):
        red = error_color(palette)
        assert red.red() > red.green() + 60 and red.red() > red.blue() + 60
        text, base = palette.color(QPalette.Text), palette.color(QPalette.Base)
        assert contrast(muted_color(palette), base) < contrast(text, base)


def test_a_toned_label_follows_the_application_palette(qtbot, qapp, restore_palette):
    window = QWidget()
    qtbot.addWidget(window)
    error, muted = QLabel("Could not load"), QLabel("a note")
    layout = QVBoxLayout(window)
    layout.addWidget(error)
    layout.addWidget(muted)
    set_tone(error, Tone.ERROR)
    set_tone(muted, Tone.MUTED)
    window.show()
    for name, make in PALETTES.items():
        qapp.setPalette(make())
        qtbot.wait(10)
        palette = qapp.palette()
        assert error.palette().color(QPalette.WindowText) == error_color(palette), name
        assert muted.palette().color(QPalette.WindowText) == muted_color(palette), name
    set_tone(error, Tone.NORMAL)  # an error that is no longer one reads like any text
    assert error.palette().color(QPalette.WindowText) == qapp.palette().color(QPalette.WindowText)
