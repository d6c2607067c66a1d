"""Finding models: search, a repository's models grouped by quant, and what fits in memory."""

from __future__ import annotations

import hashlib

import psutil
import pytest
from support.fake_hub import QWEN_REPO

from app.library.errors import RepoNotFound
from app.library.hub import memory_fit
from app.library.quants import UNKNOWN_QUANT, by_quant, quant_of


@pytest.mark.parametrize(("path", "quant"), [
    ("Qwen3-0.6B-Q4_K_M.gguf", "Q4_K_M"),
    ("Llama-3.2-1B-Instruct-IQ2_XS.gguf", "IQ2_XS"),
    ("gemma-3-270m-it-IQ2_XXS.gguf", "IQ2_XXS"),
    ("phi-2.Q5_K_S.gguf", "Q5_K_S"),
    ("tinyllama-1.1b-f16.gguf", "F16"),
    ("Qwen3-0.6B-BF16.gguf", "BF16"),
    ("model-fp32.gguf", "F32"),
    ("gemma-3-1b-it-q4_0.gguf", "Q4_0"),
    ("Meta-Llama-3-8B-Q4_0_4_4.gguf", "Q4_0_4_4"),
    ("Qwen3-30B-A3B-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"),
    ("gpt-oss-20b-MXFP4.gguf", "MXFP4"),
    ("Q8_0/Big-Model-Q8_0-00001-of-00004.gguf", "Q8_0"),
    ("Q3_K_L/Big-Model-00001-of-00004.gguf", "Q3_K_L"),
    ("plain-model.gguf", UNKNOWN_QUANT),
])
def test_quant_is_read_from_the_file_name(path, quant):
    assert quant_of(path) == quant


def test_search_returns_gguf_repositories_with_their_figures(hub, client):
    hub.add_repo("bartowski/Qwen3-0.6B-GGUF", {"a-Q8_0.gguf": b"x"}, downloads=900, likes=7)
    hub.add_repo("Qwen/Qwen3-0.6B-GGUF", {"a-Q8_0.gguf": b"x"}, downloads=5000, likes=42,
                 last_modified="2025-04-29T08:00:00.000Z")
    hub.add_repo("Qwen/Qwen3-0.6B", {"model.safetensors": b"x"}, tags=["safetensors"])
    hub.add_repo("someone/Llama-GGUF", {"a-Q8_0.gguf": b"x"})

    results = client.search("qwen3-0.6b")

    assert [r.repo_id for r in results] == ["Qwen/Qwen3-0.6B-GGUF", "bartowski/Qwen3-0.6B-GGUF"]
    top = results[0]
    assert (top.downloads, top.likes, top.gated, top.private) == (5000, 42, False, False)
    assert top.last_modified.isoformat().startswith("2025-04-29T08:00")
    search = next(r for r in hub.requests if r.path == "/api/models")
    assert search.query["filter"] == ["gguf"] and search.query["search"] == ["qwen3-0.6b"]


def test_search_by_owner_and_name(hub, client):
    hub.add_repo("bartowski/Qwen3-0.6B-GGUF", {"a-Q8_0.gguf": b"x"})
    hub.add_repo("Qwen/Qwen3-0.6B-GGUF", {"a-Q8_0.gguf": b"x"})
    assert [r.repo_id for r in client.search("Qwen/Qwen3-0.6B-GGUF")] == ["Qwen/Qwen3-0.6B-GGUF"]


def test_listing_groups_files_by_quant_with_sizes_and_sha256(qwen, client, tiny_gguf):
    listing = client.list_models(QWEN_REPO)

    assert listing.revision == qwen.sha
    groups = by_quant(listing.models)
    # Smallest first, equal sizes by name; the projector (mmproj) is no chat model.
    assert list(groups) == ["IQ2_XS", "BF16", "Q4_K_M"]
    q4 = groups["Q4_K_M"][0]
    assert q4.name == "Qwen3-0.6B-Q4_K_M.gguf"
    assert q4.size == len(tiny_gguf)
    assert q4.parts[0].sha256 == hashlib.sha256(tiny_gguf).hexdigest()


def test_split_model_is_listed_as_one_model_with_its_parts_in_order(qwen, client, tiny_gguf):
    bf16 = by_quant(client.list_models(QWEN_REPO).models)["BF16"]

    assert len(bf16) == 1
    model = bf16[0]
    assert [part.path for part in model.parts] == [
        f"BF16/Qwen3-0.6B-BF16-0000{i}-of-00003.gguf" for i in (1, 2, 3)
    ]
    assert model.name == "Qwen3-0.6B-BF16-00001-of-00003.gguf"
    assert model.size == len(tiny_gguf)


def test_split_model_with_a_missing_part_is_not_offered(hub, client, tiny_gguf):
    hub.add_repo("o/incomplete", {"m-Q4_K_M-00001-of-00002.gguf": tiny_gguf, "m-Q8_0.gguf": tiny_gguf})
    assert [m.quant for m in client.list_models("o/incomplete").models] == ["Q8_0"]


def test_find_model_by_quant_or_file(qwen, client):
    assert client.find_model(QWEN_REPO, quant="q4_k_m").name == "Qwen3-0.6B-Q4_K_M.gguf"
    assert client.find_model(QWEN_REPO, file="Qwen3-0.6B-BF16-00002-of-00003.gguf").quant == "BF16"
    with pytest.raises(RepoNotFound, match="has no Q2_K model. It has: .*Qwen3-0.6B-Q4_K_M.gguf"):
        client.find_model(QWEN_REPO, quant="Q2_K")
    with pytest.raises(RepoNotFound, match="several models; choose one"):
        client.find_model(QWEN_REPO)


def test_memory_fit_compares_with_available_ram_and_given_vram():
    available = psutil.virtual_memory().available
    small = memory_fit(10 * 1024**2)
    assert small.fits_ram and small.fits_vram is None
    assert small.needed_bytes > 10 * 1024**2

    huge = memory_fit(available * 2, vram_bytes=8 * 1024**3)
    assert not huge.fits_ram and not huge.fits_vram
    assert memory_fit(1024**3, vram_bytes=8 * 1024**3).fits_vram
