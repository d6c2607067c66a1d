"""Images in the window (#30), as a user attaches and sends them: pasted through the clipboard
(a picture, or image files copied in a file manager), dropped onto the chat or the message box,
chips removed by keyboard and mouse, a hostile file refused in a line while nothing else is
lost; sent with the text to a model that reads images and shown as thumbnails in the
transcript, opened larger and closed by keyboard, kept through Regenerate and Edit; and a
text-only model (the default Gemma) turning Attach off with its reason.

The model is scripted (tests/support/scripted_backend.py), described with a projector where it
reads images: what is tested here is the window and the store, and what reaches the engine's
messages. The real engine reading real images in this same window is
test_window_images_vision.py's, on the tiny vision pair."""

from __future__ import annotations

import struct
import zlib

import pytest
import shiboken6
from image_window import VisionScript, chip_names, chips, drag_and_drop, file_urls, paste, picture, picture_file
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QSize, Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage, QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.chat_helpers import browser, click_anchor, fragments
from support.flow_harness import MODEL, WAIT_MS, FlowWindow, edit, regenerate
from support.widget_walk import unnamed_widgets

from app.images.intake import read_image
from app.images.limits import MAX_IMAGES_PER_MESSAGE
from app.ui.chat.images import attachments
from app.ui.chat.images.chips import CHIP_PX
from app.ui.chat.images.in_transcript import THUMBNAIL_BOX_PX
from app.ui.dialogs.image_view import ImageViewDialog, screen_sized
from app.ui.widgets.thumbnails import thumbnail
from app.ui.window import appearance
from app.ui.window.images import DROP_TEXT

TEXT_ONLY = "Gemma 3 270m cannot read images: load a vision model with its projector (mmproj)"


@pytest.fixture
def script(gemma_info):
    return VisionScript(gemma_info)


@pytest.fixture
def opened(qtbot, script, tmp_path):
    window = FlowWindow(qtbot, script, tmp_path)
    yield window
    window.close()


@pytest.fixture
def heard(monkeypatch) -> list[str]:
    """What the message box's images say to a screen reader."""
    said: list[str] = []
    monkeypatch.setattr(attachments, "announce", lambda _widget, text, urgent=False: said.append(text))
    return said


def thumbnails(window) -> list[tuple[str, str]]:
    """The images in the transcript: (tooltip, href) of each, in order."""
    return [(fmt.toolTip(), fmt.anchorHref()) for _text, fmt in fragments(window.chat) if fmt.isImageFormat()]


def send_and_wait(opened: FlowWindow, text: str = "") -> None:
    """Type (or not) and press Enter; wait for the reply."""
    with opened.qtbot.waitSignal(opened.session.replyFinished, timeout=WAIT_MS):
        edit_box = opened.window.composer.edit
        edit_box.setFocus()
        edit_box.setPlainText(text)
        QTest.keyClick(edit_box, Qt.Key.Key_Return)


def last_question(opened: FlowWindow) -> dict:
    """The last user message of the last request the model was given."""
    messages, _params = opened.script.requests[-1]
    return [message for message in messages if message["role"] == "user"][-1]


def _png(image) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    assert image.save(buffer, "PNG")
    return bytes(data.data())


def first_image_position(pane) -> int:
    """Where the transcript's first image is in its document."""
    block = pane.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            if it.fragment().charFormat().isImageFormat():
                return it.fragment().position()
            it += 1
        block = block.next()
    raise AssertionError("no image in the transcript")


