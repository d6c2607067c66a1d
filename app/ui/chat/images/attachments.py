"""The images attached to the message being written: chosen with the Attach button, pasted (an
image on the clipboard, or image files copied in a file manager), or dropped; shown as chips
above the message box (chips.py) until the message is sent or they are removed.

Every file and every pasted picture goes through intake (app/images/intake.py), which checks it
and keeps a still, upright copy within the size limits: off the GUI thread, since a large photo
takes it most of a second (the line above the chips says "Reading…" meanwhile, and a message sent
then waits for them: ui/window/sending.py). What is attached at once is read in turn, so the
chips keep the order it came in. One that is refused is said in that line, in intake's words,
which name the file (plain text: a name can hold anything); nothing else is lost: the text being
written and the other images stay. A message holds at most MAX_IMAGES_PER_MESSAGE; those past it
are not attached, and the line says how many.

While the loaded model reads no images the Attach button is off and says why, and an image
pasted or dropped is not attached: the line says the same. Images already attached stay (the
model may change again); sending them is refused by the window, saying so (ui/window/sending.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QFileDialog, QLabel, QVBoxLayout, QWidget

from ....common.text import printable
from ....images.image import Image, ImageError
from ....images.intake import read_image, read_image_file
from ....images.limits import MAX_IMAGES_PER_MESSAGE
from ...dialogs.image_view import ImageViewDialog
from ...widgets.announce import announce
from ...widgets.background import run_in_background
from ...widgets.colors import Tone, set_tone
from ...widgets.thumbnails import image_words
from ...widgets.tick_menu import plural
from .attach_button import AttachButton
from .chips import ImageChips

# What a drag or a paste of files must all be for the message box to take it (a folder, or a
# document among them, is for the documents); intake still reads each by its bytes, not its name.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".jpe", ".jfif", ".webp", ".gif", ".bmp"})
FILE_FILTER = "Images (*.png *.jpg *.jpeg *.webp *.gif *.bmp);;All files (*)"
NAME_CHARS = 60

Reading = tuple[str, Callable[[], Image]]  # a file's name ("" for a picture), and how intake reads it


def image_files(mime: QMimeData) -> list[Path]:
    """The local files a drag or a paste carries when every one of them is named as an image;
    else none."""
    if not mime.hasUrls():
        return []
    urls = mime.urls()
    if not urls or not all(url.isLocalFile() for url in urls):
        return []
    paths = [Path(url.toLocalFile()) for url in urls]
    return paths if all(path.suffix.lower() in IMAGE_SUFFIXES for path in paths) else []


def carries_images(mime: QMimeData) -> bool:
    """A paste or a drag that is images: image files, or a picture with no text beside it (a
    copied text range in some programs carries a picture of itself too: the text is meant)."""
    return bool(image_files(mime)) or (mime.hasImage() and not mime.hasText())


class ImageAttachments(QWidget):
    """The message's images, the line that says what was refused, and the Attach button (which
    the composer places beside the message box).

    `home` is where the keyboard goes when the last chip is removed (the message box).

    Signals:
        changed(): images were attached or removed, or reading began or ended.
    """

    changed = Signal()

    def __init__(self, home: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._home = home
        self._images: list[Image] = []
        self._refusal: str | None = None
        self._batches: list[list[Reading]] = []  # to read, in the order they came; the first is being read
        self.note = QLabel()  # what was refused, and why
        self.note.setTextFormat(Qt.TextFormat.PlainText)  # it names files
        self.note.setWordWrap(True)
        self.note.hide()
        set_tone(self.note, Tone.ERROR)
        self.chips = ImageChips()
        self.attach_button = AttachButton()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.note)
        layout.addWidget(self.chips)
        self.attach_button.clicked.connect(self.choose_files)
        self.chips.removeRequested.connect(self.remove)
        self.chips.openRequested.connect(self.show_larger)

    def images(self) -> tuple[Image, ...]:
        return tuple(self._images)

    @property
    def reading(self) -> bool:
        """Images are being read, to be attached once they are."""
        return bool(self._batches)

    def set_refusal(self, reason: str | None) -> None:
        """The loaded model reads no images, and why (None: it reads them, or none is loaded)."""
        self._refusal = reason
        self.attach_button.set_refusal(reason)

    def choose_files(self) -> None:
        """The Attach button: image files chosen in a file dialog."""
        names, _chosen_filter = QFileDialog.getOpenFileNames(self.window(), "Attach images", "", FILE_FILTER)
        if names:
            self.attach_files([Path(name) for name in names])

    def attach_files(self, paths: Sequence[Path]) -> None:
        """Read each file through intake and attach those it accepts."""
        if not self._refused():
            self._read([(path.name, lambda path=path: read_image_file(path)) for path in paths])

    def attach_mime(self, mime: QMimeData) -> bool:
        """A paste or a drop: attach the images it carries (or say why they cannot be); False
        when it carries none, so that its text is pasted as usual."""
        if not carries_images(mime):
            return False
        if self._refused():
            return True
        paths = image_files(mime)
        if paths:
            self.attach_files(paths)
        else:
            self.attach_picture(picture_of(mime))
        return True

    def attach_picture(self, picture: QImage) -> None:
        """A picture from the clipboard or a drag (not a file): read through intake as a PNG."""
        if not self._refused():
            kept = picture.copy()  # the worker's own, whatever becomes of the clipboard's
            self._read([("", lambda: read_image(_png_bytes(kept)))])

    def remove(self, index: int) -> None:
        """Take the image at this index off the message; the keyboard goes to the chip that takes
        its place, else the one before, else the message box."""
        if not 0 <= index < len(self._images):
            return
        had_focus = any(chip.hasFocus() for chip in self.chips.chips())
        del self._images[index]
        self._show()
        chips = self.chips.chips()
        if had_focus:
            (chips[min(index, len(chips) - 1)] if chips else self._home).setFocus(Qt.FocusReason.OtherFocusReason)
        announce(self._home, f"Image {index + 1} removed. {self._count_words()}")

    def clear(self) -> None:
        """The message was sent: no images, nothing refused."""
        self._images.clear()
        self._say("")
        self._show()

    def show_larger(self, index: int) -> None:
        if 0 <= index < len(self._images):
            image = self._images[index]
            ImageViewDialog.open_for(image, image_words(index + 1, len(self._images), image), self.window())

    # -- inside ---------------------------------------------------------------------------------

    def _refused(self) -> bool:
        """Say why images are not taken now, if they are not."""
        if self._refusal is not None:
            self._say(self._refusal)
        return self._refusal is not None

    def _read(self, batch: list[Reading]) -> None:
        """Read `batch` after those before it."""
        self._batches.append(batch)
        if len(self._batches) == 1:
            self._read_first()
        self._say_reading()
        self.changed.emit()

    def _read_first(self) -> None:
        batch = self._batches[0]
        run_in_background(lambda: [_read_one(name, read) for name, read in batch], self._first_read, self)

    def _first_read(self, results: list[Image | str] | None, error: Exception | None) -> None:
        batch = self._batches.pop(0)
        if error is not None:  # not intake's refusal (that is a result): said all the same, nothing lost
            results = [f"{plural(len(batch), 'image')} could not be read: {error}"]
        problems = [result for result in results if isinstance(result, str)]
        self._add([result for result in results if isinstance(result, Image)], problems)
        if self._batches:
            self._read_first()
            if not problems:  # they stay said until the rest is read
                self._say_reading()
        self.changed.emit()

    def _add(self, images: list[Image], problems: list[str]) -> None:
        room = MAX_IMAGES_PER_MESSAGE - len(self._images)
        if len(images) > room:
            problems.append(f"A message holds at most {MAX_IMAGES_PER_MESSAGE} images: "
                            f"{plural(len(images) - max(room, 0), 'image')} not attached.")
            images = images[:max(room, 0)]
        self._images.extend(images)
        self._say("\n".join(problems))
        if images:
            self._show()
            announce(self._home, f"{plural(len(images), 'image')} attached. {self._count_words()}")

    def _count_words(self) -> str:
        count = len(self._images)
        return f"The message has {plural(count, 'image')}." if count else "The message has no images."

    def _say_reading(self) -> None:
        self._say(f"Reading {plural(sum(len(batch) for batch in self._batches), 'image')}…", Tone.MUTED)

    def _say(self, text: str, tone: Tone = Tone.ERROR) -> None:
        """Say `text` in the line above the chips (a problem, urgently; "Reading…" only shown)."""
        set_tone(self.note, tone)
        self.note.setText(text)
        self.note.setVisible(bool(text))
        if text and tone is Tone.ERROR:
            announce(self._home, text, urgent=True)

    def _show(self) -> None:
        self.chips.set_images(tuple(self._images))
        self.changed.emit()


def picture_of(mime: QMimeData) -> QImage:
    """The picture a paste or a drag carries (a null image when it carries none)."""
    data = mime.imageData()
    if isinstance(data, QPixmap):
        return data.toImage()
    return data if isinstance(data, QImage) else QImage()


def _read_one(name: str, read: Callable[[], Image]) -> Image | str:
    """The image, or why intake refused it: in its words, which name the file; else with its
    name (made printable) before them."""
    try:
        return read()
    except ImageError as exc:
        why, shown = str(exc), printable(name, NAME_CHARS)
        return why if shown in why else f"{shown}: {why}"


def _png_bytes(picture: QImage) -> bytes:
    """A picture from the clipboard as PNG bytes, for intake to read like any file."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    picture.save(buffer, "PNG")
    buffer.close()
    return bytes(data.data())
