"""Vision models from Hugging Face (the fake Hub of support/fake_hub.py): a repository's
projectors paired with its models, each quantization downloaded with its projector into the
same folder, verified like a model part, and the pair found by the scan once it has arrived.
The repository's files are real GGUFs: the tiny vision pair (conftest.vision_files)."""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath

from support.get_models_view import (  # noqa: F401  (fixtures, found by pytest by name)
    WAIT_MS,
    make_manager,
    make_view,
    memory_keyring,
    model_items,
    start_download,
)

from app.library.downloads import PARTIAL_SUFFIX, DownloadControl, download_model
from app.library.errors import DownloadCancelled, IntegrityError
from app.library.projectors import projector_for
from app.library.quants import QUARANTINE_DIR, by_quant
from app.library.scan import scan
from app.ui.models.download_row import DownloadRow
from app.ui.models.hub_lists import READS_IMAGES, ModelColumn

Q4, Q8 = "tiny-vision-Q4_K_M.gguf", "tiny-vision-Q8_0.gguf"
F16_PROJECTOR = "mmproj-model-f16.gguf"
SAVED_PROJECTOR = "mmproj-tiny-vision-F16.gguf"  # named for the model it is saved beside


def test_each_quantization_comes_with_the_f16_projector(vision, client, vision_files, qwen):
    models = {model.name: model for model in client.list_models(vision.repo_id).models}
    assert sorted(models) == [Q4, Q8]  # the projectors are no chat models
    for model in models.values():
        assert model.projector.path == F16_PROJECTOR  # f16 before Q8_0
        assert model.projector.name == SAVED_PROJECTOR
        assert model.projector.sha256 == hashlib.sha256(vision_files[F16_PROJECTOR]).hexdigest()
        assert model.size == len(vision_files[model.name]) + len(vision_files[F16_PROJECTOR])
        assert model.files == (*model.parts, model.projector)
    assert all(model.projector is None for model in client.list_models("Qwen/Qwen3-0.6B-GGUF").models)


def test_q8_0_without_an_f16_and_the_model_s_own_folder_first(hub, client, tiny_gguf):
    hub.add_repo("o/no-f16", {"m-Q4_K_M.gguf": tiny_gguf, "mmproj-BF16.gguf": b"GGUF1", "mmproj-Q8_0.gguf": b"GGUF2",
                              "mmproj-Q4_K_M.gguf": b"GGUF3"})
    [model] = client.list_models("o/no-f16").models
    assert model.projector.path == "mmproj-Q8_0.gguf" and model.projector.name == "mmproj-m-Q8_0.gguf"

    hub.add_repo("o/folders", {"Q4/m-Q4_K_M.gguf": tiny_gguf, "mmproj-F16.gguf": b"GGUF1",
                               "Q4/mmproj-Q8_0.gguf": b"GGUF2"})
    [model] = client.list_models("o/folders").models
    assert model.projector.path == "Q4/mmproj-Q8_0.gguf"
    assert model.projector.local_path == PurePosixPath("Q4/mmproj-m-Q8_0.gguf")  # beside the model


def test_a_projector_already_named_for_its_model_keeps_its_name(hub, client, tiny_gguf):
    hub.add_repo("bartowski/google_gemma-3-4b-it-GGUF", {
        "google_gemma-3-4b-it-Q4_K_M.gguf": tiny_gguf, "mmproj-google_gemma-3-4b-it-f16.gguf": b"GGUF1",
        "mmproj-google_gemma-3-4b-it-f32.gguf": b"GGUF2"})
    [model] = client.list_models("bartowski/google_gemma-3-4b-it-GGUF").models
    assert model.projector.name == "mmproj-google_gemma-3-4b-it-f16.gguf"


def test_a_download_brings_the_pair_into_one_folder_and_the_scan_pairs_them(vision, client, tmp_path,
                                                                           vision_files):
    progress = []
    q4 = by_quant(client.list_models(vision.repo_id).models)["Q4_K_M"][0]
    path = download_model(client, q4, tmp_path, on_progress=progress.append)

    assert path == tmp_path / Q4
    assert sorted(p.name for p in tmp_path.iterdir()) == [SAVED_PROJECTOR, Q4]  # nothing partial left
    assert (tmp_path / SAVED_PROJECTOR).read_bytes() == vision_files[F16_PROJECTOR]
    total = len(vision_files[Q4]) + len(vision_files[F16_PROJECTOR])
    assert (progress[-1].bytes_done, progress[-1].bytes_total) == (total, total)
    assert {p.file_name for p in progress} >= {SAVED_PROJECTOR}  # the projector's bytes are counted as it arrives

    assert projector_for(path) == tmp_path / SAVED_PROJECTOR
    [entry] = scan([tmp_path])
    assert entry.path == path and entry.reads_images and entry.projector == tmp_path / SAVED_PROJECTOR


