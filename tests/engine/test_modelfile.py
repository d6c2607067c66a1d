"""GGUF inspection: the real Gemma file, and every way a file can be bad."""

from __future__ import annotations

import struct

import pytest

from app.engine.modelfile import ModelFileError, inspect_model


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
