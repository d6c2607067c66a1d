"""Saved KV state: what each llama.cpp primitive costs, and the first token after a restore.

A conversation of about 1,500 tokens (the history H, ending with a reply) plus a new user turn
T is the prompt. The reference is a cold evaluation of H+T in a fresh context, then 48 greedy
tokens. Each way of saving the state after H is then timed and checked the same way: restore
into another context, evaluate only T, and the greedy tokens must be identical to the cold
ones (and the first logits too, bit for bit where the primitive keeps every needed cell):

  (a) Llama.save_state / load_state   (llama-cpp-python: whole context state + a logits copy)
  (b) llama_state_seq_get_data / set_data   (one sequence's cells; what app/engine/kv_seq.py uses)
  (c) llama_state_seq_save_file / load_file (the same, written by llama.cpp itself)
  (d) llama_state_get_data / set_data   (the whole context state, without llama-cpp-python's copy)

Then the path Hearth takes: (b) through kv_state.StateCache on disk, read back by a new
process with the model loaded (a restart: "reopened"), and from the cache's memory tier (a
switch A -> B -> A). Time to first token = reading the state + restoring it + evaluating T +
sampling one token, divided by turn 1's (a fresh conversation's first prompt, cold).
Target (issue #14): <= 1.5. A cut-back check shows why the engine must ask kv_seq.can_reuse:
a restored SWA state keeps only the window, so cutting it back two tokens or more changes
the logits.

    .venv/bin/python bench/kv_state.py [--model PATH]
Writes bench/results/kv_state.json.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from llama_cpp import Llama  # noqa: E402
from llama_cpp import llama_cpp as llama_c  # noqa: E402
from llama_cpp._internals import LlamaSampler  # noqa: E402

from app.engine import kv_seq  # noqa: E402
from app.engine.devices import cpu_threads  # noqa: E402
from app.engine.kv_fingerprint import model_fingerprint  # noqa: E402
from app.engine.kv_state import StateCache, StateKey  # noqa: E402
from app.engine.modelfile import inspect_model  # noqa: E402
from app.engine.templates import template_for  # noqa: E402

N_CTX = 4096
HISTORY_TOKENS = 1500
GREEDY_TOKENS = 48
TARGET_RATIO = 1.5
CONVERSATION_ID = 7


def open_llama(model: Path) -> Llama:
    """A context set up as the engine's (generator.Engine._load): its threads, swa_full."""
    threads = cpu_threads()
    return Llama(model_path=str(model), n_ctx=N_CTX, n_threads=threads.generate, n_threads_batch=threads.prompt,
                 swa_full=True, verbose=False)


def conversation(model: Path, llm: Llama) -> tuple[list[int], list[int], list[int]]:
    """The turn-1 prompt of a fresh conversation, the history H (about HISTORY_TOKENS, ending
    with a reply) and the whole next prompt H+T, rendered by the model's own template."""
    template = template_for(inspect_model(model))

    def tokens(messages: list[dict], generation_prompt: bool) -> list[int]:
        text = template.render(messages, add_generation_prompt=generation_prompt)
        return llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    turn_one = tokens(messages + [{"role": "user", "content": "Question 0: what do you know about the first river?"}], True)
    index = 0
    while True:
        messages.append({"role": "user", "content": f"Question {index}: what do you know about river {index} "
                                                    "and the towns along it?"})
        messages.append({"role": "assistant", "content": f"River {index} runs through {index + 2} towns. The first "
                                                         "is known for its bridges, the second for its markets, and "
                                                         "the rest for their mills and orchards. " * 2})
        history = tokens(messages, False)
        if len(history) >= HISTORY_TOKENS:
            break
        index += 1
    prompt = tokens(messages + [{"role": "user", "content": "Which of these rivers has the most towns?"}], True)
    assert prompt[: len(history)] == history, "the template must render the history as a prefix"
    return turn_one, history, prompt


