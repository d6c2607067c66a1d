"""Get models driven as a person drives it: the Search button, the suggestions before any
search and offline, and a name for everything a screen reader reaches."""

from __future__ import annotations

from collections import namedtuple

import psutil
import pytest
from PySide6.QtCore import Qt
from support.fake_hub import QWEN_REPO
from support.get_models_view import (  # noqa: F401  (fixtures, found by pytest by name)
    Q4,
    WAIT_MS,
    make_manager,
    make_view,
    memory_keyring,
    model_items,
    start_download,
)
from support.widget_walk import unnamed_widgets

from app.library import curated
from app.library.curated import load_curated
from app.ui.models.curated_list import CuratedColumn
from app.ui.models.get_models import OFFLINE_HEADLINE
from app.ui.widgets.colors import Tone, tone_of

SUGGESTED = load_curated()[0]  # Qwen3 0.6B, whose repository the fake Hub serves below


@pytest.fixture
def suggested_repo(hub, tiny_gguf):
    """The first suggestion's repository, with its recommended file among others."""
    return hub.add_repo(SUGGESTED.repo_id, {
        SUGGESTED.file.replace("Q4_K_M", "Q8_0"): tiny_gguf,
        SUGGESTED.file: tiny_gguf,
        SUGGESTED.file.replace("Q4_K_M", "IQ2_XS"): tiny_gguf[:40_000],
    })


def click_row(qtbot, table, row: int) -> None:
    rect = table.visualRect(table.model().index(row, 0))
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())


def test_clicking_search_searches_for_what_the_box_holds(qtbot, make_view, qwen):
    view = make_view()
    qtbot.keyClicks(view.search_box, "qwen3")
    with qtbot.waitSignal(view.searchFinished, timeout=WAIT_MS):
        qtbot.mouseClick(view.search_button, Qt.LeftButton)  # clicked(bool) once reached search(text)
    assert view.browse_pages.currentWidget() is view.results
    assert view.results.rowCount() == 1 and view.results.item(0, 0).text() == QWEN_REPO
    assert view.search_box.text() == "qwen3" and "1 repository" in view.message_label.text()


def test_suggestions_come_before_any_search_and_choosing_one_selects_its_file(qtbot, make_view, hub,
                                                                              suggested_repo):
    view = make_view()
    assert hub.requests == []  # suggesting needs no network
    assert view.browse_pages.currentWidget() is not view.results and view.suggestions.isVisible()
    names = [view.suggestions.item(r, CuratedColumn.MODEL).text() for r in range(view.suggestions.rowCount())]
    assert names == [model.name for model in load_curated()]
    assert view.suggestions.item(0, CuratedColumn.FITS).text() == "✓ fits in RAM"

    with qtbot.waitSignal(view.listingFinished, timeout=WAIT_MS) as listed:
        click_row(qtbot, view.suggestions, 0)
    assert listed.args == [SUGGESTED.repo_id]
    assert SUGGESTED.summary in view.suggestion_details.text()
    assert view.models.selected_model().name == SUGGESTED.file  # the recommended file, ready to download
    assert view.download_button.isEnabled()
    row = start_download(qtbot, view, SUGGESTED.file)
    qtbot.waitUntil(lambda: row.done, timeout=WAIT_MS)
    assert row.status_label.text().startswith("Downloaded to")

    with qtbot.waitSignal(view.searchFinished, timeout=WAIT_MS):
        qtbot.keyClicks(view.search_box, "nothing-like-this")
        qtbot.keyClick(view.search_box, Qt.Key_Return)
    assert view.suggestions_button.isVisible()
    qtbot.mouseClick(view.suggestions_button, Qt.LeftButton)
    assert view.suggestions.isVisible() and not view.suggestions_button.isVisible()


def test_offline_the_suggestions_stay_marked_for_this_machine(qtbot, make_view, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    Memory = namedtuple("Memory", "available")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: Memory(available=2 * 1024**3))
    view = make_view()
    assert view.message_label.text().startswith(OFFLINE_HEADLINE) and tone_of(view.message_label) is Tone.ERROR
    assert view.suggestions.isVisible()
    fits = {view.suggestions.item(r, CuratedColumn.MODEL).text(): view.suggestions.item(r, CuratedColumn.FITS).text()
            for r in range(view.suggestions.rowCount())}
    assert fits["Qwen3 0.6B"] == "✓ fits in RAM" and fits["Qwen3 4B"] == "too large for this machine"
    view.set_vram(8 * 1024**3)  # a GPU with room for it
    assert view.suggestions.item(2, CuratedColumn.FITS).text() == "✓ fits in VRAM"

    with qtbot.waitSignal(view.searchFinished, timeout=WAIT_MS):
        qtbot.mouseClick(view.search_button, Qt.LeftButton)
    assert view.suggestions.isVisible()  # a search offline comes back to what can be offered


def test_a_broken_suggestions_file_is_said_not_raised(qtbot, make_view, monkeypatch, tmp_path):
    (tmp_path / curated.FILE_NAME).write_text('{"models": [{"name": "half an entry"}]}', encoding="utf-8")
    monkeypatch.setattr(curated, "resources_dir", lambda: tmp_path)
    view = make_view()
    assert view.suggestions.rowCount() == 0
    assert "can't be shown" in view.suggestions_label.text() and "lacks" in view.suggestions_label.text()
    assert tone_of(view.suggestions_label) is Tone.ERROR


def test_everything_a_screen_reader_reaches_has_a_name(qtbot, make_view, qwen):
    view = make_view()
    view.resize(1000, 700)
    qwen.files[Q4].bytes_per_second = 50_000  # downloading, so its row's Pause and Cancel are shown
    assert unnamed_widgets(view) == []
    with qtbot.waitSignal(view.searchFinished, timeout=WAIT_MS):
        view.search(QWEN_REPO)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    row = start_download(qtbot, view, Q4)
    qtbot.waitUntil(lambda: row.pause_button.isEnabled(), timeout=WAIT_MS)
    assert unnamed_widgets(view) == []
    assert row.pause_button.accessibleName() == f"Pause {Q4}" and row.cancel_button.accessibleName() == f"Cancel {Q4}"
    row.cancel_button.click()
