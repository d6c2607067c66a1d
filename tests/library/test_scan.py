"""Model discovery on real files: the real Gemma (linked, not copied), garbage, HF cache layouts."""

from __future__ import annotations

import os
from pathlib import Path

from support.model_files.tiny_vision import ensure_tiny_vision_pair, write_tiny_projector
from support.settings_file import settings_at

from app.library import scan as scan_module
from app.library.scan import MAX_DEPTH, model_folders, scan
from app.owners import paths


def _link(src: Path, dest: Path) -> Path:
    """A 253 MB model in many places without 253 MB each: a hard link, else a symlink."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        dest.symlink_to(src)
    return dest


def _garbage(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a model, just some bytes " * 50)
    return path


def _names(entries):
    return [entry.path.name for entry in entries]


def test_lists_a_model_with_its_header(gemma_path, tmp_path):
    model = _link(gemma_path, tmp_path / "models" / "gemma.gguf")
    [entry] = scan([tmp_path / "models"])
    assert entry.path == model and entry.usable and entry.error is None
    assert entry.info.architecture == "gemma3" and entry.info.quantization == "Q4_K_M"
    assert entry.size == gemma_path.stat().st_size
    assert entry.origin == str(tmp_path / "models")


def test_a_corrupt_file_is_listed_with_its_reason(tmp_path):
    _garbage(tmp_path / "broken.gguf")
    [entry] = scan([tmp_path])
    assert not entry.usable and entry.info is None
    assert "not a GGUF model file" in entry.error
    assert entry.name == "broken.gguf"


def test_skips_partial_downloads_quarantine_and_hidden_folders(gemma_path, tmp_path):
    _link(gemma_path, tmp_path / "good.gguf")
    _garbage(tmp_path / "downloading.gguf.part")
    _garbage(tmp_path / "assembling.gguf.partial")
    _garbage(tmp_path / "quarantine" / "bad.gguf")
    _garbage(tmp_path / ".trash" / "old.gguf")
    _garbage(tmp_path / "notes.txt")
    assert _names(scan([tmp_path])) == ["good.gguf"]


def test_depth_is_bounded(tmp_path):
    shallow = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_DEPTH)], "deep-enough.gguf")
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_DEPTH + 1)], "too-deep.gguf")
    _garbage(shallow)
    _garbage(deep)
    assert _names(scan([tmp_path])) == ["deep-enough.gguf"]


def test_split_models_list_the_first_part_with_the_total_size(gemma_path, tmp_path):
    first = _link(gemma_path, tmp_path / "big-00001-of-00002.gguf")
    _garbage(tmp_path / "big-00002-of-00002.gguf")
    [entry] = scan([tmp_path])
    assert entry.path == first and entry.usable
    assert entry.size == gemma_path.stat().st_size + (tmp_path / "big-00002-of-00002.gguf").stat().st_size


def test_a_split_model_missing_a_part_says_which(gemma_path, tmp_path):
    _link(gemma_path, tmp_path / "big-00001-of-00003.gguf")
    _garbage(tmp_path / "big-00003-of-00003.gguf")
    [entry] = scan([tmp_path])
    assert not entry.usable
    assert entry.error == "Part 2 of 3 (big-00002-of-00003.gguf) is missing."


def test_the_same_file_twice_is_listed_once(gemma_path, tmp_path):
    model = _link(gemma_path, tmp_path / "a" / "gemma.gguf")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "alias.gguf").symlink_to(model)
    entries = scan([tmp_path / "a", tmp_path / "b", tmp_path / "a"])
    assert [entry.path for entry in entries] == [model]


def test_added_files_are_listed_on_their_own(gemma_path, tmp_path):
    model = _link(gemma_path, tmp_path / "elsewhere" / "gemma.gguf")
    _garbage(tmp_path / "elsewhere" / "neighbour.gguf")  # the file's folder is not scanned
    entries = scan([], files=[model, tmp_path / "gone.gguf"])
    assert [entry.path for entry in entries] == [model]
    assert entries[0].origin == str(tmp_path / "elsewhere")


def test_hugging_face_cache_layout(gemma_path, tmp_path):
    cache = tmp_path / "hub"
    repo = cache / "models--google--gemma-3-270m-GGUF"
    blob = _link(gemma_path, repo / "blobs" / "9f86d081884c7d659a2feaa0c55ad015")
    snapshot = repo / "snapshots" / "0123abcd"
    (snapshot / "q4").mkdir(parents=True)
    listed = snapshot / "q4" / "gemma-3-270m-Q4_K_M.gguf"
    listed.symlink_to(os.path.relpath(blob, listed.parent))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")

    [entry] = scan([cache])
    assert entry.path == listed  # the snapshot's name, not the blob's hash
    assert entry.origin == "Hugging Face · google/gemma-3-270m-GGUF"
    assert entry.usable and entry.size == gemma_path.stat().st_size


def test_model_folders_in_order(monkeypatch, tmp_path):
    cache = tmp_path / "hub"
    cache.mkdir()
    extra = tmp_path / "extra"
    extra.mkdir()
    monkeypatch.setattr(scan_module, "hf_cache_dir", lambda: cache)
    homes = paths.model_homes()
    folders = model_folders(homes, [extra, tmp_path / "missing", extra])
    assert folders == [homes.shipped, homes.user, extra, cache]


def test_origin_labels_name_hearths_own_folders(gemma_path):
    homes = paths.model_homes()
    entries = scan(model_folders(homes), homes=homes)
    assert {entry.origin for entry in entries} <= {"Hearth", "Your models"}
    assert gemma_path in [entry.path for entry in entries]


def test_rescans_reuse_inspections_until_the_file_changes(monkeypatch, gemma_path, tmp_path):
    model = _link(gemma_path, tmp_path / "gemma.gguf")
    corrupt = _garbage(tmp_path / "zz-corrupt.gguf")
    calls = []
    real = scan_module.inspect_model
    monkeypatch.setattr(scan_module, "inspect_model", lambda path: calls.append(path) or real(path))

    first = scan([tmp_path])
    again = scan([tmp_path])
    assert calls == [model, corrupt]
    assert again == first

    corrupt.write_bytes(b"different garbage, different size")
    scan([tmp_path])
    assert calls == [model, corrupt, corrupt]


# --- vision models and their projectors ---------------------------------------------------------


def test_a_folder_s_projectors_are_not_listed_and_its_vision_model_is_marked(gemma_path, tmp_path):
    pair = ensure_tiny_vision_pair()
    model = _link(pair.model, tmp_path / "tiny-vision-Q4_K_M.gguf")
    projector = _link(pair.projector, tmp_path / "mmproj-tiny-vision-f16.gguf")
    _link(pair.projector, tmp_path / "vision-tower.gguf")  # a projector by its header alone
    (tmp_path / "mmproj-cut.gguf").write_bytes(pair.projector.read_bytes()[:500])  # damaged: still not a model
    _link(gemma_path, tmp_path / "gemma.gguf")  # a text model beside them

    entries = _by_name(scan([tmp_path]))
    assert sorted(entries) == ["gemma.gguf", "tiny-vision-Q4_K_M.gguf"]
    vision = entries[model.name]
    assert vision.usable and vision.reads_images and vision.projector == projector
    assert vision.projector_problem is None
    assert not entries["gemma.gguf"].reads_images and entries["gemma.gguf"].projector_problem is None


def test_a_projector_named_for_a_model_that_does_not_fit_is_said_on_the_model(tmp_path):
    pair = ensure_tiny_vision_pair()
    _link(pair.model, tmp_path / "tiny-vision-Q4_K_M.gguf")
    write_tiny_projector(tmp_path / "mmproj-tiny-vision-f16.gguf", projection_dim=48)
    [entry] = scan([tmp_path])
    assert entry.usable and not entry.reads_images
    assert "is not the projector of tiny-vision-Q4_K_M.gguf" in entry.projector_problem
    assert "48 values wide" in entry.projector_problem and "embedding length is 64" in entry.projector_problem


def test_a_vision_model_in_the_hugging_face_cache_finds_its_projector(tmp_path):
    pair = ensure_tiny_vision_pair()
    snapshot = tmp_path / "models--ggml-org--tiny-vision-GGUF" / "snapshots" / ("b" * 40)
    _link(pair.model, snapshot / "tiny-vision-Q8_0.gguf")
    projector = _link(pair.projector, snapshot / "mmproj-model-f16.gguf")
    [entry] = scan([tmp_path])
    assert entry.origin == "Hugging Face · ggml-org/tiny-vision-GGUF" and entry.projector == projector


def test_a_projector_the_user_added_as_a_file_is_listed_saying_what_it_is(tmp_path):
    pair = ensure_tiny_vision_pair()
    added = _link(pair.projector, tmp_path / "picked" / "mmproj-tiny-vision-f16.gguf")
    [entry] = scan([], files=[added])
    assert not entry.usable
    assert entry.error == ("mmproj-tiny-vision-f16.gguf is a vision projector (mmproj): it goes with a language "
                           "model and cannot be chatted with on its own.")


# --- one bad entry hides nothing ----------------------------------------------------------------


def _by_name(entries):
    return {entry.path.name: entry for entry in entries}


def _hostile_folder(gemma_path: Path, folder: Path) -> Path:
    """A good model beside a link loop, a link to nothing, and a name that is not UTF-8."""
    model = _link(gemma_path, folder / "gemma.gguf")
    (folder / "loop-a.gguf").symlink_to("loop-b.gguf")
    (folder / "loop-b.gguf").symlink_to("loop-a.gguf")
    (folder / "dangling.gguf").symlink_to(folder / "deleted-long-ago.gguf")
    _garbage(folder / os.fsdecode(b"caf\xe9-latin1.gguf"))
    return model


def test_a_link_loop_is_its_own_row_and_hides_no_other_model(gemma_path, tmp_path):
    model = _hostile_folder(gemma_path, tmp_path / "models")
    entries = _by_name(scan([tmp_path / "models"]))
    assert entries["gemma.gguf"].usable and entries["gemma.gguf"].path == model
    for name in ("loop-a.gguf", "loop-b.gguf"):
        assert not entries[name].usable
        assert entries[name].error == f"{name} is a symbolic link that leads back to itself (a link loop)."
    assert entries["dangling.gguf"].error == "dangling.gguf is a link to a file that is not there."


def test_a_name_that_is_not_utf8_is_shown_with_a_replacement_character(gemma_path, tmp_path):
    _hostile_folder(gemma_path, tmp_path / "models")
    [entry] = [e for e in scan([tmp_path / "models"]) if e.path.name.startswith("caf")]
    assert entry.name == "caf\ufffd-latin1.gguf"  # Qt would silently drop the byte; JSON would refuse it
    assert entry.error.startswith("caf\ufffd-latin1.gguf is not a GGUF model file")
    assert entry.name.encode("utf-8") and entry.error.encode("utf-8")


def test_a_folder_added_under_a_parent_hearth_may_not_read_is_skipped(monkeypatch, gemma_path, tmp_path):
    # Tests may run as root, whom file permissions do not stop, so the denial is raised where
    # the operating system raises it for anyone else: stat() on the folder.
    locked = tmp_path / "locked" / "models"
    locked.mkdir(parents=True)
    _deny(monkeypatch, locked)
    folders = model_folders(paths.model_homes(), [locked, tmp_path])
    assert locked not in folders and tmp_path in folders


def test_a_file_hearth_may_not_read_is_its_own_row(monkeypatch, gemma_path, tmp_path):
    _link(gemma_path, tmp_path / "gemma.gguf")
    secret = _garbage(tmp_path / "secret.gguf")
    _deny(monkeypatch, secret)  # as above: root is never denied for real
    entries = _by_name(scan([tmp_path]))
    assert entries["gemma.gguf"].usable
    assert entries["secret.gguf"].error == "Hearth may not read secret.gguf (permission denied)."


def _deny(monkeypatch, denied: Path) -> None:
    real_stat = Path.stat

    def stat(self, *, follow_symlinks=True):
        if self == denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(Path, "stat", stat)


def test_a_file_that_vanishes_mid_scan_is_left_out(monkeypatch, gemma_path, tmp_path):
    _link(gemma_path, tmp_path / "a-gemma.gguf")
    doomed = _garbage(tmp_path / "b-doomed.gguf")
    real = scan_module.inspect_model

    def inspect_then_delete(path):  # the first inspection deletes a file already listed
        doomed.unlink(missing_ok=True)
        return real(path)

    monkeypatch.setattr(scan_module, "inspect_model", inspect_then_delete)
    assert _names(scan([tmp_path])) == ["a-gemma.gguf"]


def test_an_unforeseen_failure_listing_one_file_is_that_files_row(monkeypatch, gemma_path, tmp_path):
    _link(gemma_path, tmp_path / "gemma.gguf")
    odd = _garbage(tmp_path / "odd.gguf")
    real = scan_module._INSPECTIONS.inspect

    def inspect(path):  # stands in for a bug nobody has found yet
        if path == odd:
            raise RuntimeError("x" * 10_000)
        return real(path)

    monkeypatch.setattr(scan_module._INSPECTIONS, "inspect", inspect)
    entries = _by_name(scan([tmp_path]))
    assert entries["gemma.gguf"].usable
    assert entries["odd.gguf"].error.startswith("Hearth could not list odd.gguf: xxx")
    assert len(entries["odd.gguf"].error) < 200


def test_the_model_picker_lists_every_model_beside_a_link_loop(qtbot, gemma_path, tmp_path):
    from PySide6.QtCore import Qt

    from app.ui.models.picker import Column, ModelPicker

    folder = tmp_path / "models"
    model = _hostile_folder(gemma_path, folder)
    settings = settings_at(tmp_path / "hearth.ini")
    settings.extra_folders = [folder]
    picker = ModelPicker(settings)
    qtbot.addWidget(picker)
    with qtbot.waitSignal(picker.scanFinished, timeout=10_000):
        pass
    # The shipped model in Hearth's own folder, its copy, and the four bad entries.
    assert picker.status_label.text() == "2 models, 4 that can't be used"
    assert picker.model.row_of(gemma_path) is not None
    names = [picker.model.data(picker.model.index(row, Column.NAME)) for row in range(picker.model.rowCount())]
    assert "caf\ufffd-latin1.gguf" in names and "loop-a.gguf" in names
    loop_row = names.index("loop-a.gguf")
    tooltip = picker.model.data(picker.model.index(loop_row, Column.NAME), Qt.ToolTipRole)
    assert "link loop" in tooltip
    picker.view.selectRow(loop_row)
    assert not picker.load_button.isEnabled() and "link loop" in picker.details.text()
    assert picker.model.row_of(model) is not None
