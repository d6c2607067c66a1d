"""Widgets only. Nothing in here imports llama_cpp; the engine is reached through app.bridge."""