def png_declaring(width: int, height: int) -> bytes:
    """A PNG of a few bytes whose header declares width × height pixels (a decompression bomb)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(header)) + chunk + struct.pack(">I", zlib.crc32(chunk))


# -- attaching ------------------------------------------------------------------------------------


def test_a_pasted_picture_is_a_chip_above_the_box_and_the_text_stays(opened, qtbot, heard):
    window = opened.window
    window.composer.edit.setPlainText("What is in this picture?")
    paste(qtbot, window, picture(640, 480, 200))
    assert chip_names(window) == ["Image 1 of 1, 640 × 480"]
    [chip] = chips(window)
    assert chip.isVisible() and chip.size().width() == CHIP_PX and chip.focusPolicy() & Qt.FocusPolicy.TabFocus
    assert chip.remove_button.accessibleName() == "Remove image 1"
    assert window.composer.text() == "What is in this picture?"
    assert heard[-1] == "1 image attached. The message has 1 image."
    assert unnamed_widgets(window) == []  # the chip and Attach are named to a screen reader
    text = QMimeData()
    text.setText(" Plain words.")
    window.composer.edit.moveCursor(QTextCursor.MoveOperation.End)
    paste(qtbot, window, text)  # text on the clipboard is pasted as text, as ever
    assert window.composer.text() == "What is in this picture? Plain words." and len(chips(window)) == 1


def test_image_files_copied_in_a_file_manager_paste_as_chips_not_as_paths(opened, qtbot, tmp_path):
    window = opened.window
    beach, forest = picture_file(tmp_path, "beach.png"), picture_file(tmp_path, "forest.jpg", 800, 600, 120)
    paste(qtbot, window, file_urls(beach, forest))
    assert chip_names(window) == ["Image 1 of 2, 640 × 480", "Image 2 of 2, 800 × 600"]
    assert window.composer.text() == ""
    notes = tmp_path / "notes.txt"
    notes.write_text("a note")
    paste(qtbot, window, file_urls(notes))  # not images: their paths are pasted, as a text box does
    assert window.composer.text() == str(notes) and len(chips(window)) == 2


def test_image_files_dropped_on_the_chat_or_the_box_are_attached(opened, qtbot, tmp_path):
    window = opened.window
    hint = window.sending.images.drop_hint
    first, second = picture_file(tmp_path, "one.png"), picture_file(tmp_path, "two.webp", 300, 200, 30)
    assert drag_and_drop(window, window.chat, file_urls(first), hint)
    assert hint.accessibleName() == DROP_TEXT
    qtbot.waitUntil(lambda: len(chips(window)) == 1, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not hint.isVisible(), timeout=WAIT_MS)
    assert drag_and_drop(window, window.composer.edit, file_urls(second), hint)
    qtbot.waitUntil(lambda: len(chips(window)) == 2, timeout=WAIT_MS)
    assert chip_names(window) == ["Image 1 of 2, 640 × 480", "Image 2 of 2, 300 × 200"]
    assert window.composer.text() == ""  # not the paths
    notes = tmp_path / "notes.txt"
    notes.write_text("a note")
    assert not drag_and_drop(window, window.chat, file_urls(first, notes))  # a document among them: not the box's
    assert len(chips(window)) == 2


def test_a_chip_is_removed_by_keyboard_and_the_keyboard_moves_on(opened, qtbot, tmp_path, heard):
    window = opened.window
    paste(qtbot, window, file_urls(*(picture_file(tmp_path, f"{n}.png", 100 + n, 80, 40 * n) for n in range(3))))
    edit_box = window.composer.edit
    QTest.keyClick(edit_box, Qt.Key.Key_Backtab)  # Attach, left of the box; the chips above them
    assert window.composer.images.attach_button.hasFocus()
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
    assert chips(window)[2].hasFocus()
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Delete)
    assert chip_names(window) == ["Image 1 of 2, 100 × 80", "Image 2 of 2, 101 × 80"]
    assert chips(window)[1].hasFocus() and heard[-1] == "Image 3 removed. The message has 2 images."
    QTest.keyClick(chips(window)[1], Qt.Key.Key_Backtab)
    assert chips(window)[0].hasFocus()
    QTest.keyClick(chips(window)[0], Qt.Key.Key_Backspace)
    assert chip_names(window) == ["Image 1 of 1, 101 × 80"] and chips(window)[0].hasFocus()
    QTest.keyClick(chips(window)[0], Qt.Key.Key_Delete)
    assert chips(window) == [] and not window.composer.images.chips.isVisible()
    assert edit_box.hasFocus() and heard[-1] == "Image 1 removed. The message has no images."


def test_the_remove_button_takes_its_image_off(opened, qtbot, tmp_path):
    window = opened.window
    paste(qtbot, window, file_urls(picture_file(tmp_path, "a.png", 200, 100), picture_file(tmp_path, "b.png", 300, 100)))
    button = chips(window)[0].remove_button
    assert button.accessibleName() == "Remove image 1" and button.toolTip() == "Remove image 1"
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
    assert chip_names(window) == ["Image 1 of 1, 300 × 100"]


def test_a_file_that_is_no_image_is_refused_in_a_line_and_nothing_else_is_lost(opened, qtbot, tmp_path, heard):
    window = opened.window
    window.composer.edit.setPlainText("Keep these words")
    paste(qtbot, window, file_urls(picture_file(tmp_path, "good.png")))
    hostile = tmp_path / "<b>bold<i> & odd.png"
    hostile.write_text("<b>no picture here</b>")
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_declaring(50_000, 50_000))
    assert drag_and_drop(window, window.chat, file_urls(hostile, bomb))
    note = window.composer.images.note
    qtbot.waitUntil(lambda: "bomb.png" in note.text(), timeout=WAIT_MS)  # read once the drop has returned
    lines = note.text().split("\n")
    assert note.textFormat() == Qt.TextFormat.PlainText and len(lines) == 2
    assert "<b>bold<i> & odd.png" in lines[0] and "text" in lines[0]  # the name as written, never markup
    assert "bomb.png" in lines[1] and "50,000" in lines[1]
    assert heard[-1] == note.text()
    assert chip_names(window) == ["Image 1 of 1, 640 × 480"] and window.composer.text() == "Keep these words"


def test_past_the_most_images_a_message_holds_the_rest_are_not_attached_and_said(opened, qtbot, tmp_path):
    window = opened.window
    files = [picture_file(tmp_path, f"{n}.png", 32, 32, n * 20) for n in range(MAX_IMAGES_PER_MESSAGE + 2)]
    paste(qtbot, window, file_urls(*files))
    assert len(chips(window)) == MAX_IMAGES_PER_MESSAGE
    assert window.composer.images.note.text() == (
        f"A message holds at most {MAX_IMAGES_PER_MESSAGE} images: 2 images not attached.")
    assert window.composer.images.chips.horizontalScrollBar().maximum() > 0  # the row scrolls
    QTest.keyClick(window.composer.edit, Qt.Key.Key_Backtab)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
    assert chips(window)[-1].hasFocus() and chips(window)[-1].visibleRegion().boundingRect().width() == CHIP_PX


@pytest.mark.parametrize("width, height", [(2048, 1), (1, 2048), (30, 20)])
def test_an_image_of_any_shape_is_a_chip_of_its_size_and_a_thumbnail_no_larger_than_it(qapp, width, height):
    image = read_image(_png(picture(width, height, 90)))
    for ratio in (1.0, 2.0):
        chip = thumbnail(image, QSize(CHIP_PX, CHIP_PX), ratio, 8, crop=True)  # the middle cut, not the whole scaled up
        assert chip.size() == QSize(CHIP_PX, CHIP_PX) * ratio and chip.deviceIndependentSize().toSize() == QSize(CHIP_PX, CHIP_PX)
        shown = thumbnail(image, THUMBNAIL_BOX_PX, ratio, 10, crop=False).deviceIndependentSize().toSize()
        assert shown.boundedTo(THUMBNAIL_BOX_PX) == shown and shown.boundedTo(QSize(width, height)) == shown
        assert shown.width() >= 1 and shown.height() >= 1


# -- sending and the transcript -----------------------------------------------------------------------


def test_a_message_sent_while_its_images_are_read_waits_for_them(opened, qtbot, tmp_path):
    window = opened.window
    QGuiApplication.clipboard().setMimeData(file_urls(picture_file(tmp_path, "a.png"), picture_file(tmp_path, "b.png")))
    edit_box = window.composer.edit
    edit_box.setFocus()
    edit_box.setPlainText("Both of these")
    QTest.keyClick(edit_box, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    images = window.composer.images
    assert images.reading and images.note.text() == "Reading 2 images…"  # read off the GUI thread
    with qtbot.waitSignal(opened.session.replyFinished, timeout=WAIT_MS):
        QTest.keyClick(edit_box, Qt.Key.Key_Return)  # before they are in: the message waits for them
        assert window.composer.waiting and window.composer.note.text() == "Will send when its images have been read."
    [question, _reply] = opened.session.messages()
    assert question.content == "Both of these" and len(question.images) == 2
    assert not window.composer.waiting and chips(window) == [] and window.composer.text() == ""



def test_sent_images_go_to_the_model_are_stored_and_show_as_thumbnails(opened, qtbot, tmp_path):
    window = opened.window
    paste(qtbot, window, file_urls(picture_file(tmp_path, "a.png"), picture_file(tmp_path, "b.jpg", 800, 600, 90)))
    sent = window.composer.attached()
    send_and_wait(opened, "Compare these")
    [question, _reply] = opened.session.messages()
    assert question.content == "Compare these" and question.images == tuple(image.ref for image in sent)
    assert [image.digest for image in last_question(opened)["images"]] == [image.digest for image in sent]
    assert chips(window) == [] and window.composer.text() == ""
    assert thumbnails(window) == [("Image 1 of 2, 640 × 480", f"hearth:open-image/{question.id}-1"),
                                  ("Image 2 of 2, 800 × 600", f"hearth:open-image/{question.id}-2")]
    window.new_chat()
    paste(qtbot, window, picture(320, 240, 10))
    send_and_wait(opened)  # images alone are a message too
    [alone, _reply] = opened.session.messages()
    assert alone.content == "" and len(alone.images) == 1 and thumbnails(window)[0][0] == "Image 1 of 1, 320 × 240"


def test_a_thumbnail_opens_larger_by_keyboard_and_escape_closes_it(opened, qtbot, tmp_path):
    window = opened.window
    paste(qtbot, window, file_urls(picture_file(tmp_path, "a.png", 1200, 900)))
    send_and_wait(opened, "Look")
    [question, _reply] = opened.session.messages()
    href = f"hearth:open-image/{question.id}-1"
    pane = browser(window.chat)
    pane.setFocus()
    for _ in range(10):
        QTest.keyClick(pane, Qt.Key.Key_Tab)
        if window.chat._link_focus.marked_href() == href:
            break
    assert window.chat._link_focus.marked_href() == href, "Tab reaches the thumbnail"
    QTest.keyClick(pane, Qt.Key.Key_Return)
    dialog = QApplication.activeModalWidget()
    assert isinstance(dialog, ImageViewDialog) and dialog.isVisible()
    assert dialog.accessibleName() == "Image 1 of 1, 1200 × 900" == dialog.windowTitle()
    assert unnamed_widgets(dialog) == []
    shown = dialog.picture.shown_rect()
    assert abs(shown.width() / shown.height() - 1200 / 900) < 0.02  # fitted, not stretched
    qtbot.waitUntil(lambda: dialog.isAncestorOf(QApplication.focusWidget()), timeout=WAIT_MS)  # the keyboard's there
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not shiboken6.isValid(dialog), timeout=WAIT_MS)  # closed, and its pixels freed
    assert QApplication.activeModalWidget() is None and window.chat._link_focus.marked_href() == href
    click_anchor(qtbot, window.chat, href)  # a click opens it too
    dialog = QApplication.activeModalWidget()
    assert isinstance(dialog, ImageViewDialog)
    dialog.reject()


def test_regenerate_and_edit_keep_the_images(opened, qtbot, tmp_path):
    window = opened.window
    paste(qtbot, window, picture(400, 300, 260))
    send_and_wait(opened, "First words")
    [question, _reply] = opened.session.messages()
    regenerate(opened)
    assert [image.ref for image in last_question(opened)["images"]] == list(question.images)
    assert [tip for tip, _href in thumbnails(window)] == ["Image 1 of 1, 400 × 300"]
    edit(opened, question.id, "Other words")
    [edited, _reply] = opened.session.messages()
    assert edited.id != question.id and edited.content == "Other words" and edited.images == question.images
    assert [image.ref for image in last_question(opened)["images"]] == list(question.images)
    assert thumbnails(window) == [("Image 1 of 1, 400 × 300", f"hearth:open-image/{edited.id}-1")]


def test_a_conversation_opened_again_shows_its_thumbnails(opened, qtbot, tmp_path):
    window = opened.window
    paste(qtbot, window, picture(200, 200, 300))
    send_and_wait(opened, "Remember this")
    first = opened.session.conversation_id
    window.new_chat()
    send_and_wait(opened, "Something else")
    assert thumbnails(window) == []
    opened.click_conversation(first)
    assert [tip for tip, _href in thumbnails(window)] == ["Image 1 of 1, 200 × 200"]


# -- a model that reads no images ----------------------------------------------------------------------


def test_a_text_only_model_turns_attach_off_saying_why_and_pasting_says_it_too(qtbot, script, tmp_path, heard):
    script.text_only = {MODEL.name}  # the default Gemma 3 270M, as it is: no projector
    opened = FlowWindow(qtbot, script, tmp_path)
    try:
        window = opened.window
        button = window.composer.images.attach_button
        assert button.accessibleName() == "Attach images"
        assert not button.isEnabled() and button.toolTip() == TEXT_ONLY == button.accessibleDescription()
        window.composer.edit.setPlainText("Hello")
        paste(qtbot, window, picture(100, 100, 0))
        note = window.composer.images.note
        assert chips(window) == [] and note.text() == TEXT_ONLY and note.isVisible() and heard[-1] == TEXT_ONLY
        hint = window.sending.images.drop_hint
        said = len(heard)
        assert drag_and_drop(window, window.chat, file_urls(picture_file(tmp_path, "a.png")), hint)
        assert hint.text() == TEXT_ONLY
        qtbot.waitUntil(lambda: len(heard) > said, timeout=WAIT_MS)  # the drop is read once it has returned
        assert heard[-1] == TEXT_ONLY and chips(window) == [] and window.composer.text() == "Hello"
    finally:
        opened.close()


def test_images_attached_stay_when_the_model_changes_and_send_says_why(opened, qtbot, tmp_path):
    window = opened.window
    button = window.composer.images.attach_button
    assert button.isEnabled() and button.accessibleName() == "Attach images"
    paste(qtbot, window, picture(640, 480, 50))
    window.composer.edit.setPlainText("Describe it")
    opened.script.text_only = {"text-only.gguf"}
    with qtbot.waitSignal(opened.models.modelLoaded, timeout=WAIT_MS):
        opened.models.load(MODEL.with_name("text-only.gguf"))
    assert not button.isEnabled() and "cannot read images" in button.toolTip()
    assert chip_names(window) == ["Image 1 of 1, 640 × 480"]  # kept: the model may change again
    QTest.keyClick(window.composer.edit, Qt.Key.Key_Return)
    note = window.composer.note
    assert note.isVisible() and note.text() == f"Not sent: {TEXT_ONLY}, or remove the images to send the text alone."
    assert opened.store.list_conversations() == [] and window.composer.text() == "Describe it"
    assert len(chips(window)) == 1
    with qtbot.waitSignal(opened.models.modelLoaded, timeout=WAIT_MS):
        opened.models.load(MODEL)
    assert button.isEnabled()
    send_and_wait(opened, "Describe it")
    assert len(opened.session.messages()[0].images) == 1 and chips(window) == []


# -- how it looks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_chips_and_thumbnails_in_light_and_dark(opened, qapp, qtbot, tmp_path, dark):
    palette = qapp.palette()
    qapp.setPalette(appearance.dark_palette() if dark else appearance.light_palette())
    try:
        window = opened.window
        paste(qtbot, window, file_urls(picture_file(tmp_path, "wide.png", 1280, 720, 200),
                                picture_file(tmp_path, "tall.jpg", 600, 900, 20),
                                picture_file(tmp_path, "small.png", 90, 60, 120)))
        window.composer.edit.setPlainText("What do these three have in common?")
        qtbot.wait(1)
        shot = window.grab()
        shot.save(str(tmp_path / f"composer-{'dark' if dark else 'light'}.png"))
        for chip in chips(window):  # each chip shows its picture: the sun's yellow is in every one
            drawn = chip.grab().toImage()
            colours = {drawn.pixelColor(x, y).name() for x in range(4, CHIP_PX - 4, 6) for y in range(4, CHIP_PX - 4, 6)}
            assert len(colours) > 5, chip.accessibleName()
        send_and_wait(opened, "What do these three have in common?")
        qtbot.wait(1)
        window.grab().save(str(tmp_path / f"transcript-{'dark' if dark else 'light'}.png"))
        pane = browser(window.chat)
        rendered = pane.viewport().grab().toImage()
        ratio = rendered.devicePixelRatio()
        cursor = QTextCursor(pane.document())
        cursor.setPosition(first_image_position(pane) + 1)  # just after it: its right edge
        edge = pane.cursorRect(cursor)
        inside = rendered.pixelColor(int((edge.left() - 40) * ratio), int(edge.center().y() * ratio))
        assert inside != pane.palette().color(pane.backgroundRole()), "the thumbnail is drawn in the bubble"
    finally:
        qapp.setPalette(palette)


def test_a_photo_larger_than_the_screen_is_scaled_from_a_screen_sized_copy(qapp):
    """The image view scales its picture again at each size a resize passes through, on the GUI
    thread alone: it starts from a copy no larger than the screen shows, in the photo's shape;
    a smaller picture is its own copy."""
    screen = QGuiApplication.primaryScreen()
    limit = screen.availableSize() * screen.devicePixelRatio()
    photo = QImage(limit.width() * 4, limit.height() * 3, QImage.Format.Format_RGB32)
    photo.fill(QColor(120, 80, 40))
    copy = screen_sized(photo)
    assert copy.width() <= limit.width() and copy.height() <= limit.height()
    assert abs(copy.width() / copy.height() - photo.width() / photo.height()) < 0.01
    small = photo.copy(0, 0, limit.width() // 2, limit.height() // 2)
    assert screen_sized(small) is small
