"""GGUF inspection: the real Gemma file, every way a file can be bad, and one header walk per file version."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from app.common.text import printable
from app.engine.gguf.modelfile import ModelFileError
from app.engine.gguf.reading import inspect_model


def test_inspects_gemma_without_loading(gemma_path):
    info = inspect_model(gemma_path)
    assert info.architecture == "gemma3"
    assert info.name == "Gemma 3 270m" and info.size_label == "270M"
    assert info.quantization == "Q4_K_M"
    assert 260_000_000 < info.parameter_count < 280_000_000
    assert info.context_length == 32768 and info.block_count == 18
    assert info.bos.text == "<bos>" and info.eos.text == "<eos>"
    assert {t.text for t in info.end_of_turn} >= {"<eos>", "<end_of_turn>"}
    assert info.special_tokens["<end_of_turn>"] == 106
    assert not info.has_chat_template
    assert info.file_size == gemma_path.stat().st_size


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def _header(version=3, tensors=0, kvs=0):
    return b"GGUF" + struct.pack("<IQQ", version, tensors, kvs)


def _kv_string(key: str, value: str) -> bytes:
    k, v = key.encode(), value.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<I", 8) + struct.pack("<Q", len(v)) + v


def test_missing_file(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        inspect_model(tmp_path / "nope.gguf")


def test_not_gguf(tmp_path):
    with pytest.raises(ModelFileError, match="not a GGUF model file"):
        inspect_model(_write(tmp_path / "x.gguf", b"<html>not a model</html>" * 10))


def test_empty_file(tmp_path):
    with pytest.raises(ModelFileError, match="not a GGUF"):
        inspect_model(_write(tmp_path / "x.gguf", b""))


def test_unsupported_version(tmp_path):
    with pytest.raises(ModelFileError, match="version 7"):
        inspect_model(_write(tmp_path / "x.gguf", _header(version=7) + b"\0" * 64))


def test_absurd_tensor_count(tmp_path):
    with pytest.raises(ModelFileError, match="corrupt header"):
        inspect_model(_write(tmp_path / "x.gguf", _header(tensors=2**60) + b"\0" * 64))


def test_absurd_metadata_count(tmp_path):
    with pytest.raises(ModelFileError, match="corrupt header"):
        inspect_model(_write(tmp_path / "x.gguf", _header(kvs=2**40) + b"\0" * 64))


def test_absurd_string_length_is_truncation(tmp_path):
    body = struct.pack("<Q", 2**50) + b"general.architecture"
    with pytest.raises(ModelFileError, match="truncated"):
        inspect_model(_write(tmp_path / "x.gguf", _header(kvs=1) + body))


@pytest.mark.parametrize("cut", [4096, 100_000, 1_000_000, 3_000_000])  # inside the 262k-token vocabulary
def test_truncated_header(gemma_path, tmp_path, cut):
    with gemma_path.open("rb") as source:
        head = source.read(cut)
    with pytest.raises(ModelFileError, match="truncated"):
        inspect_model(_write(tmp_path / "cut.gguf", head))


def test_truncated_weights(gemma_path, tmp_path):
    with gemma_path.open("rb") as source:
        data = source.read(gemma_path.stat().st_size - 1_000_000)
    with pytest.raises(ModelFileError, match=r"cut\.gguf is truncated: its weights end at byte [\d,]+, past the end of the file"):
        inspect_model(_write(tmp_path / "cut.gguf", data))


def test_unknown_architecture(tmp_path):
    data = _header(tensors=0, kvs=1) + _kv_string("general.architecture", "hal9000")
    with pytest.raises(ModelFileError, match="'hal9000'.*does not know"):
        inspect_model(_write(tmp_path / "x.gguf", data))


def test_vocab_only_file_is_refused(tmp_path):
    data = _header(tensors=0, kvs=1) + _kv_string("general.architecture", "llama")
    with pytest.raises(ModelFileError, match="holds no weights"):
        inspect_model(_write(tmp_path / "x.gguf", data))


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ModelFileError, match="Not a file"):
        inspect_model(tmp_path)


def test_an_unknown_metadata_type_is_reported_as_corruption_with_the_file_name(tmp_path):
    body = struct.pack("<Q", 3) + b"key" + struct.pack("<I", 99) + b"\0" * 64
    with pytest.raises(ModelFileError, match=r"x\.gguf is truncated or corrupt: the metadata entry 'key' has an unknown"):
        inspect_model(_write(tmp_path / "x.gguf", _header(kvs=1) + body))


# --- what there is to read, and what a message shows of it ---------------------------------------


def test_a_link_loop_a_link_to_nothing_and_a_denied_file_each_say_so(monkeypatch, tmp_path):
    (tmp_path / "a.gguf").symlink_to("b.gguf")
    (tmp_path / "b.gguf").symlink_to("a.gguf")
    with pytest.raises(ModelFileError, match=r"^a\.gguf is a symbolic link that leads back to itself \(a link loop\)\.$"):
        inspect_model(tmp_path / "a.gguf")
    (tmp_path / "gone.gguf").symlink_to(tmp_path / "deleted.gguf")
    with pytest.raises(ModelFileError, match=r"^gone\.gguf is a link to a file that is not there\.$"):
        inspect_model(tmp_path / "gone.gguf")

    # Tests may run as root, whom permissions do not stop: stat() is denied as the OS would.
    denied = _write(tmp_path / "secret.gguf", b"GGUF" + b"\0" * 64)
    real_stat = Path.stat

    def stat(self, **options):
        if self == denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, **options)

    monkeypatch.setattr(Path, "stat", stat)
    with pytest.raises(ModelFileError, match=r"^Hearth may not read secret\.gguf \(permission denied\)\.$"):
        inspect_model(denied)


def test_a_file_name_that_is_not_utf8_is_shown_and_printed_as_json(gemma_path, tmp_path):
    odd = tmp_path / os.fsdecode(b"mod\xe8le.gguf")
    os.link(gemma_path, odd)
    info = inspect_model(odd)
    assert json.loads(json.dumps(info.to_json(), ensure_ascii=False).encode("utf-8"))["path"].endswith("mod\ufffdle.gguf")
    result = subprocess.run([sys.executable, "-m", "app", "inspect", os.fsencode(odd)], capture_output=True,
                            timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["architecture"] == "gemma3"

    broken = _write(tmp_path / os.fsdecode(b"cass\xe9.gguf"), b"not a model" * 10)
    with pytest.raises(ModelFileError, match="^cass\ufffd\\.gguf is not a GGUF model file"):
        inspect_model(broken)


def test_printable_keeps_file_text_to_one_short_line():
    assert printable("plain name.gguf") == "plain name.gguf"
    assert printable("a\nb\x1b[31m\udcffc") == "a\ufffdb\ufffd[31m\ufffdc"
    assert printable("x" * 1000, limit=10) == "x" * 9 + "…"
    assert printable("x" * 1000, limit=None) == "x" * 1000


def test_a_reader_bug_on_one_odd_file_is_a_message_and_a_log_entry(monkeypatch, caplog, gemma_path, request):
    from app.engine.gguf import reading

    def broken(*args):
        raise ZeroDivisionError("a bug nobody has found yet")

    monkeypatch.setattr(reading, "model_info", broken)
    reading._reading.cache_clear()  # an earlier test's reading of the file is not this one's
    request.addfinalizer(reading._reading.cache_clear)
    with pytest.raises(ModelFileError, match=r"^Hearth could not read gemma-3-270m-q4_k_m\.gguf: it is damaged in a way"):
        inspect_model(gemma_path)
    assert "ZeroDivisionError" in caplog.text


# --- one walk per file version -------------------------------------------------------------------


@pytest.fixture
def walks(monkeypatch) -> list[int]:
    """The header walks made while the test runs: the size of the file each one read."""
    from app.engine.gguf import header

    walked: list[int] = []
    real_walk = header.walk

    def counting_walk(buf):
        walked.append(len(buf))
        return real_walk(buf)

    monkeypatch.setattr(header, "walk", counting_walk)
    return walked


def test_one_load_walks_the_header_once(gemma_path, tmp_path, walks):
    """The plan (model_shape), the engine's own inspection and the fingerprint its saved
    states are keyed by all read the one walk of the file's header."""
    from support.reply_events import collect

    from app.engine.gguf.reading import model_shape
    from app.engine.kv.cache import StateCache
    from app.engine.llama.generator import Engine
    from app.engine.sampling import SamplingParams
    from app.engine.types import LoadOptions

    model = tmp_path / "linked.gguf"  # a path no earlier test has read: nothing cached for it yet
    os.link(gemma_path, model)
    assert model_shape(model).n_layer == 18 and len(walks) == 1
    engine = Engine(model, LoadOptions(n_ctx=256), states=StateCache(tmp_path / "states"))
    try:
        collect(engine.stream([{"role": "user", "content": "Hi"}], SamplingParams(temperature=0.0, max_tokens=2),
                              conversation_id=1))
    finally:
        engine.close()  # saves conversation 1's state, keyed by the file's fingerprint
    assert [p.name for p in (tmp_path / "states").iterdir()] == ["conversation-1.kvstate"]
    assert len(walks) == 1


def test_a_file_changed_on_disk_is_walked_again(tmp_path, walks):
    from support.model_files.gguf_corpus import tiny_llama

    from app.engine.gguf.fingerprint import model_fingerprint
    from app.engine.gguf.reading import model_shape

    path = tiny_llama(name="Before").write(tmp_path / "model.gguf")
    first = model_fingerprint(path)
    assert inspect_model(path).name == "Before" and model_shape(path).file_size == path.stat().st_size
    assert len(walks) == 1

    tiny_llama(name="After, a longer name").write(path)  # a new size
    assert inspect_model(path).name == "After, a longer name" and model_shape(path).file_size == path.stat().st_size
    assert model_fingerprint(path) != first
    assert len(walks) == 2

    status = path.stat()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))  # the same size, touched
    inspect_model(path)
    model_shape(path)
    assert len(walks) == 3
