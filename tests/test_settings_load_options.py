"""Per-model load options in the settings file: flash attention, the K and V cache types, mmap
and mlock are kept per model, written as words a person can edit, and a value that cannot be
read falls back to its default and is logged."""

from __future__ import annotations

import logging

from support.settings_file import settings_at

from app.engine.types import FlashAttention, KvCacheType, ModelSettings

MODEL = "gemma-3-270m-q4_k_m.gguf"


def test_load_options_are_kept_per_model_across_a_restart(tmp_path):
    chosen = ModelSettings(flash_attn=FlashAttention.OFF, kv_type_k=KvCacheType.Q8_0, kv_type_v=KvCacheType.Q4_0,
                           use_mmap=False, use_mlock=True, n_ctx=2048)
    first = settings_at(tmp_path / "hearth.ini")
    first.save_model_settings(MODEL, chosen)
    first.save_model_settings("other.gguf", ModelSettings(flash_attn=FlashAttention.ON))
    first.sync()

    again = settings_at(tmp_path / "hearth.ini")
    assert again.model_settings(MODEL) == chosen
    assert again.model_settings("other.gguf").flash_attn is FlashAttention.ON
    assert again.model_settings("other.gguf").kv_type_v is KvCacheType.F16
    text = (tmp_path / "hearth.ini").read_text()
    assert "flash_attn=off" in text and "kv_type_v=q4_0" in text and "use_mlock=true" in text


def test_a_file_from_before_load_options_reads_as_the_defaults(tmp_path):
    (tmp_path / "hearth.ini").write_text(f"[model_settings]\n{MODEL}\\n_ctx=4096\n")
    read = settings_at(tmp_path / "hearth.ini").model_settings(MODEL)
    assert read.n_ctx == 4096
    assert (read.flash_attn, read.kv_type_k, read.kv_type_v, read.use_mmap, read.use_mlock) == (
        FlashAttention.AUTO, KvCacheType.F16, KvCacheType.F16, True, False)


def test_unreadable_load_options_fall_back_to_the_defaults_and_are_logged(tmp_path, caplog):
    (tmp_path / "hearth.ini").write_text(
        f"[model_settings]\n{MODEL}\\flash_attn=sometimes\n{MODEL}\\kv_type_k=q2_k\n{MODEL}\\kv_type_v=Q8_0\n"
        f"{MODEL}\\use_mmap=maybe\n{MODEL}\\use_mlock=1\n")
    with caplog.at_level(logging.WARNING, logger="app.owners.settings"):
        read = settings_at(tmp_path / "hearth.ini").model_settings(MODEL)
    assert read == ModelSettings(kv_type_v=KvCacheType.Q8_0, use_mlock=True)  # hand-typed case and 1 read
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "flash_attn 'sometimes'" in logged and "kv_type_k 'q2_k'" in logged and "use_mmap 'maybe'" in logged


def test_a_stored_number_hearth_cannot_load_with_reads_as_its_default_and_is_logged(tmp_path, caplog):
    (tmp_path / "hearth.ini").write_text(
        f"[model_settings]\n{MODEL}\\n_ctx=10\n{MODEL}\\gpu_layers=-1\n{MODEL}\\cpu_threads=lots\n")
    with caplog.at_level(logging.WARNING, logger="app.owners.settings"):
        read = settings_at(tmp_path / "hearth.ini").model_settings(MODEL)
    assert (read.n_ctx, read.gpu_layers, read.cpu_threads) == (None, None, None)
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "n_ctx '10'" in logged and "cpu_threads 'lots'" in logged and "gpu_layers" not in logged


def test_the_file_keeps_its_spellings_for_let_hearth_choose(tmp_path):
    first = settings_at(tmp_path / "hearth.ini")
    first.save_model_settings(MODEL, ModelSettings(template_override="{{ x }}"))
    first.save_model_settings(MODEL, ModelSettings())
    first.sync()
    text = (tmp_path / "hearth.ini").read_text()
    assert "n_ctx=0" in text and "gpu_layers=-1" in text and "cpu_threads=0" in text
    assert "use_mmap=true" in text and "kv_type_k=f16" in text and "template_override" not in text
