"""The Add server dialog on its own: names a screen reader can say, the keyboard's way through
it, what an address that is not one says, and a key with no keyring to keep it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.modal_answers import answering
from support.remote_gui import no_keyring  # noqa: F401 - a fixture
from support.remote_servers import free_port, stand_in  # noqa: F401 - a fixture
from support.settings_file import settings_at
from support.widget_walk import unnamed_widgets

from app.owners.remote_servers import RemoteServers
from app.ui.models.add_server_dialog import AddServerDialog
from app.ui.widgets.colors import MIN_CONTRAST, worst_contrast

WAIT_MS = 5_000


@pytest.fixture
def servers(qapp, tmp_path) -> RemoteServers:
    return RemoteServers(settings_at(tmp_path / "hearth.ini"))


@pytest.fixture
def dialog(qtbot, servers) -> AddServerDialog:
    dialog = AddServerDialog(servers)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)
    return dialog


def test_every_control_is_named_and_the_keyboard_goes_through_them_in_order(dialog):
    assert unnamed_widgets(dialog) == []
    dialog.address_edit.setFocus()
    QTest.keyClicks(dialog.address_edit, "http://gpu:8000/v1")  # Save and Test wait for an address
    order = [QApplication.focusWidget()]
    for _ in range(5):
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        order.append(QApplication.focusWidget())
    assert order == [dialog.address_edit, dialog.name_edit, dialog.key_edit, dialog.test_button,
                     dialog.save_button, dialog.buttons.button(dialog.buttons.StandardButton.Cancel)]
    QTest.keyClick(dialog, Qt.Key.Key_K, Qt.KeyboardModifier.AltModifier)  # "API &key": its label's letter
    assert dialog.key_edit.hasFocus()


def test_an_address_that_is_not_one_says_why_and_nothing_is_saved(qtbot, dialog, servers):
    QTest.keyClicks(dialog.address_edit, "gpu-box:8000")
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert "looks like http://host:port/v1" in dialog.result_label.text() and dialog.result_label.isVisible()
    QTest.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert dialog.isVisible() and servers.servers() == []  # kept open, saying why
    QTest.keyClick(dialog.address_edit, Qt.Key.Key_End)
    QTest.keyClick(dialog.address_edit, Qt.Key.Key_Backspace)  # an edit makes the answer stale
    assert dialog.result_label.isHidden()


@pytest.mark.parametrize("dark", [False, True])
def test_the_answer_reads_in_both_appearances(qtbot, dialog, qapp, dark):
    from app.ui.window import appearance

    palette = qapp.palette()
    if dark:
        qapp.setPalette(appearance.dark_palette())
    try:
        gone = f"http://127.0.0.1:{free_port()}/v1"
        QTest.keyClicks(dialog.address_edit, gone)
        QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "refused the connection" in dialog.result_label.text(), timeout=WAIT_MS)
        colour = dialog.result_label.palette().color(dialog.result_label.foregroundRole())
        assert worst_contrast(colour, dialog.palette()) >= MIN_CONTRAST
        assert dialog.height() >= dialog.layout().totalHeightForWidth(dialog.width())  # grown to show it whole
    finally:
        qapp.setPalette(palette)


def test_without_a_keyring_saving_says_the_key_lasts_for_this_session(qtbot, dialog, servers, stand_in, no_keyring):  # noqa: F811
    QTest.keyClicks(dialog.address_edit, stand_in.url("auth"))
    QTest.keyClicks(dialog.key_edit, "good-key")
    with answering() as answered:
        QTest.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    assert answered.titles == ["QMessageBox: API key"]
    assert [server.base_url for server in servers.servers()] == [stand_in.url("auth")]
    assert servers.source(servers.servers()[0], "stand-in").server.api_key == "good-key"  # for this session