def test_another_quantization_uses_the_projector_already_there(vision, hub, client, tmp_path):
    models = by_quant(client.list_models(vision.repo_id).models)
    download_model(client, models["Q4_K_M"][0], tmp_path)
    download_model(client, models["Q8_0"][0], tmp_path)
    assert len(hub.body_requests(F16_PROJECTOR)) == 1  # hashed, found the same, kept
    assert {entry.path.name: entry.projector.name for entry in scan([tmp_path])} == {
        Q4: SAVED_PROJECTOR, Q8: SAVED_PROJECTOR}


def test_a_damaged_projector_fails_the_download_and_a_retry_fetches_only_it(vision, hub, client, tmp_path):
    vision.files[F16_PROJECTOR].corrupt = True
    q4 = by_quant(client.list_models(vision.repo_id).models)["Q4_K_M"][0]
    try:
        download_model(client, q4, tmp_path)
        raise AssertionError("a damaged projector was accepted")
    except IntegrityError as exc:
        assert f"{SAVED_PROJECTOR} arrived damaged" in str(exc)
    assert (tmp_path / QUARANTINE_DIR / f"{SAVED_PROJECTOR}.corrupt").exists()
    assert not (tmp_path / Q4).exists()  # the model is not offered without the projector it came for
    assert scan([tmp_path]) == []

    vision.files[F16_PROJECTOR].corrupt = False
    assert download_model(client, q4, tmp_path) == tmp_path / Q4
    assert len(hub.body_requests(Q4)) == 1  # the verified model part was kept and continued from
    assert len(hub.body_requests(F16_PROJECTOR)) == 2


def test_cancelling_while_the_projector_arrives_leaves_nothing(vision, client, tmp_path):
    vision.files[F16_PROJECTOR].bytes_per_second = 20_000
    control = DownloadControl()

    def on_progress(progress):
        if progress.file_name == SAVED_PROJECTOR and progress.bytes_done > len(vision.files[Q4].data) + 4_096:
            control.cancel()

    q4 = by_quant(client.list_models(vision.repo_id).models)["Q4_K_M"][0]
    try:
        download_model(client, q4, tmp_path, on_progress=on_progress, control=control)
        raise AssertionError("the download was not cancelled")
    except DownloadCancelled:
        pass
    assert list(tmp_path.iterdir()) == []  # neither file, nor either's .part


# --- the Get models view ------------------------------------------------------------------------


def test_the_listing_marks_the_models_that_read_images(qtbot, make_view, vision, qwen):
    view = make_view()
    with qtbot.waitSignal(view.listingFinished, timeout=WAIT_MS):
        view.search(vision.repo_id)  # owner/name: its listing opens at once
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    items = model_items(view)
    assert {name: item.text(ModelColumn.IMAGES) for name, item in items.items()} == {Q4: READS_IMAGES, Q8: READS_IMAGES}
    tooltip = items[Q4].toolTip(ModelColumn.IMAGES)
    assert F16_PROJECTOR in tooltip and SAVED_PROJECTOR in tooltip and "reads images" in tooltip
    assert F16_PROJECTOR in items[Q4].toolTip(ModelColumn.FILE)
    assert view.models.headerItem().text(ModelColumn.IMAGES) == "Images"


def test_downloading_a_quantization_shows_and_brings_the_pair(qtbot, make_manager, make_view, vision, tmp_path):
    vision.files[F16_PROJECTOR].bytes_per_second = 40_000  # slow enough to see it arrive
    manager = make_manager()
    view = make_view(manager)
    with qtbot.waitSignal(view.listingFinished, timeout=WAIT_MS):
        view.search(vision.repo_id)
    qtbot.waitUntil(lambda: bool(model_items(view)), timeout=WAIT_MS)
    downloaded = []
    manager.modelDownloaded.connect(downloaded.append)

    row = start_download(qtbot, view, Q4)
    assert f"with its projector {SAVED_PROJECTOR}" in row.name_label.text()
    qtbot.waitUntil(lambda: row.status_label.text().endswith(f"· {SAVED_PROJECTOR}"), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: bool(downloaded), timeout=WAIT_MS)

    models = tmp_path / "models"
    assert downloaded == [models / Q4] and row.done
    assert sorted(p.name for p in models.iterdir()) == [SAVED_PROJECTOR, Q4]
    assert not any(p.name.endswith(PARTIAL_SUFFIX) for p in models.rglob("*"))
    assert [r for r in view.findChildren(DownloadRow)] == [row]  # one row: the pair is one download
