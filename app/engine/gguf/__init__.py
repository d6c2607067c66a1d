"""Reading a GGUF file without loading its weights: the header walk, the checks that keep a
hostile file out, and what Hearth reads from it (model info, memory shape, the author's
sampling defaults, the fingerprint saved states are keyed by)."""
