"""Pairing a model with its projector (library/projectors.py) on real files: the tiny vision
pair (a real language model and a real gemma3 projector, tiny_vision.py), projectors written
for other widths, damaged copies, and folders laid out as users and Hugging Face lay them out."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support.model_files.tiny_gguf import write_tiny_gguf
from support.model_files.tiny_vision import ensure_tiny_vision_pair, write_tiny_projector

from app.images.image import ImageError
from app.library.projectors import check_pair, is_projector, projector_for


@pytest.fixture(scope="module")
def pair():
    return ensure_tiny_vision_pair()


def model_in(folder: Path, pair, name: str = "tiny-vision-Q4_K_M.gguf") -> Path:
    """The tiny vision model in `folder` under `name` (a link: the suite's own file)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    try:
        os.link(pair.model, target)
    except OSError:  # another file system
        target.symlink_to(pair.model)
    return target


def projector_in(folder: Path, pair, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    shutil.copyfile(pair.projector, target)
    return target


def other_width(folder: Path, name: str, width: int = 48) -> Path:
    """A real projector made for a model `width` wide (not the tiny model's 64)."""
    return write_tiny_projector(folder / name, projection_dim=width)


def test_a_model_alone_has_no_projector(pair, tmp_path):
    assert projector_for(model_in(tmp_path, pair)) is None


def test_the_projector_beside_the_model_is_its_projector(pair, tmp_path):
    model = model_in(tmp_path, pair)
    projector = projector_in(tmp_path, pair, "mmproj-model-f16.gguf")
    assert projector_for(model) == projector


def test_a_projector_in_another_folder_is_not_beside_it(pair, tmp_path):
    model = model_in(tmp_path / "models", pair)
    projector_in(tmp_path / "elsewhere", pair, "mmproj-tiny-vision-f16.gguf")
    projector_in(tmp_path / "models" / "sub", pair, "mmproj-tiny-vision-f16.gguf")
    assert projector_for(model) is None


def test_of_several_the_one_named_for_the_model_wins(pair, tmp_path):
    model = model_in(tmp_path, pair)
    projector_in(tmp_path, pair, "mmproj-model-f16.gguf")  # generic: shares no word with the model
    projector_in(tmp_path, pair, "mmproj-tiny-f16.gguf")  # shares one word
    named = projector_in(tmp_path, pair, "mmproj-tiny-vision-Q8_0.gguf")  # names it, though Q8_0
    assert projector_for(model) == named


def test_then_f16_then_q8_0_then_by_name_whatever_the_folder_s_order(pair, tmp_path):
    model = model_in(tmp_path, pair)
    for name in ("mmproj-tiny-vision-Q4_K_M.gguf", "mmproj-tiny-vision-Q8_0.gguf", "mmproj-tiny-vision-bf16.gguf"):
        projector_in(tmp_path, pair, name)
    assert projector_for(model).name == "mmproj-tiny-vision-Q8_0.gguf"
    f16 = projector_in(tmp_path, pair, "MMPROJ-tiny-vision-F16.gguf")  # any case
    assert projector_for(model) == f16


def test_each_model_in_a_shared_folder_gets_the_projector_that_fits_it(pair, tmp_path):
    """Two vision models' projectors side by side, and a text model: the widths decide."""
    model = model_in(tmp_path, pair)
    other_width(tmp_path, "mmproj-big-vision-f16.gguf")  # another model's, and ranked before ours
    ours = projector_in(tmp_path, pair, "mmproj-some-other-name-Q8_0.gguf")
    text_model = write_tiny_gguf(tmp_path / "big-vision-text-Q4_K_M.gguf")  # a text model: no embedding length
    assert projector_for(model) == ours
    assert projector_for(text_model) is None  # none fits it, none is named for it: a text model


def test_the_projector_named_for_the_model_that_does_not_fit_says_why(pair, tmp_path):
    model = model_in(tmp_path, pair)
    other_width(tmp_path, "mmproj-tiny-vision-f16.gguf")
    with pytest.raises(ImageError) as refused:
        projector_for(model)
    said = str(refused.value)
    assert "mmproj-tiny-vision-f16.gguf is not the projector of tiny-vision-Q4_K_M.gguf" in said
    assert "48 values wide" in said and "the model's embedding length is 64" in said


def test_another_model_s_projector_never_stands_in_for_the_one_named_for_it(pair, tmp_path):
    model = model_in(tmp_path, pair)
    other_width(tmp_path, "mmproj-tiny-vision-f16.gguf")  # named for it, made for another width
    projector_in(tmp_path, pair, "mmproj-model-f16.gguf")  # fits, but names no model
    with pytest.raises(ImageError, match="mmproj-tiny-vision-f16.gguf is not the projector of"):
        projector_for(model)
    ours = projector_in(tmp_path, pair, "mmproj-tiny-vision-Q8_0.gguf")  # a second one named for it, that fits
    assert projector_for(model) == ours


def test_a_damaged_projector_named_for_the_model_says_so(pair, tmp_path):
    model = model_in(tmp_path, pair)
    (tmp_path / "mmproj-tiny-vision-f16.gguf").write_bytes(pair.projector.read_bytes()[:1000])
    with pytest.raises(ImageError, match="projector can't be used: mmproj-tiny-vision-f16.gguf is truncated"):
        projector_for(model)


def test_a_damaged_stranger_beside_the_model_is_passed_over(pair, tmp_path):
    model = model_in(tmp_path, pair)
    (tmp_path / "mmproj-model-f16.gguf").write_bytes(b"GGUF but not much else")
    ours = projector_in(tmp_path, pair, "mmproj-model-Q8_0.gguf")
    assert projector_for(model) == ours


def test_the_chosen_projector_wins_and_is_checked(pair, tmp_path):
    model = model_in(tmp_path, pair)
    projector_in(tmp_path, pair, "mmproj-tiny-vision-f16.gguf")
    chosen = projector_in(tmp_path / "mine", pair, "my-projector.gguf")  # any name will do when chosen
    assert projector_for(model, str(chosen)) == chosen


def test_a_chosen_projector_that_is_missing_damaged_or_wrong_is_refused(pair, tmp_path):
    model = model_in(tmp_path, pair)
    projector_in(tmp_path, pair, "mmproj-tiny-vision-f16.gguf")  # a good one beside: the choice still wins
    with pytest.raises(ImageError, match=r"The projector .*nowhere\.gguf was not found"):
        projector_for(model, str(tmp_path / "nowhere.gguf"))
    (tmp_path / "cut.gguf").write_bytes(pair.projector.read_bytes()[:-100])
    with pytest.raises(ImageError, match="cut.gguf is truncated: its weights end"):
        projector_for(model, str(tmp_path / "cut.gguf"))
    with pytest.raises(ImageError, match="is not an image projector: it is a 'llama' model file"):
        projector_for(model, str(model))
    wide = other_width(tmp_path, "wide.gguf", width=128)
    with pytest.raises(ImageError) as refused:
        projector_for(model, str(wide))
    assert "wide.gguf is not the projector of tiny-vision-Q4_K_M.gguf" in str(refused.value)
    assert "128 values wide" in str(refused.value) and "embedding length is 64" in str(refused.value)


def test_check_pair_returns_the_projector_s_header(pair):
    info = check_pair(pair.model, pair.projector)
    assert info.output_width == pair.n_embd and info.image_tokens == pair.image_tokens


def test_a_hugging_face_snapshot_s_root_projector_goes_with_models_in_its_folders(pair, tmp_path):
    snapshot = tmp_path / "hub" / "models--org--tiny-vision-GGUF" / "snapshots" / ("a" * 40)
    model = model_in(snapshot / "Q4_K_M", pair)
    root = projector_in(snapshot, pair, "mmproj-F16.gguf")
    assert projector_for(model) == root
    beside = projector_in(snapshot / "Q4_K_M", pair, "mmproj-Q8_0.gguf")
    assert projector_for(model) == beside  # its own folder first


def test_is_projector_by_name_or_by_header(pair, tmp_path):
    assert is_projector(pair.projector)
    assert is_projector(tmp_path / "mmproj-not-even-there.gguf")  # a name says it
    renamed = projector_in(tmp_path, pair, "vision-tower.gguf")
    assert is_projector(renamed)  # its header says clip
    assert not is_projector(pair.model)
    (tmp_path / "garbage.gguf").write_bytes(b"not a model at all" * 10)
    assert not is_projector(tmp_path / "garbage.gguf")
