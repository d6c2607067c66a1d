"""Serve the loaded model, in the window: the File menu's action and its dialog, the address in
the status bar, the web pages that may call it (CORS), a Send that waits for a served request,
and Hearth as the client of Hearth as a server (`hearth serve` in a process of its own, chatted
with through a remote model)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QGuiApplication
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.modal_answers import answering
from support.scripted_window import ScriptedWindow, find_action
from support.served import Served
from support.widget_walk import unnamed_widgets
from support.window_stack import ModelStack, WindowStack

from app.engine.sampling import SamplingParams
from app.engine.types import RemoteModel, ReplyStatus, ServerConfig
from app.owners.chat_session import SERVED_WAIT_MESSAGE
from app.owners.settings import ServeAddress
from app.serve.completions import Job
from app.ui.dialogs.serve import LOCAL_NOTE, NETWORK_NOTE, ServeDialog
from app.ui.widgets.colors import MIN_CONTRAST, worst_contrast
from app.ui.window import appearance

WAIT_MS = 10_000
REPLY_MS = 60_000
PAGE, ELSEWHERE = "http://localhost:3000", "http://evil.example"


@pytest.fixture
def opened(qtbot, scripted_models, tmp_path, gemma_path):
    window = ScriptedWindow(qtbot, scripted_models, tmp_path, gemma_path)
    yield window
    window.close()


@pytest.fixture
def dialog(qtbot):
    dialog = ServeDialog(ServeAddress(), "Gemma <b>3</b>")
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=WAIT_MS)
    return dialog


@pytest.fixture
def announcements(monkeypatch):
    """The texts announced to assistive technology."""
    heard = []

    def update(event):
        if event.type() == QAccessible.Event.Announcement:
            heard.append(event.message())

    monkeypatch.setattr(QAccessible, "updateAccessibility", update)
    return heard


def preflight(qtbot, url: str, origin: str) -> httpx.Response:
    """A browser's preflight for a page of `origin` that posts a chat, sent from another thread
    as a browser would, Qt's loop running meanwhile."""
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(httpx.options, url + "/chat/completions",
                             headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
        qtbot.waitUntil(answer.done, timeout=WAIT_MS)
        return answer.result()


def serve_on_any_port(dialog) -> None:
    """Answer the dialog as a user would: any free port (the tests run side by side), Serve."""
    dialog.port_spin.setFocus()
    QTest.keyClick(dialog.port_spin, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(dialog.port_spin, "0")
    QTest.mouseClick(dialog.serve_button, Qt.MouseButton.LeftButton)


def test_the_file_menu_serves_the_model_the_status_bar_gives_the_address_and_unchecking_stops(qtbot, opened):
    window = opened.window
    action, copy = find_action(window, "Serve the loaded model"), find_action(window, "Copy the server address")
    assert action.isCheckable() and not action.isChecked() and not copy.isEnabled()
    assert window.serving_status.isHidden()  # off by default

    with qtbot.waitSignal(window.local_server.started, timeout=WAIT_MS) as started:
        with answering(answer=serve_on_any_port) as answered:
            action.trigger()
    url = started.args[0]
    assert answered.titles == ["ServeDialog: Serve the loaded model"]
    assert window.serving_label.text() == f"Serving at {url}" and url.startswith("http://127.0.0.1:")
    assert window.serving_status.isVisible() and action.isChecked() and copy.isEnabled()
    assert window.settings.serve_address == ServeAddress("127.0.0.1", 0)  # kept for next time; never the key

    copy.trigger()
    assert QGuiApplication.clipboard().text() == url
    QGuiApplication.clipboard().clear()
    QTest.mouseClick(window.copy_address_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == url

    with qtbot.waitSignal(window.local_server.stopped, timeout=WAIT_MS):
        action.trigger()
    assert not action.isChecked() and window.serving_status.isHidden() and not copy.isEnabled()


def test_a_cancelled_dialog_serves_nothing_and_a_failure_is_said(qtbot, opened):
    window = opened.window
    action = find_action(window, "Serve the loaded model")
    with answering() as answered:  # Cancel
        action.trigger()
    assert answered.titles and not action.isChecked() and not window.local_server.active

    def serve_at_a_network_host(dialog) -> None:
        dialog.host_edit.selectAll()
        QTest.keyClicks(dialog.host_edit, "256.1.1.1")  # not an address: binding fails
        QTest.keyClicks(dialog.key_edit, "a-key")
        serve_on_any_port(dialog)

    with qtbot.waitSignal(window.local_server.failed, timeout=WAIT_MS) as failed:
        with answering(answer=serve_at_a_network_host):
            action.trigger()
    assert failed.args[0].startswith("Could not serve at 256.1.1.1:0")
    assert window.statusBar().currentMessage() == failed.args[0] and not action.isChecked()
    window.settings.sync()
    kept = (opened.folder / "hearth.ini").read_text(encoding="utf-8")
    assert "256.1.1.1" in kept and "a-key" not in kept  # the address is kept, the key never


def test_the_dialog_says_who_can_reach_the_model_and_a_network_host_needs_a_key(qtbot, dialog):
    assert unnamed_widgets(dialog) == []
    assert (dialog.host_edit.text(), dialog.port_spin.value(), dialog.key_edit.text()) == ("127.0.0.1", 8080, "")
    assert dialog.reach_label.text() == LOCAL_NOTE and dialog.serve_button.isEnabled()
    assert "(Gemma <b>3</b>)" in dialog.intro_label.text()  # a model's name, shown as written
    assert dialog.intro_label.textFormat() == Qt.TextFormat.PlainText
    QTest.keyClick(dialog, Qt.Key.Key_H, Qt.KeyboardModifier.AltModifier)
    assert dialog.host_edit.hasFocus()
    dialog.host_edit.selectAll()
    QTest.keyClicks(dialog.host_edit, "0.0.0.0")
    assert dialog.reach_label.text() == NETWORK_NOTE and not dialog.serve_button.isEnabled()
    QTest.keyClick(dialog, Qt.Key.Key_K, Qt.KeyboardModifier.AltModifier)
    assert dialog.key_edit.hasFocus() and dialog.key_edit.echoMode() == dialog.key_edit.EchoMode.Password
    QTest.keyClicks(dialog.key_edit, "s3cret")
    assert dialog.serve_button.isEnabled()
    QTest.keyClick(dialog, Qt.Key.Key_P, Qt.KeyboardModifier.AltModifier)
    assert dialog.port_spin.hasFocus()
    request = dialog.request()
    assert (request.address, request.api_key) == (ServeAddress("0.0.0.0", 8080), "s3cret")


@pytest.mark.parametrize("dark", [False, True])
def test_the_dialog_and_the_address_read_in_both_appearances(qtbot, qapp, dialog, opened, dark, tmp_path):
    palette = qapp.palette()
    if dark:
        qapp.setPalette(appearance.dark_palette())
    try:
        dialog.host_edit.selectAll()
        QTest.keyClicks(dialog.host_edit, "0.0.0.0")
        dialog.origins_edit.setText("localhost:3000")
        for label in (dialog.reach_label, dialog.origins_problem):
            assert worst_contrast(label.palette().color(label.foregroundRole()), dialog.palette()) >= MIN_CONTRAST
        dialog.grab().save(str(tmp_path / f"serve-dialog-{'dark' if dark else 'light'}.png"))
        window = opened.window
        with qtbot.waitSignal(window.local_server.started, timeout=WAIT_MS):
            window.local_server.start("127.0.0.1", 0)
        label = window.serving_label
        assert worst_contrast(label.palette().color(label.foregroundRole()), window.palette()) >= MIN_CONTRAST
        window.grab().save(str(tmp_path / f"serving-window-{'dark' if dark else 'light'}.png"))
    finally:
        qapp.setPalette(palette)


def test_a_send_while_a_served_request_runs_says_so_and_goes_when_it_ends(qtbot, opened, script):
    window = opened.window
    script.hold = True
    script.replies = ["served words", "The window's own reply."]
    heard = []
    served = window.session.bridge.serve(Job(SamplingParams(), messages=[{"role": "user", "content": "x"}]),
                                         heard.append)
    qtbot.waitUntil(lambda: bool(heard), timeout=WAIT_MS)
    window.composer.edit.setFocus()
    QTest.keyClicks(window.composer.edit, "From the window")
    QTest.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert window.statusBar().currentMessage() == SERVED_WAIT_MESSAGE
    assert window.chat.is_streaming() and window.composer.edit.toPlainText() == ""  # sent, and in line
    script.hold = False
    with qtbot.waitSignal(window.session.replyFinished, timeout=WAIT_MS) as finished:
        served.cancel()
    assert finished.args[0].text == "The window's own reply." and window.statusBar().currentMessage() == ""


def test_hearth_chats_with_hearth_serve_through_a_remote_model(qtbot, qapp, tmp_path, gemma_path):
    serving = Served(gemma_path, "--threads", "1", "--ctx", "1024")
    stack = WindowStack.open(qtbot, ModelStack.start(tmp_path), tmp_path)
    models, store, window = stack.model_stack.models, stack.store, stack.window
    try:
        source = RemoteModel(ServerConfig(serving.base_url, "hearth serve"), serving.model_id)
        with qtbot.waitSignal(models.modelLoaded, timeout=WAIT_MS):
            window.model_display.load_chosen(source)
        models.update_settings(models.settings.with_changes(sampling=SamplingParams(temperature=0.0, max_tokens=12)))
        chunks = []
        window.session.replyChunk.connect(chunks.append)
        with qtbot.waitSignal(window.session.replyFinished, timeout=REPLY_MS) as finished:
            window.composer.edit.setFocus()
            QTest.keyClicks(window.composer.edit, "Name three rivers.")
            QTest.keyClick(window.composer.edit, Qt.Key.Key_Return)
        reply = finished.args[0]
        assert reply.status is ReplyStatus.COMPLETE and reply.text and "".join(chunks) == reply.text
        assert len(chunks) > 1, "streamed"
        assert reply.stats.completion_tokens == 12  # hearth serve's usage, as it counted
        user, stored = store.messages(reply.conversation_id)
        assert (user.content, stored.content, stored.status) == ("Name three rivers.", reply.text, ReplyStatus.COMPLETE)
        assert stored.model == f"{serving.model_id} @ hearth serve"
    finally:
        stack.close()
        QApplication.processEvents()
        assert serving.stop() == 0, serving.stderr


def test_web_pages_origins_are_checked_as_typed_and_a_bad_one_says_how_to_write_it(qtbot, dialog, announcements):
    edit, problem = dialog.origins_edit, dialog.origins_problem
    assert unnamed_widgets(dialog) == [] and edit.accessibleDescription()
    assert edit.text() == "" and problem.isHidden() and dialog.request().cors_origins == ()  # none by default
    dialog.key_edit.setFocus()
    QTest.keyClick(dialog.key_edit, Qt.Key.Key_Tab)
    assert edit.hasFocus()  # next after the key
    dialog.host_edit.setFocus()
    QTest.keyClick(dialog, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    assert edit.hasFocus()

    QTest.keyClicks(edit, "http://localhost:3000/")
    assert problem.isVisible() and not dialog.serve_button.isEnabled()
    assert problem.text().startswith("'http://localhost:3000/' is not an origin") and "not even a trailing /" in problem.text()
    assert problem.text() in edit.accessibleDescription() and announcements == []  # not at every keystroke
    assert dialog.height() >= dialog.layout().totalHeightForWidth(dialog.width())  # its lines all shown
    QTest.keyClick(edit, Qt.Key.Key_Tab)  # leaving the field says it
    assert announcements == [problem.text()] and not edit.hasFocus()

    QTest.keyClick(dialog, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    QTest.keyClick(edit, Qt.Key.Key_End)
    QTest.keyClick(edit, Qt.Key.Key_Backspace)
    assert problem.isHidden() and dialog.serve_button.isEnabled()
    QTest.keyClicks(edit, ", https://app.example:443")
    assert "browsers leave out https's default port 443; give https://app.example" in problem.text()
    assert not dialog.serve_button.isEnabled()
    for _ in ":443":
        QTest.keyClick(edit, Qt.Key.Key_Backspace)
    QTest.keyClicks(edit, " HTTP://LocalHost:3000")  # spaces separate too; the same origin once
    assert problem.isHidden() and dialog.serve_button.isEnabled()
    assert dialog.request().cors_origins == (PAGE, "https://app.example")


def test_listed_web_pages_may_call_the_server_are_said_and_offered_again(qtbot, opened):
    window = opened.window
    action = find_action(window, "Serve the loaded model")

    def list_pages(dialog) -> None:
        QTest.keyClick(dialog, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
        QTest.keyClicks(dialog.origins_edit, f"{PAGE}, https://app.example")
        serve_on_any_port(dialog)

    with qtbot.waitSignal(window.local_server.started, timeout=WAIT_MS) as started:
        with answering(answer=list_pages):
            action.trigger()
    url = started.args[0]
    said = f"web pages from {PAGE}, https://app.example may call it"  # as hearth serve's start-up line
    assert window.serving_label.text() == f"Serving at {url}; {said}"
    assert window.statusBar().currentMessage() == f"Serving the loaded model at {url}; {said}"
    allowed = preflight(qtbot, url, PAGE)
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == PAGE
    refused = preflight(qtbot, url, ELSEWHERE)
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers

    with qtbot.waitSignal(window.local_server.stopped, timeout=WAIT_MS):
        action.trigger()
    window.settings.sync()
    assert f"{PAGE}, https://app.example" in (opened.folder / "hearth.ini").read_text(encoding="utf-8")
    with answering(look=lambda dialog: dialog.origins_edit.text()) as answered:  # then Cancel
        action.trigger()
    assert answered.notes == [f"{PAGE}, https://app.example"] and not window.local_server.active
