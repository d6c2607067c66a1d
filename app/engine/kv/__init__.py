"""Saved KV state: a conversation's evaluated tokens kept on disk (and the most recent in
memory), so that reopening it evaluates only its new turn. The llama.cpp side of saving and
restoring is engine/llama/kv_seq.py."""
