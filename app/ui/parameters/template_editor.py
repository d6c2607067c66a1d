"""Editing a model's chat template, with the exact prompt it produces shown as you type.

A chat template decides the precise text a model sees, and one wrong newline or missing
special token quietly makes replies worse. So the preview renders a sample conversation
through the same sandboxed `ChatTemplate` the engine uses, with the model's own BOS/EOS
texts, and marks special tokens and line breaks so they can be seen.
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from ...engine.gguf.modelfile import ModelInfo
from ...engine.templates.chat_template import ChatTemplate, TemplateError, template_for
from ..widgets.colors import Tone, muted_color, set_tone

PREVIEW_DELAY_MS = 200
SAMPLE_CONVERSATION = (
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello! Who are you?"},
    {"role": "assistant", "content": "I'm an assistant running on your computer."},
    {"role": "user", "content": "What is 2 + 2?"},
)
TOKEN_STYLE = "background-color: #fff3c4; color: #7a4f00;"
NEWLINE_MARK = "↵"


class TemplateEditor(QDialog):
    """A dialog for one model's template: the source, a live preview, Reset and Save.

    Signals:
        templateOverrideChanged(object): on Save; the edited template (str), or None when
            it is the model's own (or fallback) template again, so the model's is used.
    """

    templateOverrideChanged = Signal(object)

    def __init__(self, info: ModelInfo, override: str | None = None, parent=None):
        super().__init__(parent)
        self.setWindowTitle(f"Chat template · {info.name}")
        self._info = info
        default = template_for(info)
        self._default_source = default.source
        self._default_label = ("the model's own template" if default.name == "model"
                               else f"Hearth's “{default.name.removeprefix('fallback:')}” template "
                                    "(the file has none of its own)")
        self._bos = info.bos.text if info.bos else ""
        self._eos = info.eos.text if info.eos else ""
        self._rendered: str | None = None

        mono = QFontDatabase.systemFont(QFontDatabase.FixedFont)
        self.source_edit = QPlainTextEdit()
        self.source_edit.setFont(mono)
        self.source_edit.setLineWrapMode(QPlainTextEdit.NoWrap)
        self.source_edit.setPlainText(override or self._default_source)
        self.source_edit.setAccessibleDescription("The chat template's Jinja source; the preview follows as you type")
        self.preview = QTextEdit()
        self.preview.setReadOnly(True)
        self.preview.setFont(mono)
        self.preview.setToolTip(
            f"The exact text the model reads for a short sample conversation. Special tokens are "
            f"highlighted and {NEWLINE_MARK} marks each line break."
        )
        self.preview.setAccessibleDescription(self.preview.toolTip())

        self.origin_label = QLabel()
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.PlainText)  # errors quote the template, which may hold HTML
        self.error_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        set_tone(self.error_label, Tone.ERROR)
        self.error_label.hide()

        editor_box = _titled("&Template (Jinja)", self.source_edit)
        preview_box = _titled("&Prompt for a sample conversation", self.preview)
        splitter = QSplitter(Qt.Horizontal)
        splitter.addWidget(editor_box)
        splitter.addWidget(preview_box)
        splitter.setChildrenCollapsible(False)

        self.reset_button = QPushButton("Reset to the model's template")
        self.reset_button.setToolTip("Put back " + self._default_label)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Save | QDialogButtonBox.Cancel)
        self.buttons.addButton(self.reset_button, QDialogButtonBox.ResetRole)
        self.save_button = self.buttons.button(QDialogButtonBox.Save)

        layout = QVBoxLayout(self)
        layout.addWidget(self.origin_label)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self.resize(1000, 600)

        self._debounce = QTimer(self, singleShot=True, interval=PREVIEW_DELAY_MS)
        self._debounce.timeout.connect(self._render)
        self.source_edit.textChanged.connect(self._debounce.start)
        self.source_edit.textChanged.connect(self._show_origin)
        self.reset_button.clicked.connect(self.reset)
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        self._show_origin()
        self._render()

    def source(self) -> str:
        return self.source_edit.toPlainText()

    def rendered_prompt(self) -> str | None:
        """The prompt the current template gives for the sample, or None while it fails."""
        return self._rendered

    def reset(self) -> None:
        self.source_edit.setPlainText(self._default_source)

    def _is_default(self) -> bool:
        return not self.source().strip() or self.source() == self._default_source

    def _show_origin(self) -> None:
        self.origin_label.setText("Using " + (self._default_label if self._is_default() else "your edited template"))
        self.reset_button.setEnabled(self.source() != self._default_source)

    def _render(self) -> None:
        try:
            prompt = ChatTemplate(self.source(), self._bos, self._eos, name="custom").render(list(SAMPLE_CONVERSATION))
        except TemplateError as exc:
            self._rendered = None
            self.error_label.setText(str(exc))
            self.error_label.show()
            self.preview.setEnabled(False)  # greyed: it shows the last template that worked
            self.save_button.setEnabled(False)
            return
        self._rendered = prompt
        self.error_label.hide()
        self.preview.setEnabled(True)
        self.save_button.setEnabled(True)
        self.preview.setHtml(self._highlighted(prompt))

    def _highlighted(self, prompt: str) -> str:
        """HTML for the prompt with special tokens marked and line breaks made visible."""
        tokens = {self._bos, self._eos, *self._info.special_tokens}
        present = sorted((t for t in tokens if t and t in prompt), key=len, reverse=True)
        pieces = re.split("(" + "|".join(map(re.escape, present)) + ")", prompt) if present else [prompt]
        body = []
        for index, piece in enumerate(pieces):
            if index % 2:  # re.split puts the matched separators at odd positions
                body.append(f"<span style='{TOKEN_STYLE}'>{html.escape(piece)}</span>")
            else:
                mark = f"<span style='color: {muted_color(self.palette()).name()}'>{NEWLINE_MARK}</span>\n"
                body.append(html.escape(piece).replace("\n", mark))
        return "<pre style='white-space: pre-wrap'>" + "".join(body) + "</pre>"

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._render()  # the line-break marks take the new palette's muted colour

    def _save(self) -> None:
        self.templateOverrideChanged.emit(None if self._is_default() else self.source())
        self.accept()


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    label = QLabel(title)
    label.setBuddy(widget)  # the title names the field for screen readers; Alt+letter focuses it
    widget.setAccessibleName(title.replace("&", ""))
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box
