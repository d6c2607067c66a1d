"""The settings under Settings → Documents' collections: the embedding model, how many sources a
reply is given, and how a reply gets them: each question searched and its sources put before it
(every model reads them), or the model searching itself with a search_documents tool (for
models that call tools; owners/documents_tool.py). Each change applies at once, kept in the
settings file (DocumentSettings) through the library."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from ...common.text import printable
from ...documents.limits import MAX_TOP
from ...owners.documents import DocumentLibrary
from ..widgets.buttons import described_button
from ..widgets.colors import Tone, set_tone
from ..widgets.tooltips import plain_tooltip

DEFAULT_MODEL = "Default (all-MiniLM-L6-v2)"
MODEL_HINT = ("Reads your files and your questions into meanings. A new model applies at once, and embeds each "
              "collection again at its next update.")
SOURCES_HINT = "The passages of your documents a reply is given with the question."
AS_TOOL = "The model searches them itself, &with a tool it calls (for models that call tools)"
AS_TOOL_HINT = ("Off: each question is searched and its sources are put before it, which every model reads. On: the "
                "model is given a search_documents tool and decides when and what to search, as Jan does; only "
                "models that call tools can use it.")


class DocumentsOptions(QWidget):
    """The embedding model, sources per reply and whether the model searches, over `library`."""

    def __init__(self, library: DocumentLibrary, parent: QWidget | None = None):
        super().__init__(parent)
        self.library = library
        self.file_dialog: QFileDialog | None = None
        self.model_field = QLineEdit()
        self.model_field.setReadOnly(True)
        self.model_field.setAccessibleName("Embedding model")
        self.model_field.setAccessibleDescription(MODEL_HINT)
        model_caption = QLabel("E&mbedding model:")
        model_caption.setBuddy(self.model_field)
        self.choose_model_button = described_button("C&hoose…", "Choose an embedding model's GGUF file", self)
        self.default_model_button = described_button("Use def&ault", f"Use the model Hearth comes with: {DEFAULT_MODEL}", self)
        model_hint = self._hint(MODEL_HINT)
        self.sources = QSpinBox()
        self.sources.setRange(1, MAX_TOP)
        self.sources.setValue(library.settings.sources_per_reply)
        self.sources.setKeyboardTracking(False)  # "12" must not apply 1 on the way
        self.sources.setAccessibleName("Sources per reply")
        self.sources.setAccessibleDescription(SOURCES_HINT)
        sources_caption = QLabel("Sources &per reply:")
        sources_caption.setBuddy(self.sources)
        self.as_tool = QCheckBox(AS_TOOL)
        self.as_tool.setChecked(library.settings.as_tool)
        self.as_tool.setAccessibleDescription(AS_TOOL_HINT)
        self.as_tool.setToolTip(AS_TOOL_HINT)

        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_field, 1)
        model_row.addWidget(self.choose_model_button)
        model_row.addWidget(self.default_model_button)
        layout.addWidget(model_caption, 0, 0)
        layout.addLayout(model_row, 0, 1)
        layout.addWidget(model_hint, 1, 1)
        sources_row = QHBoxLayout()
        sources_row.addWidget(self.sources)
        sources_row.addWidget(self._hint(SOURCES_HINT), 1)
        layout.addWidget(sources_caption, 2, 0)
        layout.addLayout(sources_row, 2, 1)
        layout.addWidget(self.as_tool, 3, 1)
        layout.setColumnStretch(1, 1)

        self.choose_model_button.clicked.connect(self._choose_model)
        self.default_model_button.clicked.connect(lambda: self._set_model(None))
        self.sources.valueChanged.connect(lambda number: setattr(library.settings, "sources_per_reply", number))
        self.as_tool.toggled.connect(lambda on: setattr(library.settings, "as_tool", on))
        self._show_model()

    @staticmethod
    def _hint(text: str) -> QLabel:
        hint = QLabel(text)
        hint.setWordWrap(True)
        set_tone(hint, Tone.MUTED)
        return hint

    def _show_model(self) -> None:
        model = self.library.settings.embedding_model
        self.model_field.setText(DEFAULT_MODEL if model is None else printable(str(model), None))
        self.model_field.setCursorPosition(0)
        self.model_field.setToolTip(plain_tooltip(str(model)) if model is not None else "")
        self.default_model_button.setEnabled(model is not None)

    def _choose_model(self) -> None:
        dialog = QFileDialog(self, "Choose an embedding model")
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilters(["GGUF models (*.gguf)", "All files (*)"])
        dialog.fileSelected.connect(lambda path: self._set_model(Path(path)) if path else None)
        dialog.finished.connect(lambda _result: setattr(self, "file_dialog", None))
        self.file_dialog = dialog
        dialog.open()

    def _set_model(self, model: Path | None) -> None:
        self.library.set_embedding_model(model)
        self._show_model()
