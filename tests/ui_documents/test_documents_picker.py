"""The documents button beside the message box and documents dropped onto the window (#28).

The button's menu, worked from the keyboard, ticks the collections the open conversation's
questions are answered from; the choice is kept with the conversation and comes back when it is
opened again. A folder added from the menu, or dropped onto the window, is indexed with the
real embedding model and used in the open conversation at once. A dropped model file (.gguf) is
not a document: the window leaves that drag alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDragEnterEvent, QDragLeaveEvent, QDragMoveEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QComboBox, QFileDialog, QInputDialog, QWidget
from support.documents_window import window_with_documents
from support.menus import in_menu
from support.model_files.embedding_model import ensure_minilm
from support.widget_walk import unnamed_widgets

from app.documents.index import Collection, CollectionStats, CollectionSummary, FailedFile
from app.documents.indexing import Progress
from app.ui.chat.composer import Composer
from app.ui.chat.documents.picker import DocumentsPicker
from app.ui.chat.tools_picker import ToolsPicker
from app.ui.widgets import drop_hint
from app.ui.window import documents
from app.ui.window.documents import DROP_TEXT

WAIT_MS = 60_000
ACTIONS = Qt.DropAction.CopyAction | Qt.DropAction.MoveAction | Qt.DropAction.LinkAction


def a_folder(parent: Path, name: str, files: dict[str, str]) -> Path:
    folder = parent / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text)
    return folder


GARDEN = {"tomatoes.md": "# Tomatoes\n\nWater tomatoes in the morning, deeply, twice a week.\n",
          "roses.txt": "Prune roses in late winter, just above an outward-facing bud.\n"}


def summary(name: str, files: int, failed: tuple[FailedFile, ...] = (), finished: bool = True) -> CollectionSummary:
    collection = Collection(1, name, "2025-01-01", "minilm", 384, 1, "2025-01-01" if finished else None)
    return CollectionSummary(collection, CollectionStats(files, len(failed), files * 3, 100, 100),
                             (Path("/home/me") / name,), failed)


def rows(picker: DocumentsPicker) -> list[tuple[str, bool]]:
    """(text, ticked) of each collection's row."""
    return [(action.text(), action.isChecked()) for action in picker.tick_menu.actions() if action.isCheckable()]


def answer_name(qtbot, typed: str | None, offered: list) -> None:
    """When the name is asked, note what is offered, then type `typed` (None: keep it) and press
    Enter, as a user does."""

    def answer():
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QInputDialog):
            QTimer.singleShot(20, answer)
            return
        edit = dialog.findChild(QComboBox).lineEdit()
        offered.append(edit.text())
        if typed is not None:
            edit.selectAll()
            QTest.keyClicks(edit, typed)
        QTest.keyClick(edit, Qt.Key.Key_Return)

    QTimer.singleShot(0, answer)


# -- the window with documents, as the application opens it (app/ui/app/application.py) ---------

@pytest.fixture
def heard(monkeypatch) -> list[str]:
    """What the window's documents side says to a screen reader (its drop hint is said by the
    DropTarget that shows it)."""
    said: list[str] = []
    for module in (documents, drop_hint):
        monkeypatch.setattr(module, "announce", lambda _widget, text, urgent=False: said.append(text))
    return said


@pytest.fixture(scope="module")
def minilm() -> Path:
    return ensure_minilm().gguf


@pytest.fixture
def documents_window(qtbot, tmp_path, minilm):
    from app.engine.opening import open_embedder

    with window_with_documents(qtbot, tmp_path,
                               lambda model: open_embedder(minilm if model is None else model, tmp_path)) as opened:
        yield opened


# -- dragging, as Qt delivers it: to the widget under the pointer that takes drops ---------------

