"""Valid GGUF files written through gguf-py's own GGUFWriter, as llama.cpp's converter writes
them: the one way this suite writes one (the families' tiny models, the picker's and the
downloads' small files, the converter's sampling keys).

A file a test needs malformed on purpose, or with values GGUFWriter refuses, is packed byte
by byte in support/model_files/gguf_corpus.py instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from gguf import GGUFWriter

# A chat template of its own: a model whose replies are its messages, told apart from Gemma's.
ECHO_TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"


def write_gguf(path: Path, arch: str, add_keys: Callable[[GGUFWriter], None],
               tensors: Iterable[tuple[str, np.ndarray]] = ()) -> Path:
    """The file at `path`: the keys `add_keys` adds to the writer, then `tensors` (name, data)
    in order; the tensor data is written only when there are tensors."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = GGUFWriter(str(path), arch)
    add_keys(writer)
    named = list(tensors)
    for name, data in named:
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    if named:
        writer.write_tensors_to_file()
    writer.close()
    return path


def write_tiny_gguf(path: Path, name: str = "Tiny Test") -> Path:
    """A valid, very small GGUF with its own chat template: another model beside Gemma."""

    def keys(writer: GGUFWriter) -> None:
        writer.add_name(name)
        writer.add_context_length(2048)
        writer.add_chat_template(ECHO_TEMPLATE)

    return write_gguf(path, "llama", keys, [("token_embd.weight", np.zeros((4, 8), dtype=np.float32))])


def write_download_gguf(path: Path) -> Path:
    """A small valid llama-architecture GGUF (64 KiB of weights) whose file type is Q4_K_M, as a
    download's file name says: what the fake Hub serves."""

    def keys(writer: GGUFWriter) -> None:
        writer.add_name("Tiny Test")
        writer.add_context_length(128)
        writer.add_block_count(1)
        writer.add_file_type(15)  # MOSTLY_Q4_K_M

    return write_gguf(path, "llama", keys,
                      [("token_embd.weight", np.arange(16384, dtype=np.float32).reshape(64, 256))])
