"""Models in the window: the picker and its table, Get models (curated list, Hugging Face
search, downloads), remote servers, and memory plans in words."""