def drop_target(window: QWidget, over: QWidget) -> tuple[QWidget, QPoint]:
    """The widget a drag over `over`'s middle is first given (QWidgetWindow's findDnDTarget)."""
    at = over.mapTo(window, over.rect().center())
    widget = window.childAt(at) or window
    while not widget.isWindow() and not widget.acceptDrops():
        widget = widget.parentWidget()
    return widget, widget.mapFrom(window, at)


def urls(*paths: Path | str) -> QMimeData:
    """What a file manager drags: the URLs, and their paths as text (which a text box would paste)."""
    mime = QMimeData()
    mime.setUrls([QUrl(path) if isinstance(path, str) else QUrl.fromLocalFile(str(path)) for path in paths])
    mime.setText("\n".join(str(path) for path in paths))
    return mime


def drag_and_drop(window: QWidget, over: QWidget, mime: QMimeData, hint: QWidget | None = None) -> bool:
    """Drag `mime` over `over` and drop it; whether the window took the drag (and, with `hint`,
    it was shown while dragging)."""
    target, at = drop_target(window, over)
    enter = QDragEnterEvent(at, ACTIONS, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, enter)
    if not enter.isAccepted():
        QApplication.sendEvent(target, QDragLeaveEvent())
        return False
    move = QDragMoveEvent(at + QPoint(5, 5), ACTIONS, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, move)
    assert move.isAccepted() and move.dropAction() == Qt.DropAction.CopyAction
    if hint is not None:
        assert hint.isVisible(), "the drop hint shows while dragging"
    drop = QDropEvent(QPointF(at), ACTIONS, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, drop)
    return drop.isAccepted()


# -- the button alone ---------------------------------------------------------------------------

def test_rows_say_each_collections_files_and_indexing(qtbot):
    picker = DocumentsPicker()
    qtbot.addWidget(picker)
    assert picker.text() == "No documents ▾" and rows(picker) == []
    assert picker.accessibleName() == "Documents for this conversation"
    broken = (FailedFile(Path("/home/me/notes/<i>scan.pdf"), "no text\nin it"),)
    picker.set_collections((summary("notes", 12, broken), summary("recipes", 1), summary("old", 4, finished=False)))
    picker.set_indexing(("recipes", "notes", "brand new"))
    picker.set_progress("recipes", Progress(3, 10, 9, 0))
    picker.set_chosen(frozenset({"notes", "recipes"}))
    assert rows(picker) == [("notes · 12 files · waiting · 1 failed", True), ("recipes · indexing 3 of 10 files…", True),
                            ("old · 4 files · not finished", False), ("brand new · waiting", False)]
    assert picker.text() == "Docs · 2 ▾"
    description = picker.accessibleDescription()
    assert description.startswith("Questions here are answered from notes and recipes.")
    assert "recipes is being indexed (3 of 10 files)" in description and "Waiting to be indexed: notes and brand new" in description
    assert "1 file could not be read" in description
    failed_row = next(a for a in picker.tick_menu.actions() if a.text().startswith("notes"))
    assert "&lt;i&gt;scan.pdf: no text in it" in failed_row.toolTip()


def test_names_are_inert_and_no_mnemonic(qtbot):
    picker = DocumentsPicker()
    qtbot.addWidget(picker)
    picker.set_collections((summary("<b>R&D</b>\u202e", 2),))
    picker.set_chosen(frozenset({"<b>R&D</b>\u202e"}))
    assert rows(picker) == [("<b>R&&D</b>\ufffd · 2 files", True)]
    assert "\u202e" not in picker.accessibleDescription() and "&lt;b&gt;" in picker.toolTip()


def test_tab_goes_along_the_row_beside_send(qtbot):
    """The message box, the tools button, the documents button, Send: Tab in the order they
    are laid out, each button added beside Send after those before it."""
    composer = Composer()
    tools, documents = ToolsPicker(), DocumentsPicker()
    composer.add_beside_send(tools)
    composer.add_beside_send(documents)
    qtbot.addWidget(composer)
    composer.show()
    qtbot.waitExposed(composer)
    composer.activateWindow()
    qtbot.waitUntil(composer.isActiveWindow)
    composer.edit.setFocus()
    reached = []
    for _ in range(3):
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        reached.append(QApplication.focusWidget())
    assert reached == [tools, documents, composer.button]


