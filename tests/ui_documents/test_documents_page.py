"""Settings → Documents, used as a user does, over a real DocumentLibrary: a real index file in a
temporary folder and the real embedding model (all-MiniLM-L6-v2 in llama.cpp). A folder is added
through the page's own file chooser and name box (window-modal dialogs, Qt's own widgets on the
offscreen platform, typed into and answered with Enter), its progress watched to the end, its
counts and the reason a broken .docx was skipped read from the page; then Update, Cancel, Remove,
Remove folder, the embedding model and the sources per reply. Remove's question is a modal
message box (exec), answered by support.modal_answers' timer clicking Yes as a user would. No
dialog is patched; only the screen reader's announcements are caught, to be read. The status
bar's side (ui/window/indexing_status.py) is tested in the real main window
(test_indexing_status.py)."""

from __future__ import annotations

from documents_page_helpers import (  # noqa: F401 (fixtures: pytest finds them by name here)
    WAIT_MS,
    activate,
    add_folder,
    choose_in_file_dialog,
    failures,
    folder,
    gated,
    heard,
    indexed_row,
    made,
    minilm,
    name_collection,
    open_page,
    roots,
    row,
)
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit, QMessageBox
from support.modal_answers import answering
from support.widget_walk import unnamed_widgets

from app.owners.document_settings import DocumentSettings
from app.ui.dialogs import documents_page
from app.ui.dialogs.collection_words import UNFINISHED, when
from app.ui.dialogs.documents_options import DEFAULT_MODEL

NOT_A_ZIP = "is not a Word document: it is not a zip archive"


def test_a_folder_added_shows_its_progress_to_the_end_then_its_counts_and_failures(qtbot, tmp_path, made, folder,
                                                                                   heard):
    page = open_page(qtbot, tmp_path, made.library)
    seen = []  # what the page showed at each step: the bar, and the row's state
    made.library.progress.connect(lambda name, step: seen.append(
        (page.progress_bar.isVisible(), page.progress_bar.value(), page.progress_bar.maximum(), row(page, name)[5])))
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS) as ended:
        offered = add_folder(qtbot, page, folder)
        assert offered == ["docs"], "the folder's name is the default; there is no other collection yet"
        assert row(page, "docs") == ["docs", "", "", "", "", "Indexing…"], "shown at once, before it is read back"
        assert page.progress_label.text() == "Indexing “docs”: starting"
    assert not ended.args[1].cancelled
    assert seen[-1] == (True, 3, 3, "Indexing 3 of 3 files…"), "the bar went to the end"
    assert [value for _shown, value, _most, _state in seen] == sorted(value for _s, value, _m, _t in seen)
    cells = indexed_row(qtbot, page, "docs")
    finished_at = made.library.summaries[0].collection.finished_at
    assert cells == ["docs", "2", "2", "1", "docs", f"Indexed {when(finished_at)}"]
    assert not page.progress_bar.isVisible() and page.selected_name() == "docs"
    assert failures(page) == [["broken.docx", NOT_A_ZIP]], "why the file was skipped"
    assert roots(page) == [str(folder)]
    assert ("Indexing “docs”", False) in heard and heard[-1] == ("“docs” indexed: 2 files, 1 failed", False)
    assert not page.problem_label.isVisible() and not any(urgent for _text, urgent in heard)


def test_update_reads_again_what_changed(qtbot, tmp_path, made, folder, heard):
    page = open_page(qtbot, tmp_path, made.library)
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS):
        add_folder(qtbot, page, folder, "kitchen")
    indexed_row(qtbot, page, "kitchen")
    assert not page.cancel_button.isEnabled() and page.update_button.isEnabled()
    (folder / "bread.txt").write_text("Knead the dough for ten minutes.\n\nBake it at 220 degrees for half an hour.\n")
    (folder / "garden.md").unlink()
    activate(qtbot, page)
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS) as ended:
        QTest.keyClick(page, Qt.Key.Key_U, Qt.KeyboardModifier.AltModifier)  # its mnemonic (an animated click)
    report = ended.args[1]
    assert (report.indexed, report.unchanged, report.removed) == (1, 1, 1), "changed, broken as it was, gone"
    assert indexed_row(qtbot, page, "kitchen")[:4] == ["kitchen", "1", "1", "1"]
    assert heard[-1] == ("“kitchen” indexed: 1 file, 1 failed", False)


