"""Embedding models, without llama_cpp: the default model made into a GGUF once (convert.py,
default_model.py) and what an embedder is (types.py); engine/llama/embedder.py runs them."""