# -- in the window --------------------------------------------------------------------------------

def test_ticking_from_the_keyboard_is_kept_with_the_conversation(documents_window, qtbot, tmp_path):
    opened = documents_window
    library, picker = opened.library, opened.window.documents.picker
    library.add("garden", [a_folder(tmp_path, "garden", GARDEN)])
    opened.wait_indexed(qtbot, "garden")
    first = opened.open_new_conversation("Tomatoes")
    assert picker.isVisible() and picker.text() == "No documents ▾"
    assert rows(picker) == [("garden · 2 files", False)]
    composer = opened.window.composer
    composer.edit.setFocus()
    QTest.keyClick(composer.edit, Qt.Key.Key_Tab)
    assert picker.hasFocus()  # Tab from the message box reaches the button

    seen: list[bool] = []
    in_menu(qtbot, picker, [Qt.Key.Key_Down, Qt.Key.Key_Space], seen)
    assert seen == [True]  # ticking leaves the menu open
    assert picker.text() == "Docs · 1 ▾" and rows(picker) == [("garden · 2 files", True)]
    assert opened.store.get_conversation(first).collections == ("garden",)
    assert "answered from garden" in picker.accessibleDescription()

    second = opened.open_new_conversation("Roses")  # never chose: starts with the last choice
    assert rows(picker) == [("garden · 2 files", True)]
    in_menu(qtbot, picker, [Qt.Key.Key_Down, Qt.Key.Key_Return])  # Enter toggles too
    assert picker.text() == "No documents ▾" and opened.store.get_conversation(second).collections == ()

    opened.session.open(first)
    assert picker.text() == "Docs · 1 ▾" and rows(picker) == [("garden · 2 files", True)]
    opened.session.open(second)
    assert picker.text() == "No documents ▾"
    assert unnamed_widgets(opened.window) == []


def test_a_folder_dropped_onto_the_chat_is_indexed_and_used_here(documents_window, qtbot, tmp_path, heard):
    opened = documents_window
    window, display = opened.window, opened.window.documents
    conversation = opened.open_new_conversation("Garden questions")
    garden = a_folder(tmp_path, "garden", GARDEN)

    assert drag_and_drop(window, window.chat, urls(garden), display.drop_hint)
    assert display.drop_hint.accessibleName() == DROP_TEXT
    qtbot.waitUntil(lambda: not display.drop_hint.isVisible())
    # Chosen at once, before it is indexed: the user may ask while it indexes.
    qtbot.waitUntil(lambda: "garden" in display.picker.chosen(), timeout=WAIT_MS)
    assert display.picker.text() == "Docs · 1 ▾"
    assert heard[0].startswith(DROP_TEXT)
    assert heard[-1].startswith("“garden” is being indexed and is used in this conversation: ask about it now")
    opened.wait_indexed(qtbot, "garden")
    qtbot.waitUntil(lambda: rows(display.picker) == [("garden · 2 files", True)], timeout=WAIT_MS)
    assert opened.store.get_conversation(conversation).collections == ("garden",)
    [indexed] = opened.library.summaries
    assert indexed.roots == (garden,) and indexed.collection.finished

    # The same folder again: the same collection brought up to date, not a second one.
    assert drag_and_drop(window, window.composer.edit, urls(garden))
    qtbot.waitUntil(lambda: not opened.library.indexing(), timeout=WAIT_MS)
    assert opened.library.names() == ("garden",) and window.composer.text() == ""


