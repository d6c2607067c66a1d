"""llama.cpp: the only package that imports llama_cpp.

Its modules import it lazily where the window may import them (devices, machine, load checks),
so that the window starts without loading llama.cpp; the engine thread loads it with the
first model (generator.Engine).
"""