def test_cancel_stops_the_run_and_the_row_says_it_will_go_on(qtbot, tmp_path, gated, folder, heard):
    page = open_page(qtbot, tmp_path, gated.library)
    with qtbot.waitSignal(gated.library.indexed, timeout=WAIT_MS) as ended:
        add_folder(qtbot, page, folder)
        gated.embedding(qtbot)  # the first file is being embedded
        qtbot.waitUntil(lambda: row(page, "docs")[5] == "Indexing 0 of 3 files…", timeout=WAIT_MS)
        assert page.cancel_button.isEnabled() and page.remove_button.isEnabled() and not page.update_button.isEnabled()
        QTest.mouseClick(page.cancel_button, Qt.MouseButton.LeftButton)
        gated.release()
    assert ended.args[1].cancelled and ended.args[1].indexed == 1
    qtbot.waitUntil(lambda: "docs" in gated.library.names() and row(page, "docs")[5] == UNFINISHED, timeout=WAIT_MS)
    assert row(page, "docs")[:4] == ["docs", "1", "1", "0"], "what was done stays"
    assert heard[-1] == ("Indexing “docs” stopped after 1 of 3 files.", False)
    assert not page.progress_bar.isVisible() and page.update_button.isEnabled() and not page.cancel_button.isEnabled()
    with qtbot.waitSignal(gated.library.indexed, timeout=WAIT_MS) as resumed:
        page.update_button.click()  # goes on from there
    assert (resumed.args[1].unchanged, resumed.args[1].indexed, len(resumed.args[1].failed)) == (1, 1, 1)
    assert indexed_row(qtbot, page, "docs")[:4] == ["docs", "2", "2", "1"]


def test_remove_asks_first_and_leaves_the_files(qtbot, tmp_path, made, folder):
    page = open_page(qtbot, tmp_path, made.library)
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS):
        add_folder(qtbot, page, folder, "<b>notes</b>")
    indexed_row(qtbot, page, "<b>notes</b>")
    asked = []

    def look(box: QMessageBox):
        asked.append((box.text(), box.textFormat()))

    activate(qtbot, page)
    page.table.setFocus()
    with answering(look):  # No, the safe answer: nothing is removed
        QTest.keyClick(page.table, Qt.Key.Key_Delete)
    assert made.library.names() == ("<b>notes</b>",)
    with answering(look, answer=lambda box: box.button(QMessageBox.StandardButton.Yes).click()):
        QTest.mouseClick(page.remove_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: made.library.names() == () and page.table.rowCount() == 0, timeout=WAIT_MS)
    text, text_format = asked[-1]
    assert "“<b>notes</b>”" in text and "The files themselves stay" in text and text_format == Qt.TextFormat.PlainText
    assert sorted(path.name for path in folder.iterdir()) == ["bread.txt", "broken.docx", "garden.md"]
    assert not page.remove_button.isEnabled() and page.failures.rowCount() == 0 and page.roots.count() == 0


def test_a_second_folder_and_files_join_the_selected_collection_and_a_folder_leaves_it(qtbot, tmp_path, made, folder):
    page = open_page(qtbot, tmp_path, made.library)
    more = tmp_path / "more"
    more.mkdir()
    (more / "soup.txt").write_text("Simmer the soup for twenty minutes.\n")
    (more / "tea.md").write_text("# Tea\n\nSteep green tea for two minutes.\n")
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS):
        add_folder(qtbot, page, folder)
    indexed_row(qtbot, page, "docs")
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS):
        offered = add_folder(qtbot, page, more, "docs")
    assert offered == ["more", "docs"], "the selected collection is offered"
    assert indexed_row(qtbot, page, "docs")[1] == "4" and row(page, "docs")[4] == "docs, more"
    extra = tmp_path / "extra.txt"
    extra.write_text("Dry the herbs in the shade.\n")
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS):
        QTest.mouseClick(page.add_files_button, Qt.MouseButton.LeftButton)
        choose_in_file_dialog(qtbot, page, extra.name, tmp_path)
        assert name_collection(qtbot, page) == ["docs"], "files go to the selected collection by default"
    assert indexed_row(qtbot, page, "docs")[1] == "5"
    assert roots(page) == sorted([str(folder), str(more), str(extra)])
    assert not page.remove_root_button.isEnabled(), "no folder chosen yet"
    page.roots.setCurrentRow(roots(page).index(str(more)))
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS) as ended:
        QTest.mouseClick(page.remove_root_button, Qt.MouseButton.LeftButton)
    assert ended.args[1].removed == 2
    qtbot.waitUntil(lambda: roots(page) == sorted([str(folder), str(extra)]), timeout=WAIT_MS)
    assert indexed_row(qtbot, page, "docs")[1] == "3"
    assert (more / "soup.txt").exists()


def test_an_empty_name_adds_nothing_and_says_so(qtbot, tmp_path, made, folder):
    page = open_page(qtbot, tmp_path, made.library)
    QTest.mouseClick(page.add_folder_button, Qt.MouseButton.LeftButton)
    choose_in_file_dialog(qtbot, page, str(folder))
    name_collection(qtbot, page, "   ")
    assert made.library.indexing() == () and page.table.rowCount() == 0
    assert page.problem_label.isVisible() and page.problem_label.text() == documents_page.NO_NAME


