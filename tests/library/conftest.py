"""Fixtures for the Hugging Face tests: a fake Hub on 127.0.0.1 and an isolated HF home.

huggingface_hub reads HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE once, at import. The code
under test takes the endpoint explicitly (HubClient(endpoint=...)) and reads HF_ENDPOINT
and HF_HUB_OFFLINE again when a client is made, so the fixtures set the environment; the
token and cache paths huggingface_hub computed at import are patched to the test's folder
so no test can read the user's login or write into the user's cache.
"""

from __future__ import annotations

import pytest
from huggingface_hub import constants
from support.fake_hub import QWEN_REPO, FakeHub
from support.model_files.tiny_gguf import write_download_gguf
from support.model_files.tiny_vision import ensure_tiny_vision_pair, write_tiny_projector

from app.library.hub import HubClient, Timeouts

VISION_REPO = "ggml-org/tiny-vision-GGUF"  # the vision fixture's repository


@pytest.fixture(autouse=True)
def isolated_hf_home(tmp_path, monkeypatch):
    home = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HEARTH_HOME", str(tmp_path / "hearth-home"))
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(home / "stored_tokens"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return home


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> bytes:
    """A small valid llama-architecture GGUF (64 KiB of weights), as bytes."""
    path = write_download_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    return path.read_bytes()


@pytest.fixture
def hub():
    with FakeHub() as server:
        yield server


@pytest.fixture(scope="session")
def split_parts(tiny_gguf) -> list[bytes]:
    """Three parts of a split model, together the size of `tiny_gguf`; each begins with the
    GGUF magic, as real parts do."""
    return [tiny_gguf[:30_000], b"GGUF" + tiny_gguf[30_004:50_000], b"GGUF" + tiny_gguf[50_004:]]


@pytest.fixture
def qwen(hub, tiny_gguf, split_parts):
    """A repo shaped like a real one: three quants, one of them split (a text model: no projector)."""
    return hub.add_repo(QWEN_REPO, {
        "README.md": b"# Qwen3 0.6B GGUF\n",
        "Qwen3-0.6B-Q4_K_M.gguf": tiny_gguf,
        "Qwen3-0.6B-IQ2_XS.gguf": tiny_gguf[:40_000],
        "BF16/Qwen3-0.6B-BF16-00001-of-00003.gguf": split_parts[0],
        "BF16/Qwen3-0.6B-BF16-00002-of-00003.gguf": split_parts[1],
        "BF16/Qwen3-0.6B-BF16-00003-of-00003.gguf": split_parts[2],
    }, downloads=5000, likes=42)


@pytest.fixture(scope="session")
def vision_files(tmp_path_factory) -> dict[str, bytes]:
    """A vision repository's files, as ggml-org names them: two quantizations of the tiny
    vision model (tiny_vision.py) and its projector at two precisions, all real GGUFs."""
    pair = ensure_tiny_vision_pair()
    folder = tmp_path_factory.mktemp("vision-repo")
    q8_projector = write_tiny_projector(folder / "q8.gguf").read_bytes() + b"\0" * 64  # other bytes, same header
    model = pair.model.read_bytes()
    return {
        "tiny-vision-Q4_K_M.gguf": model,
        "tiny-vision-Q8_0.gguf": model + b"\0" * 32,
        "mmproj-model-Q8_0.gguf": q8_projector,
        "mmproj-model-f16.gguf": pair.projector.read_bytes(),
    }


@pytest.fixture
def vision(hub, vision_files):
    """A vision model's repository: each quantization comes with the f16 projector."""
    return hub.add_repo(VISION_REPO, {"README.md": b"# Tiny vision\n", **vision_files}, downloads=300, likes=3)


@pytest.fixture
def client(hub) -> HubClient:
    return HubClient(endpoint=hub.url, timeouts=Timeouts(connect=2.0, read=2.0))
