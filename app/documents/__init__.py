"""The user's documents, Qt-free: read (readers/), cut into chunks by the embedding model's
tokens (chunking.py), kept with their vectors in SQLite (index.py) and searched by words and by
meaning together (search.py)."""