def test_a_dropped_model_file_or_web_link_is_left_alone(documents_window, qtbot, tmp_path):
    opened = documents_window
    window, display = opened.window, opened.window.documents
    opened.open_new_conversation("Models")
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    notes = tmp_path / "notes.txt"
    notes.write_text("a note")
    for mime in (urls(model), urls(model, notes), urls("https://example.com/paper.pdf")):
        assert not drag_and_drop(window, window.chat, mime)
        assert not display.drop_hint.isVisible()
    qtbot.wait(50)
    assert opened.library.indexing() == () and opened.library.names() == ()
    assert display.picker.text() == "No documents ▾"


def test_several_files_dropped_go_into_a_collection_named_by_the_user(documents_window, qtbot, tmp_path):
    opened = documents_window
    window, display = opened.window, opened.window.documents
    conversation = opened.open_new_conversation("Kitchen")
    soup, bread = tmp_path / "soup.md", tmp_path / "bread.txt"
    soup.write_text("# Soup\n\nSimmer the onions for twenty minutes.\n")
    bread.write_text("Knead the dough for ten minutes.\n")
    offered: list[str] = []
    answer_name(qtbot, "Recipes", offered)
    assert drag_and_drop(window, window.chat, urls(soup, bread))
    qtbot.waitUntil(lambda: offered == ["Dropped files"], timeout=WAIT_MS)
    opened.wait_indexed(qtbot, "Recipes")
    qtbot.waitUntil(lambda: rows(display.picker) == [("Recipes · 2 files", True)], timeout=WAIT_MS)
    assert opened.store.get_conversation(conversation).collections == ("Recipes",)


def test_add_folder_from_the_menu_names_it_and_uses_it(documents_window, qtbot, tmp_path, monkeypatch):
    opened = documents_window
    display = opened.window.documents
    conversation = opened.open_new_conversation("Garden")
    garden = a_folder(tmp_path, "garden", GARDEN)
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda parent, caption, *rest: asked.append(caption) or str(garden)))
    offered: list[str] = []
    answer_name(qtbot, None, offered)  # keeps the folder's own name
    in_menu(qtbot, display.picker, [Qt.Key.Key_A])  # "Add folder…" by its mnemonic
    qtbot.waitUntil(lambda: offered == ["garden"], timeout=WAIT_MS)
    assert asked == ["Add a folder of documents"]
    opened.wait_indexed(qtbot, "garden")
    qtbot.waitUntil(lambda: rows(display.picker) == [("garden · 2 files", True)], timeout=WAIT_MS)
    assert opened.store.get_conversation(conversation).collections == ("garden",)


def test_manage_documents_opens_settings(documents_window, qtbot):
    opened = documents_window
    in_menu(qtbot, opened.window.documents.picker, [Qt.Key.Key_M])
    dialog = opened.window._settings_dialog
    qtbot.waitUntil(lambda: dialog is not None and dialog.isVisible())
    documents_page = getattr(dialog, "documents", None)  # Settings → Documents, where Settings has it
    assert documents_page is None or dialog.tabs.currentWidget() is documents_page
    dialog.close()


def test_a_folder_that_cannot_be_indexed_leaves_nothing_behind(qtbot, tmp_path, heard):
    """The embedding model does not load: the folder's run ends before its collection is made,
    and dropping it again tries the same name, not "garden (2)"."""
    def no_model(_model):
        raise RuntimeError("no embedding model here")

    garden = a_folder(tmp_path, "garden", GARDEN)
    with window_with_documents(qtbot, tmp_path, no_model) as opened:
        window, display = opened.window, opened.window.documents
        opened.open_new_conversation("Garden")
        problems: list[str] = []
        opened.library.problem.connect(problems.append)
        for tries in (1, 2):
            assert drag_and_drop(window, window.chat, urls(garden))
            qtbot.waitUntil(lambda tries=tries: len(problems) == tries and not opened.library.indexing(), timeout=WAIT_MS)
            assert heard[-1].startswith("“garden” is being indexed")  # the same name again, not "garden (2)"
            assert display.picker.text() == "No documents ▾" and rows(display.picker) == []
        assert opened.library.names() == () and problems[-1] == "garden could not be indexed: no embedding model here"