def test_a_model_that_does_not_load_is_said_on_the_page_not_in_a_box(qtbot, tmp_path, made, folder, heard):
    page = open_page(qtbot, tmp_path, made.library)
    not_a_model = tmp_path / "not-a-model.gguf"
    not_a_model.write_bytes(b"GGUF but not really")
    QTest.mouseClick(page.options.choose_model_button, Qt.MouseButton.LeftButton)
    choose_in_file_dialog(qtbot, page.options, not_a_model.name, tmp_path)
    assert made.library.settings.embedding_model == not_a_model and page.options.model_field.text() == str(not_a_model)
    assert page.options.default_model_button.isEnabled()
    with qtbot.waitSignal(made.library.indexingChanged, timeout=WAIT_MS, check_params_cb=lambda names: names == ()):
        add_folder(qtbot, page, folder, "<i>docs</i>")
    qtbot.waitUntil(page.problem_label.isVisible, timeout=WAIT_MS)
    assert page.problem_label.text().startswith("<i>docs</i> could not be indexed")
    assert page.problem_label.textFormat() == Qt.TextFormat.PlainText and (page.problem_label.text(), True) in heard
    assert not [widget for widget in QApplication.topLevelWidgets() if isinstance(widget, QMessageBox)
                and widget.isVisible()]
    page.options.default_model_button.click()
    assert made.library.settings.embedding_model is None and page.options.model_field.text() == DEFAULT_MODEL
    assert not page.options.default_model_button.isEnabled()


def test_sources_per_reply_is_kept_in_the_settings_file(qtbot, tmp_path, made):
    page = open_page(qtbot, tmp_path, made.library)
    assert page.options.sources.value() == 5 and page.options.sources.maximum() == 20
    QTest.keyClick(page, Qt.Key.Key_P, Qt.KeyboardModifier.AltModifier)
    assert QApplication.focusWidget() is page.options.sources.findChild(QLineEdit) or QApplication.focusWidget() is page.options.sources
    page.options.sources.selectAll()
    QTest.keyClicks(page.options.sources, "12")
    assert made.library.settings.sources_per_reply == 5, "nothing applied while typing"
    QTest.keyClick(page.options.sources, Qt.Key.Key_Return)
    made.qsettings.sync()
    assert DocumentSettings(QSettings(made.qsettings.fileName(), QSettings.Format.IniFormat)).sources_per_reply == 12


def test_whether_the_model_searches_is_chosen_by_its_mnemonic_and_kept(qtbot, tmp_path, made):
    page = open_page(qtbot, tmp_path, made.library)
    assert not page.options.as_tool.isChecked() and not made.library.settings.as_tool
    assert page.options.as_tool.accessibleDescription().startswith("Off: each question is searched")
    QTest.keyClick(page, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)  # a button's mnemonic clicks it, animated
    qtbot.waitUntil(page.options.as_tool.isChecked, timeout=WAIT_MS)
    assert made.library.settings.as_tool
    made.qsettings.sync()
    assert DocumentSettings(QSettings(made.qsettings.fileName(), QSettings.Format.IniFormat)).as_tool


def test_tab_reaches_every_control_each_named(qtbot, tmp_path, made, folder):
    page = open_page(qtbot, tmp_path, made.library)
    with qtbot.waitSignal(made.library.indexed, timeout=WAIT_MS):
        add_folder(qtbot, page, folder)
    indexed_row(qtbot, page, "docs")
    page.roots.setCurrentRow(0)
    page.failures.selectRow(0)
    dialog = page.window()
    activate(qtbot, page)
    assert unnamed_widgets(dialog) == []
    page.table.setFocus(Qt.FocusReason.TabFocusReason)
    reached = []
    for _ in range(40):
        reached.append(QApplication.focusWidget())
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    wanted = [page.table, page.add_folder_button, page.add_files_button, page.update_button, page.remove_button,
              page.roots, page.remove_root_button, page.failures, page.options.model_field, page.options.choose_model_button]
    missing = [widget.accessibleName() for widget in wanted if widget not in reached]
    assert not missing, missing
    assert page.options.sources in reached or page.options.sources.findChild(QLineEdit) in reached
    assert reached.index(page.table) < reached.index(page.add_folder_button) < reached.index(page.roots)
    for widget in (page.table, page.progress_bar, page.failures, page.roots, page.add_folder_button,
                   page.cancel_button, page.remove_button):
        assert widget.accessibleName(), widget
    for widget in (page.table, page.failures, page.add_folder_button, page.cancel_button, page.remove_button):
        assert widget.accessibleDescription(), widget.accessibleName()
    letters = [button.text().split("&")[1][0].lower() for button in
               (page.add_folder_button, page.add_files_button, page.update_button, page.cancel_button,
                page.remove_button, page.remove_root_button, page.options.choose_model_button,
                page.options.default_model_button, page.options.as_tool)]
    labels = [label.text().split("&")[1][0].lower() for label in page.findChildren(QLabel) if "&" in label.text()]
    tabs = [dialog.tabs.tabText(index).split("&")[1][0].lower() for index in range(dialog.tabs.count())]
    every = letters + labels + tabs
    assert len(labels) == 5 and len(set(every)) == len(every), f"each mnemonic once in the dialog: {sorted(every)}"
