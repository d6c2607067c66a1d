"""`hearth chat` and `hearth serve` with the load flags, run as a user runs them (`python -m app …`
in a subprocess, under a HEARTH_HOME of their own): what llama.cpp was given is read back from
the log file, where llama.cpp's own lines land; a combination llama.cpp cannot build, and a
flag for a model on a server, are refused before anything loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.settings_file import settings_at

from app.__main__ import build_parser
from app.cli.args import UsageError
from app.cli.load_options import refuse_load_flags_for_server
from app.engine.types import FlashAttention, KvCacheType, ModelSettings
from app.store import ConversationStore

ROOT = Path(__file__).resolve().parents[1]
GREEDY = ["--temperature", "0", "--max-tokens", "3", "--ctx", "256"]
NEEDS_FLASH_ATTENTION = "a quantized V cache (q8_0) needs flash attention: give --flash-attn auto or on"


def hearth(home: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "HEARTH_HOME": str(home)})


def log_text(home: Path) -> str:
    path = home / "logs" / "hearth.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_chat_loads_with_the_cache_type_flash_attention_and_mmap_asked_for(tmp_path, gemma_path):
    result = hearth(tmp_path, "chat", gemma_path, "The capital of France is", *GREEDY, "--stats", "json",
                    "--kv-type", "q8_0", "--flash-attn", "on", "--no-mmap")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.strip()
    log = log_text(tmp_path)
    assert "K (q8_0)" in log and "V (q8_0)" in log and "load_mode = none" in log
    assert "cache=k=q8_0 v=q8_0 fa=on" in log
    stats = json.loads(result.stderr.decode().splitlines()[-1])
    assert stats["completion_tokens"] == 3 and stats["device"].startswith(("CPU (", "CUDA ("))


def test_chat_refuses_a_quantized_v_cache_without_flash_attention_before_loading(tmp_path, gemma_path):
    result = hearth(tmp_path, "chat", gemma_path, "Hi", "--kv-type", "q8_0", "--flash-attn", "off")
    assert result.returncode == 2
    assert NEEDS_FLASH_ATTENTION in result.stderr.decode()
    assert "llama" not in log_text(tmp_path)  # llama.cpp never started


def test_serve_refuses_it_before_taking_the_port(tmp_path, gemma_path):
    result = hearth(tmp_path, "serve", gemma_path, "--port", "0", "--kv-type-v", "q8_0", "--flash-attn", "off")
    assert result.returncode == 2 and NEEDS_FLASH_ATTENTION in result.stderr.decode()
    assert result.stdout == b""  # no address was ever printed


def test_load_flags_do_not_apply_to_a_model_on_a_server(tmp_path):
    result = hearth(tmp_path, "chat", "--server", "http://127.0.0.1:9/v1", "--model", "m", "Hi", "--kv-type", "q8_0")
    assert result.returncode == 2
    assert "--kv-type does not apply to a model on a server: the server chose it" in result.stderr.decode()
    for flag, named in ((["--flash-attn", "on"], "--flash-attn"), (["--kv-type-v", "f16"], "--kv-type-v"),
                        (["--no-mmap"], "--mmap/--no-mmap"), (["--mlock"], "--mlock/--no-mlock")):
        args = build_parser().parse_args(["chat", "--server", "http://127.0.0.1:9/v1", "--model", "m", "Hi", *flag])
        with pytest.raises(UsageError, match=f"^{named} does not apply to a model on a server"):
            refuse_load_flags_for_server(args)


def window_settings(home: Path, model: str, settings: ModelSettings) -> None:
    (home / "config").mkdir(parents=True, exist_ok=True)
    saved = settings_at(home / "config" / "hearth.ini")
    saved.save_model_settings(model, settings)
    saved.sync()


def conversation(home: Path, model: str) -> int:
    (home / "data").mkdir(parents=True, exist_ok=True)
    with ConversationStore(home / "data" / "conversations.sqlite3") as store:
        return store.create_conversation(model=model)


def test_chat_in_a_conversation_takes_the_windows_load_options_and_the_flags_over_them(tmp_path, gemma_path):
    window_settings(tmp_path, gemma_path.name, ModelSettings(kv_type_k=KvCacheType.Q8_0, kv_type_v=KvCacheType.Q8_0))
    cid = conversation(tmp_path, gemma_path.name)
    result = hearth(tmp_path, "chat", "--conversation", cid, "--model", gemma_path, "Hi", *GREEDY, "--kv-type-k", "q4_0")
    assert result.returncode == 0, result.stderr.decode()
    assert "K (q4_0)" in log_text(tmp_path) and "V (q8_0)" in log_text(tmp_path)


def test_chat_in_a_conversation_refuses_flash_attention_off_for_the_windows_quantized_v_cache(tmp_path, gemma_path):
    window_settings(tmp_path, gemma_path.name, ModelSettings(kv_type_v=KvCacheType.Q8_0, flash_attn=FlashAttention.ON))
    cid = conversation(tmp_path, gemma_path.name)
    result = hearth(tmp_path, "chat", "--conversation", cid, "--model", gemma_path, "Hi", "--flash-attn", "off")
    assert result.returncode == 2 and NEEDS_FLASH_ATTENTION in result.stderr.decode()
    with ConversationStore(tmp_path / "data" / "conversations.sqlite3") as store:
        assert store.messages(cid) == []  # refused before anything was stored
