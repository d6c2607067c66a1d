"""llama.cpp in a process of its own (#29): protocol.py, codec.py and frames.py the wire,
child.py the engine's process, backend.py the ProcessBackend that drives it."""

CHILD_FLAG = "--engine-child"  # Hearth's hidden switch to run as a model's process: the socket's descriptor follows