def last_logits(llm: Llama) -> np.ndarray:
    return np.ctypeslib.as_array(llama_c.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()


def first_token(llm: Llama, tokens: list[int]) -> float:
    """Evaluate `tokens` after what the context holds and sample one token: seconds."""
    started = time.perf_counter()
    llm.eval(tokens)
    sampler = LlamaSampler()
    sampler.add_greedy()
    sampler.sample(llm._ctx, -1)
    return time.perf_counter() - started


def greedy(llm: Llama, count: int = GREEDY_TOKENS) -> list[int]:
    sampler = LlamaSampler()
    sampler.add_greedy()
    out = []
    for _ in range(count):
        token = sampler.sample(llm._ctx, -1)
        out.append(token)
        llm.eval([token])
    return out


def cold(llm: Llama, prompt: list[int]) -> tuple[float, np.ndarray, list[int]]:
    llm.reset()
    seconds = first_token(llm, prompt)
    return seconds, last_logits(llm), greedy(llm)  # greedy samples the first token again: same logits


def seq_bytes(llm: Llama) -> bytes:
    return kv_seq.save(llm)


def context_bytes(llm: Llama) -> bytes:
    ctx = llm._ctx.ctx
    size = llama_c.llama_state_get_size(ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_c.llama_state_get_data(ctx, buffer, size)
    return bytes(memoryview(buffer)[:written])


def check(restored: Llama, history: list[int], new: list[int], reference: tuple[np.ndarray, list[int]]) -> dict:
    """Evaluate the new turn after a restored history; compare with the cold reference."""
    restored.input_ids[: len(history)] = history
    restored.n_tokens = len(history)
    ttft = first_token(restored, new)
    logits = last_logits(restored)
    tokens = greedy(restored)
    ref_logits, ref_tokens = reference
    return {"eval_new_and_sample_s": ttft, "greedy_identical": tokens == ref_tokens,
            "max_logit_difference": float(np.abs(logits - ref_logits).max())}


def timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def primitives(model: Path, llm: Llama, other: Llama, history: list[int], prompt: list[int],
               reference: tuple[np.ndarray, list[int]], folder: Path) -> dict:
    new = prompt[len(history):]
    per_1k = 1000 / len(history)
    rows = {}

    llm.reset()
    llm.eval(history)
    save_s, state = timed(llm.save_state)
    size = state.llama_state_size + state.scores.nbytes + state.input_ids.nbytes
    load_s, _ = timed(lambda: other.load_state(state))
    rows["a_Llama_save_state"] = {"bytes": size, "bytes_per_1k_tokens": size * per_1k, "save_s": save_s, "load_s": load_s,
                                  "of_which_logits_copy_bytes": state.scores.nbytes, **check(other, history, new, reference)}
    del state

    save_s, payload = timed(lambda: seq_bytes(llm))
    other.reset()
    load_s, ok = timed(lambda: kv_seq.restore(other, history, payload))
    assert ok
    rows["b_seq_get_set_data"] = {"bytes": len(payload), "bytes_per_1k_tokens": len(payload) * per_1k, "save_s": save_s,
                                  "load_s": load_s, **check(other, history, new, reference)}

    path = folder / "seq.bin"
    tokens = (llama_c.llama_token * len(history))(*history)
    save_s, _ = timed(lambda: llama_c.llama_state_seq_save_file(llm._ctx.ctx, str(path).encode(), 0, tokens, len(history)))
    read_tokens = (llama_c.llama_token * N_CTX)()
    count = ctypes.c_size_t(0)
    other.reset()
    other._ctx.kv_cache_seq_rm(-1, 0, -1)
    load_s, loaded = timed(lambda: llama_c.llama_state_seq_load_file(other._ctx.ctx, str(path).encode(), 0, read_tokens,
                                                                     N_CTX, ctypes.byref(count)))
    assert loaded and list(read_tokens[: count.value]) == history
    rows["c_seq_save_load_file"] = {"bytes": path.stat().st_size, "bytes_per_1k_tokens": path.stat().st_size * per_1k,
                                    "save_s": save_s, "load_s": load_s, **check(other, history, new, reference)}

    save_s, whole = timed(lambda: context_bytes(llm))
    source = (ctypes.c_uint8 * len(whole)).from_buffer_copy(whole)
    load_s, _ = timed(lambda: llama_c.llama_state_set_data(other._ctx.ctx, source, len(whole)))
    rows["d_context_get_set_data"] = {"bytes": len(whole), "bytes_per_1k_tokens": len(whole) * per_1k, "save_s": save_s,
                                      "load_s": load_s, **check(other, history, new, reference)}
    return rows


def cut_back(llm: Llama, other: Llama, history: list[int], prompt: list[int], payload: bytes) -> list[dict]:
    """Restore (b), cut the cache back k tokens, evaluate from there: logits vs the same cut
    made in the context that evaluated the history itself."""
    rows = []
    for k in (0, 1, 2, 300):
        keep = len(history) - k
        llm.reset()
        llm.eval(history)
        llm._ctx.kv_cache_seq_rm(-1, keep, -1)
        llm.n_tokens = keep
        llm.eval(prompt[keep:])
        in_process = last_logits(llm)
        assert kv_seq.restore(other, history, payload)
        reusable = kv_seq.can_reuse(other, keep)
        other._ctx.kv_cache_seq_rm(-1, keep, -1)
        other.n_tokens = keep
        other.eval(prompt[keep:])
        rows.append({"cut_back_tokens": k, "can_reuse": reusable,
                     "max_logit_difference": float(np.abs(last_logits(other) - in_process).max())})
    return rows


def state_key(model: Path, llm: Llama) -> StateKey:
    fingerprint = model_fingerprint(model)
    return StateKey(fingerprint.size, fingerprint.digest, N_CTX, kv_seq.cache_layout(llm), 0, kv_seq.build_identity())


def child_reopen(model: Path, folder: Path, job: Path) -> None:
    """A new process, the model loaded: read the state from the cache folder, restore it,
    evaluate the new turn, sample. Prints its timings as JSON."""
    spec = json.loads(job.read_text())
    llm = open_llama(model)
    key = state_key(model, llm)
    prompt = spec["prompt"]
    started = time.perf_counter()
    saved = StateCache(folder).get(key, CONVERSATION_ID, prompt)
    got = time.perf_counter()
    assert saved is not None, "the state saved by the parent must be found"
    assert kv_seq.restore(llm, saved.tokens, saved.payload)
    restored = time.perf_counter()
    ttft = first_token(llm, prompt[len(saved.tokens):])
    print(json.dumps({"read_s": got - started, "restore_s": restored - got, "eval_new_and_sample_s": ttft,
                      "ttft_s": restored - started + ttft, "greedy_identical": greedy(llm) == spec["reference"]}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")
    parser.add_argument("--child-reopen", nargs=2, type=Path, metavar=("FOLDER", "JOB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_reopen:
        child_reopen(args.model, *args.child_reopen)
        return

    llm, other = open_llama(args.model), open_llama(args.model)
    turn_one, history, prompt = conversation(args.model, llm)
    new = prompt[len(history):]
    turn_one_s = []
    for _ in range(5):
        llm.reset()
        turn_one_s.append(first_token(llm, turn_one))
    cold_s, ref_logits, ref_tokens = cold(llm, prompt)
    reference = (ref_logits, ref_tokens)

    with tempfile.TemporaryDirectory(prefix="hearth-kv-bench-") as name:
        folder = Path(name)
        rows = primitives(args.model, llm, other, history, prompt, reference, folder)
        llm.reset()
        llm.eval(history)
        payload = kv_seq.save(llm)
        cut = cut_back(llm, other, history, prompt, payload)

        # Hearth's path: the state put in a StateCache (memory and disk) ...
        key = state_key(args.model, llm)
        cache = StateCache(folder / "cache")
        put_s, _ = timed(lambda: cache.put(key, CONVERSATION_ID, history, payload))
        # ... read back from memory in this process (switching A -> B -> A) ...
        switched = []
        for _ in range(3):
            started = time.perf_counter()
            saved = cache.get(key, CONVERSATION_ID, prompt)
            assert saved is not None and kv_seq.restore(other, saved.tokens, saved.payload)
            first_token(other, prompt[len(saved.tokens):])
            switched.append(time.perf_counter() - started)
        # ... and from disk by a new process (reopened after a restart).
        job = folder / "job.json"
        job.write_text(json.dumps({"prompt": prompt, "reference": ref_tokens}))
        reopened = []
        for _ in range(3):
            child = subprocess.run([sys.executable, __file__, "--model", str(args.model), "--child-reopen",
                                    str(folder / "cache"), str(job)], capture_output=True, text=True, check=True,
                                   env=dict(os.environ, PYTHONPATH=str(ROOT)))
            reopened.append(json.loads(child.stdout.strip().splitlines()[-1]))
        disk_bytes = cache.size_on_disk()

    turn_one_median = statistics.median(turn_one_s)
    reopened_ttft = statistics.median(r["ttft_s"] for r in reopened)
    switched_ttft = statistics.median(switched)
    result = {
        "model": args.model.name, "n_ctx": N_CTX, "history_tokens": len(history), "new_tokens": len(new),
        "turn_one_tokens": len(turn_one), "turn_one_ttft_s": turn_one_median, "cold_ttft_s": cold_s,
        "primitives": rows, "cut_back_after_restore": cut,
        "cache": {"put_s": put_s, "file_bytes": disk_bytes, "file_bytes_per_1k_tokens": disk_bytes * 1000 / len(history),
                  "reopened": reopened, "reopened_ttft_s": reopened_ttft, "switched_ttft_s": switched_ttft},
        "reopened_ratio": reopened_ttft / turn_one_median, "switched_ratio": switched_ttft / turn_one_median,
        "target_ratio": TARGET_RATIO,
    }
    result["pass"] = (result["reopened_ratio"] <= TARGET_RATIO and result["switched_ratio"] <= TARGET_RATIO
                      and all(r["greedy_identical"] for r in reopened)
                      and rows["b_seq_get_set_data"]["greedy_identical"])

    print(f"history {len(history)} tokens + new turn {len(new)}; turn 1 of a fresh conversation {len(turn_one)} tokens")
    print(f"cold: first token {cold_s * 1e3:.0f} ms; turn 1: {turn_one_median * 1e3:.0f} ms")
    for name, row in rows.items():
        print(f"{name}: {row['bytes_per_1k_tokens'] / 1e6:.1f} MB per 1k tokens, save {row['save_s'] * 1e3:.0f} ms, "
              f"load {row['load_s'] * 1e3:.0f} ms, then the new turn {row['eval_new_and_sample_s'] * 1e3:.0f} ms; "
              f"greedy identical: {row['greedy_identical']}, max logit difference {row['max_logit_difference']:.3g}")
    for row in cut:
        print(f"restored, cut back {row['cut_back_tokens']}: can_reuse {row['can_reuse']}, "
              f"max logit difference vs the same cut in-process {row['max_logit_difference']:.3g}")
    print(f"StateCache: put {put_s * 1e3:.0f} ms, {disk_bytes / 1e6:.1f} MB on disk; reopened in a new process: "
          f"first token {reopened_ttft * 1e3:.0f} ms (read {statistics.median(r['read_s'] for r in reopened) * 1e3:.0f} ms, "
          f"restore {statistics.median(r['restore_s'] for r in reopened) * 1e3:.0f} ms), "
          f"greedy identical: {all(r['greedy_identical'] for r in reopened)}; switched back: {switched_ttft * 1e3:.0f} ms")
    print(f"reopened / turn 1 = {result['reopened_ratio']:.2f}, switched / turn 1 = {result['switched_ratio']:.2f} "
          f"(target <= {TARGET_RATIO}; cold / turn 1 = {cold_s / turn_one_median:.1f}): {'PASS' if result['pass'] else 'FAIL'}")
    out = ROOT / "bench" / "results" / "kv_state.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
