"""A reply's source, opened from its citation: the passage the reply read, and where it is.

For a PDF the page itself is drawn (documents/readers/pdf.render_page, on a worker thread) so a
citation opens the file at its page inside Hearth, whatever PDF viewer the system has: a file
URL's "#page=3" is dropped by xdg-open and most viewers. For every format the passage as it was
indexed is shown as plain text (it is the text alternative of the page image too), and "Open
file" and "Show in folder" hand the file to the system. Only a document is handed over
(readers.OPENED_BY_THE_SYSTEM: never code or a script, which a system may run), and only one
that is there: the path comes from the conversation's record.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QTimer, QUrl
from PySide6.QtGui import QDesktopServices, QImage, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ...common.text import printable, shorten
from ...documents.readers import OPENED_BY_THE_SYSTEM
from ...store import Source
from ..widgets.announce import announce
from ..widgets.background import run_in_background
from ..widgets.escape import claims_escape
from ..widgets.foreign_text import inert_lines

PAGE_WIDTH_PX = 760  # a page drawn this wide (scaled by the screen's pixel ratio)
PASSAGE_CHARS = 20_000
NOT_COLLECTED = ("This file is not in any of your collections now (the conversation was imported, or the collection "
                 "removed), so Hearth does not open it. The passage below is as the reply read it.")


class SourceView(QDialog):
    """Source `number` of a reply: its page (a PDF's) or passage, Open file, Show in folder."""

    def __init__(self, source: Source, number: int, parent: QWidget | None = None, in_collections: bool = True) -> None:
        """`in_collections`: the file is under a collection the user has now; else (a record
        imported, a collection removed) only the passage is shown: nothing is read or handed over."""
        super().__init__(parent)
        self.source = source
        self._in_collections = in_collections
        path = Path(source.path)
        name = shorten(path.name, 60)
        self.setWindowTitle(f"Source [{number}] · {name}")
        self.setAccessibleName(f"Source {number}: {name}" + (f", page {source.page}" if source.page else ""))
        layout = QVBoxLayout(self)

        self.where = QLabel(printable(source.path, limit=300) + (f"\nPage {source.page}" if source.page else ""))
        self.where.setTextFormat(Qt.TextFormat.PlainText)
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.where.setWordWrap(True)
        layout.addWidget(self.where)
        self.problem = QLabel()
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.problem.setWordWrap(True)
        self.problem.hide()
        layout.addWidget(self.problem)

        self.page = QLabel("Drawing the page…" if self._draws_page() else "")
        self.page.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.page.setAccessibleName(f"Page {source.page} of {name}")
        self.page.setAccessibleDescription("The page the passage below comes from, as the PDF shows it.")
        self.page_area = QScrollArea()
        self.page_area.setWidget(self.page)
        self.page_area.setWidgetResizable(True)
        self.page_area.setMinimumHeight(420)
        self.page_area.setVisible(self._draws_page())
        layout.addWidget(self.page_area, 3)

        caption = QLabel("The passage the reply read:")
        self.passage = QPlainTextEdit()
        self.passage.setReadOnly(True)
        heading = f"{source.heading}\n\n" if source.heading else ""
        self.passage.setPlainText(inert_lines(heading + source.text, PASSAGE_CHARS))
        self.passage.setAccessibleName("The passage the reply read")
        caption.setBuddy(self.passage)
        layout.addWidget(caption)
        layout.addWidget(self.passage, 1)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.open_button = QPushButton("&Open file")
        self.folder_button = QPushButton("Show in &folder")
        for button in (self.open_button, self.folder_button):
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button.clicked.connect(lambda: self._hand_over(path))
        self.folder_button.clicked.connect(lambda: self._hand_over(path.parent))
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(820, 860 if self._draws_page() else 480)
        self._check_file(path)
        if self._draws_page() and self._in_collections:
            self._draw(path)

    def event(self, event: QEvent) -> bool:
        """Esc closes it (the window's Stop would take it first: widgets/escape.py)."""
        return claims_escape(event) or super().event(event)

    def _draws_page(self) -> bool:
        return self.source.page is not None and Path(self.source.path).suffix.lower() == ".pdf"

    def _check_file(self, path: Path) -> None:
        if not self._in_collections:
            self._say(NOT_COLLECTED)
            self.open_button.setEnabled(False)
            self.folder_button.setEnabled(False)
            self.page_area.hide()
        elif not path.is_file():
            self._say("The file is no longer there (moved or deleted). The passage below is as the reply read it.")
            self.open_button.setEnabled(False)
            self.folder_button.setEnabled(path.parent.is_dir())
            self.page_area.hide()
        elif path.suffix.lower() not in OPENED_BY_THE_SYSTEM:
            self.open_button.setEnabled(False)
            self.open_button.setToolTip("Code and scripts are not handed to the system, which might run them: "
                                        "use Show in folder")

    def _draw(self, path: Path) -> None:
        from ...documents.readers.pdf import render_page

        ratio = self.devicePixelRatioF()
        run_in_background(lambda: render_page(path, self.source.page, int(PAGE_WIDTH_PX * ratio)), self._drawn, self)

    def _drawn(self, image, error: Exception | None) -> None:
        if error is not None or image is None:
            self.page_area.hide()
            self._say(f"The page could not be drawn: the file {error}." if error else "The page could not be drawn.")
            return
        drawn = QImage(image.pixels, image.width, image.height, image.stride, QImage.Format.Format_RGB32).copy()
        pixmap = QPixmap.fromImage(drawn)
        pixmap.setDevicePixelRatio(self.devicePixelRatioF())
        self.page.setPixmap(pixmap)
        self.where.setText(self.where.text().replace(f"Page {self.source.page}", f"Page {self.source.page} of {image.pages}"))

    def _say(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.show()
        QTimer.singleShot(0, self, lambda: announce(self, text))  # once shown: said before, a screen reader may drop it

    def _hand_over(self, path: Path) -> None:
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self._say("No program on this system opened it.")
