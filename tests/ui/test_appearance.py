"""Light and dark: chosen in View → Appearance (kept in the settings file, applied at once and at
the next start), or the system's, or forced by HEARTH_APPEARANCE.

The offscreen platform has no colour scheme of its own, so "the system turned dark" is played
by answering `appearance.system_scheme` and emitting the signal the platform would.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QWidget
from support.settings_file import ini_file, settings_at

from app.owners.settings import APPEARANCE, Appearance
from app.ui.app.application import create_application
from app.ui.window import appearance


def is_dark(palette: QPalette) -> bool:
    return (palette.color(QPalette.ColorRole.Window).lightness() < 60
            and palette.color(QPalette.ColorRole.WindowText).lightness() > 200)


def is_light(palette: QPalette) -> bool:
    return (palette.color(QPalette.ColorRole.Window).lightness() > 200
            and palette.color(QPalette.ColorRole.WindowText).lightness() < 60)


@pytest.fixture
def restored_palette(qapp, monkeypatch):
    """No HEARTH_APPEARANCE from the caller's environment; afterwards, the palette as it was and
    the application following the system again."""
    monkeypatch.delenv("HEARTH_APPEARANCE", raising=False)
    original = QPalette(qapp.palette())
    yield
    appearance.apply(qapp, Appearance.SYSTEM)
    qapp.setPalette(original)


@pytest.fixture
def settings_file(tmp_path):
    return tmp_path / "hearth.ini"


def menu_action(menu, choice: Appearance):
    return next(a for a in menu.actions() if a.data() == choice.value)


def test_the_environment_forces_dark_or_light(qapp, restored_palette, monkeypatch):
    monkeypatch.setenv("HEARTH_APPEARANCE", "dark")
    appearance.apply(qapp, Appearance.LIGHT)  # the variable wins over the setting
    assert is_dark(qapp.palette())
    monkeypatch.setenv("HEARTH_APPEARANCE", "light")
    appearance.apply(qapp, Appearance.DARK)
    assert is_light(qapp.palette())


def test_the_menu_switches_the_open_window_and_keeps_the_choice(qapp, qtbot, restored_palette, settings_file):
    window = QWidget()
    qtbot.addWidget(window)
    label = QLabel("some text", window)
    window.show()
    menu = appearance.appearance_menu(window, settings_at(settings_file))
    assert [a.text() for a in menu.actions()] == ["&System", "&Light", "&Dark"]
    assert menu_action(menu, Appearance.SYSTEM).isChecked()

    menu_action(menu, Appearance.DARK).trigger()
    qtbot.waitUntil(lambda: is_dark(label.palette()), timeout=1000)  # the open window, at once
    assert menu_action(menu, Appearance.DARK).isChecked()
    assert not menu_action(menu, Appearance.SYSTEM).isChecked(), "one choice at a time"
    assert ini_file(settings_file).value(APPEARANCE) == "dark", "written out"

    menu_action(menu, Appearance.LIGHT).trigger()
    qtbot.waitUntil(lambda: is_light(label.palette()), timeout=1000)
    assert ini_file(settings_file).value(APPEARANCE) == "light"

    # The next start: a menu over the same file shows the choice, and the application opens in it.
    again = appearance.appearance_menu(window, settings_at(settings_file))
    assert menu_action(again, Appearance.LIGHT).isChecked()
    menu_action(again, Appearance.DARK).trigger()
    qapp.setPalette(appearance.light_palette())  # as if the process had started afresh
    create_application(settings_at(settings_file).appearance)
    assert is_dark(qapp.palette())


def test_system_follows_the_system_and_a_choice_does_not(qapp, qtbot, restored_palette, settings_file, monkeypatch):
    window = QWidget()
    qtbot.addWidget(window)
    menu = appearance.appearance_menu(window, settings_at(settings_file))
    system = {"scheme": Qt.ColorScheme.Light}
    monkeypatch.setattr(appearance, "system_scheme", lambda _app: system["scheme"])
    changed = qapp.styleHints().colorSchemeChanged

    menu_action(menu, Appearance.SYSTEM).trigger()
    assert is_light(qapp.palette())
    system["scheme"] = Qt.ColorScheme.Dark
    changed.emit(Qt.ColorScheme.Dark)
    assert is_dark(qapp.palette()), "System follows the system while Hearth runs"

    menu_action(menu, Appearance.LIGHT).trigger()
    assert is_light(qapp.palette())
    changed.emit(Qt.ColorScheme.Dark)
    assert is_light(qapp.palette()), "a chosen appearance stays, whatever the system does"
    assert ini_file(settings_file).value(APPEARANCE) == "light"


def test_an_unreadable_stored_appearance_is_system(settings_file):
    store = ini_file(settings_file)
    store.setValue(APPEARANCE, "purple")
    store.sync()
    assert settings_at(settings_file).appearance is Appearance.SYSTEM
    store.setValue(APPEARANCE, "DARK")  # edited by hand
    store.sync()
    assert settings_at(settings_file).appearance is Appearance.DARK
