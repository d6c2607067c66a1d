"""The Model section's Projector row: which projector (an mmproj GGUF) lets the loaded model read
images, and the user's choice of another.

A vision model is its GGUF plus a projector, paired by library/projectors.py's `projector_for`:
the one the user chose (the model's `mmproj` setting) wins, else the one beside the model file
that fits it, else none. The row says which that is ("mmproj-….gguf (beside the model)", "….gguf
(chosen)", or "None: this model reads no images"), its full path in the tooltip. "Choose…"
opens a file chooser on the model's folder; the file is checked at once, by the same function
the load uses, so one that is not a projector, or not this model's, is explained under the row
in ImageError's words and not kept. "Use the one beside the model" forgets the choice. A choice
is a load option like the KV cache type: the panel hands it to the session, which keeps it per
model and offers a reload.

A server's model reads images with the server's own projector: the panel hides the row for one.
Names come from the disk: they are shown as plain text, and in tooltips escaped.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from ...common.text import printable
from ...engine.gguf.modelfile import ModelFileError
from ...images.image import ImageError
from ...library.projectors import projector_for
from ..widgets.colors import Tone, set_tone
from ..widgets.tooltips import plain_tooltip

PROJECTOR_TIP = ("The projector (an mmproj GGUF file) turns an image into something the model reads; a model "
                 "reads images only with a projector made for it. Automatic: the one beside the model file "
                 "that fits it. Takes effect when the model is reloaded.")
CHOOSE_TIP = "Choose the projector file for this model; it is checked before it is kept"
AUTOMATIC_TEXT = "Use the one beside the model"
AUTOMATIC_TIP = "Forget the chosen projector: load the one found beside the model file, if one fits it"
NO_MODEL_TEXT = "Automatic"
NO_PROJECTOR_TEXT = "None: this model reads no images"
NO_PROJECTOR_TIP = ("No projector that fits this model is beside its file, so it reads no images. Choose its "
                    "projector (mmproj file) to let it read them.")
FILE_FILTER = "GGUF files (*.gguf)"


class ProjectorRow(QObject):
    """The Projector row's widgets (`label`, `name` beside it and `controls` under it, which the
    Model box lays out) and the file chooser (`dialog` while it is open).

    Signals:
        chosen(object): the user chose a projector that fits the model (its path, a str), or
            went back to the one beside the model (None).
    """

    chosen = Signal(object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._model: Path | None = None
        self._shown_for: tuple[Path | None, str | None] | None = None  # what `name` was worked out for
        self.dialog: QFileDialog | None = None

        self.label = QLabel("Projector")
        self.label.setToolTip(PROJECTOR_TIP)
        self.name = QLabel()
        self.name.setTextFormat(Qt.TextFormat.PlainText)  # a file's name: foreign text
        self.name.setWordWrap(True)
        # A name with no place to wrap is clipped (the tooltip has it whole) rather than widening the panel.
        self.name.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.choose_button = QPushButton("Choose…")
        self.choose_button.setAccessibleName("Choose projector")
        self.choose_button.setToolTip(CHOOSE_TIP)
        self.automatic_button = QPushButton(AUTOMATIC_TEXT)
        self.automatic_button.setToolTip(AUTOMATIC_TIP)
        self.automatic_button.setAccessibleDescription(AUTOMATIC_TIP)
        self.automatic_button.hide()
        self.problem = QLabel()
        self.problem.setTextFormat(Qt.TextFormat.PlainText)  # file names inside
        self.problem.setWordWrap(True)
        self.problem.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # as the name
        set_tone(self.problem, Tone.ERROR)
        self.problem.hide()

        self.controls = QWidget()  # under the name: the buttons, and why a choice is refused
        column = QVBoxLayout(self.controls)
        column.setContentsMargins(0, 0, 0, 0)
        buttons = QHBoxLayout()
        buttons.addWidget(self.choose_button)
        buttons.addStretch(1)
        column.addLayout(buttons)
        column.addWidget(self.automatic_button, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(self.problem)

        self.choose_button.clicked.connect(lambda _checked=False: self.choose())
        self.automatic_button.clicked.connect(lambda _checked=False: self._go_automatic())

    def set_shown(self, shown: bool) -> None:
        """Show the row (a local model, or none yet) or hide it (a server's model)."""
        for widget in (self.label, self.name, self.controls):
            widget.setVisible(shown)

    def show_for(self, model: Path | None, choice: str | None, again: bool = False) -> None:
        """Say which projector the model file at `model` (None: no model) loads with, given the
        user's `choice` (None: the one beside it). The headers are read again only when either
        changed, or when `again` (a model just loaded: its folder may have changed)."""
        self._model = model
        if (model, choice) == self._shown_for and not again:
            return
        self._shown_for = (model, choice)
        text, tip, problem = describe(model, choice)
        self.name.setText(text)
        self.name.setToolTip(plain_tooltip(tip) if tip else "")
        self.name.setAccessibleDescription(tip)
        self.choose_button.setEnabled(model is not None)
        self.automatic_button.setVisible(model is not None and choice is not None)
        self._show_problem(problem)

    def choose(self) -> None:
        """Choose…: a file chooser on the model's folder, for GGUF files; the file it gives is
        checked before it is kept (`_check`)."""
        if self._model is None:
            return
        dialog = QFileDialog(self.choose_button.window(), "Choose the projector (mmproj file)", str(self._model.parent))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter(FILE_FILTER)
        dialog.fileSelected.connect(self._check)
        dialog.finished.connect(lambda _result: setattr(self, "dialog", None))
        self.dialog = dialog
        dialog.open()

    def _check(self, path: str) -> None:
        """A file the user chose: kept (`chosen`) when it is a projector that fits the model;
        otherwise why not, and the projector in use stays."""
        if self._model is None:
            return
        try:
            projector_for(self._model, path)
        except (ImageError, ModelFileError) as exc:
            self._show_problem(f"{exc} Not applied.")
            return
        self._show_problem(None)
        self.chosen.emit(path)

    def _go_automatic(self) -> None:
        self._show_problem(None)
        self.chosen.emit(None)

    def _show_problem(self, text: str | None) -> None:
        self.problem.setText(f"⚠ {text}" if text else "")
        self.problem.setVisible(text is not None)
        said = f"Projector in use: {self.name.text()}."
        self.choose_button.setAccessibleDescription(f"{said} {text}" if text else said)


def describe(model: Path | None, choice: str | None) -> tuple[str, str, str | None]:
    """What the row says for the model file at `model` and the user's `choice`: the projector's
    name and how it was found, the tooltip (its full path), and why it cannot be used (None: it
    can, or there is none)."""
    if model is None:
        return NO_MODEL_TEXT, "", None
    try:
        found = projector_for(model, choice)
    except ImageError as exc:  # the load will fail with these words: said now, before a reload
        if choice is not None:
            return f"{printable(Path(choice).name)} (chosen)", choice, str(exc)
        return "None: the one beside the model can't be used", "", str(exc)
    except ModelFileError as exc:  # the model's own file (gone since it loaded, say)
        return "Can't tell: the model file can't be read", str(exc), None
    if found is None:
        return NO_PROJECTOR_TEXT, NO_PROJECTOR_TIP, None
    how = "chosen" if choice is not None else "beside the model"
    return f"{printable(found.name)} ({how})", str(found), None
