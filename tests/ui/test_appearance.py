"""Light and dark palettes follow the scheme (forced here, as the offscreen platform has none)."""

from __future__ import annotations

from PySide6.QtGui import QPalette

from app.ui import appearance


def test_dark_scheme_gets_a_dark_palette_and_light_a_light_one(qapp, monkeypatch):
    monkeypatch.setenv("HEARTH_APPEARANCE", "dark")
    appearance.apply(qapp)
    assert qapp.palette().color(QPalette.Window).lightness() < 60
    assert qapp.palette().color(QPalette.WindowText).lightness() > 200
    monkeypatch.setenv("HEARTH_APPEARANCE", "light")
    appearance.apply(qapp)
    assert qapp.palette().color(QPalette.Window).lightness() > 200
    assert qapp.palette().color(QPalette.WindowText).lightness() < 60
