"""Model files the tests write: valid GGUFs through gguf-py (tiny_gguf, the families' tiny
models) and hand-packed ones, hostile on purpose where a test needs it (gguf_corpus)."""
