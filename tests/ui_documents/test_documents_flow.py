"""Chat with documents in the window, the whole way a user goes (#28): Settings → Documents, add
a folder and watch its progress to the end; back in the window, tick the collection on the
documents button; ask; the reply (the real Gemma 3 270M through llama.cpp) comes with its
sources under it; Tab to a citation and press Enter: the source view shows the passage. In light
and in dark, with a screenshot of each, every control named.

Real parts throughout: the window and its owners as the application assembles them, the
embedding model (all-MiniLM-L6-v2 in llama.cpp), the index file, the store, the chat model."""

from __future__ import annotations

from pathlib import Path

import pytest
import shiboken6
from documents_page_helpers import add_folder
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support.documents_window import WAIT_MS, window_with_documents
from support.menus import in_menu
from support.model_files.embedding_model import ensure_minilm
from support.widget_walk import unnamed_widgets

from app.engine.sampling import SamplingParams
from app.owners.settings import Appearance
from app.ui.chat.documents.sources_block import source_href
from app.ui.window import appearance

GARDEN = {
    "tomatoes.md": "# Tomatoes\n\nWater tomatoes in the morning, deeply, twice a week. Mulch keeps the soil moist.\n",
    "roses.txt": "Prune roses in late winter, just above an outward-facing bud, with clean secateurs.\n",
    "bread.txt": "Knead the dough for ten minutes, then let it rise for an hour in a warm place.\n",
}


@pytest.fixture
def opened(qtbot, tmp_path, gemma_path):
    from app.engine.opening import open_embedder

    minilm = ensure_minilm().gguf
    with window_with_documents(qtbot, tmp_path,
                               lambda model: open_embedder(minilm if model is None else model, tmp_path)) as window:
        window.stack.load(qtbot, gemma_path, WAIT_MS)
        models = window.window.models
        models.update_settings(models.settings.with_changes(sampling=SamplingParams(temperature=0.0, max_tokens=12)))
        yield window
    appearance.apply(QApplication.instance(), Appearance.SYSTEM)


def garden(tmp_path: Path) -> Path:
    folder = tmp_path / "garden"
    folder.mkdir()
    for name, text in GARDEN.items():
        (folder / name).write_text(text)
    return folder


def marked_link(browser) -> str | None:
    """The link the keyboard's mark is on (Tab selects it), or None."""
    cursor = browser.textCursor()
    if not cursor.hasSelection():
        return None
    inside = QTextCursor(cursor)
    inside.setPosition(cursor.selectionStart() + 1)
    return inside.charFormat().anchorHref() or None


@pytest.mark.parametrize("choice", [Appearance.LIGHT, Appearance.DARK])
def test_add_watch_attach_ask_and_open_a_citation(qtbot, tmp_path, opened, choice):
    appearance.apply(QApplication.instance(), choice)
    window, library = opened.window, opened.library

    # Settings → Documents: add the folder, watch the progress to its end.
    window.show_settings("documents")
    page = window._settings_dialog.documents
    steps = []
    library.progress.connect(lambda name, step: steps.append((name, step.done, step.total, page.progress_bar.value())))
    with qtbot.waitSignal(library.indexed, timeout=WAIT_MS) as ended:
        add_folder(qtbot, page, garden(tmp_path), "garden")
    assert ended.args[1].indexed == 3 and steps[-1][:3] == ("garden", 3, 3)
    qtbot.waitUntil(lambda: library.names() == ("garden",) and not library.indexing(), timeout=WAIT_MS)
    assert unnamed_widgets(window._settings_dialog) == []
    QTest.keyClick(window._settings_dialog, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window._settings_dialog.isVisible(), timeout=WAIT_MS)

    # Tick it for this conversation on the documents button, from the keyboard.
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    picker = window.documents.picker
    in_menu(qtbot, picker, [Qt.Key.Key_Down, Qt.Key.Key_Space])
    assert picker.text() == "Docs · 1 ▾" and opened.session.documents.chosen == ("garden",)

    # Ask.
    composer = window.composer
    composer.edit.setFocus()
    QTest.keyClicks(composer.edit, "How long should bread dough rise?")
    with qtbot.waitSignal(opened.session.replyFinished, timeout=WAIT_MS):
        QTest.keyClick(composer.edit, Qt.Key.Key_Return)
    question = opened.store.messages(opened.session.conversation_id)[0]
    assert question.sources and Path(question.sources[0].path).name == "bread.txt"
    browser = window.chat._browser
    text = browser.toPlainText()
    assert "Sources\n[1] bread.txt" in text and "“Knead the dough for ten minutes" in text

    # The screenshot of this appearance: the sources block drawn in its colours (once the status
    # bar has laid out the reply's speed).
    qtbot.waitUntil(lambda: window.speed_label.width() >= window.speed_label.sizeHint().width(), timeout=WAIT_MS)
    shot = window.grab()
    shot.save(str(tmp_path / f"documents-{choice.value}.png"))
    assert not shot.isNull() and shot.width() >= 1000
    background = shot.toImage().pixelColor(shot.width() // 2, shot.height() // 2)
    assert (background.lightness() > 128) == (choice is Appearance.LIGHT)

    # Tab through the chat's links to the first citation, Enter opens it.
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    browser.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(browser.hasFocus, timeout=WAIT_MS)
    wanted = source_href(question.id, 1)
    for _ in range(40):
        if marked_link(browser) == wanted:
            break
        QTest.keyClick(browser, Qt.Key.Key_Tab)
    assert marked_link(browser) == wanted
    QTest.keyClick(browser, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.citations.view is not None and window.citations.view.isVisible(), timeout=WAIT_MS)
    view = window.citations.view
    assert view.passage.toPlainText().startswith("Knead the dough") and view.open_button.isEnabled()
    assert view.accessibleName() == "Source 1: bread.txt" and unnamed_widgets(view) == []
    qtbot.waitUntil(view.isActiveWindow, timeout=WAIT_MS)  # the keyboard went with it
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not shiboken6.isValid(view), timeout=WAIT_MS)  # closed, and deleted with its page
