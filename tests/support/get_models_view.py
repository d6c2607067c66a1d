"""The Get models view as its tests make it: over download managers aimed at the fake Hub
(support/fake_hub.py), with a keyring in memory; and what they do in it as a user does."""

from __future__ import annotations

import pytest

from app.library import credentials
from app.library.hub import HubClient, Timeouts
from app.owners.downloads import DownloadManager
from app.ui.models.download_row import DownloadRow
from app.ui.models.get_models import GetModelsView
from app.ui.models.hub_lists import MODEL_ROLE, ModelColumn
from support.memory_keyring import in_memory_keyring

Q4 = "Qwen3-0.6B-Q4_K_M.gguf"
WAIT_MS = 8_000


@pytest.fixture(autouse=True)
def memory_keyring():
    """No test reads or writes the machine's keyring."""
    with in_memory_keyring() as backend:
        yield backend
        credentials.forget_token()


def client_factory(url: str, read: float = 2.0):
    return lambda token=None: HubClient(endpoint=url, token=token, timeouts=Timeouts(connect=2.0, read=read))


@pytest.fixture
def make_manager(hub, tmp_path):
    managers = []

    def make(factory=None) -> DownloadManager:
        manager = DownloadManager(factory or client_factory(hub.url), dest=tmp_path / "models")
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        manager.shutdown()


@pytest.fixture
def make_view(qtbot, make_manager):
    views = []  # held until teardown, as the window that opens a view holds it

    def make(manager=None) -> GetModelsView:
        """A view shown over `manager` (by default a new one aimed at the fake Hub)."""
        view = GetModelsView(manager or make_manager())
        qtbot.addWidget(view)
        view.show()
        views.append(view)
        return view

    return make


def model_items(view):
    """Every downloadable row of the models tree, groups opened, by file name."""
    items = {}
    for top in range(view.models.topLevelItemCount()):
        item = view.models.topLevelItem(top)
        for child in [item] + [item.child(i) for i in range(item.childCount())]:
            if child.data(0, MODEL_ROLE) is not None:
                items[child.text(ModelColumn.FILE)] = child
    return items


def start_download(qtbot, view, file_name) -> DownloadRow:
    view.models.setCurrentItem(model_items(view)[file_name])
    view.download_button.click()
    rows = [row for row in view.findChildren(DownloadRow) if row.job.model.name == file_name]
    return rows[-1]
