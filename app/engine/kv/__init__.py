"""What the KV cache holds, without llama_cpp: the token segments the engine remembers and the
next prompt reuses (prefix_reuse.py, segments.py), and saved KV states, a conversation's
evaluated tokens kept on disk (and the most recent in memory), so that reopening it evaluates
only its new turn. The llama.cpp side of saving and restoring is engine/llama/kv_seq.py, and
the engine's keeper of saved states per conversation engine/llama/state_keeper.py."""
