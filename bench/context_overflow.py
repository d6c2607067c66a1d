"""Replies in a conversation far longer than the context window, against raw llama-cpp-python.

A 200-message conversation (about 20,000 tokens) is answered in a 4,096-token window, then
continued for several more replies, in one engine session. The first overflowing reply cuts
the conversation down and evaluates the whole kept prompt; the replies after it drop the same
turns, so only their new tokens are evaluated (context.py). Each later reply's time to first
token (fitting, rendering, tokenizing, evaluating, sampling) is divided by raw
llama-cpp-python's time for the least a client could do: with the same prompt prefix already
in its KV cache, evaluate the same new tokens and sample one. Target: <= 1.5. For contrast,
the first overflowing reply shows what every reply would cost if the cut moved each time.

    .venv/bin/python bench/context_overflow.py [--model PATH] [--replies 5]
Writes bench/results/context_overflow.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine_vs_raw import N_CTX, raw_llama  # noqa: E402  (the raw side set up as there)

from app.engine.llama.devices import cpu_threads  # noqa: E402
from app.engine.llama.generator import Engine  # noqa: E402
from app.engine.sampling import SamplingParams  # noqa: E402
from app.engine.types import LoadOptions, ReplyStats  # noqa: E402

PARAMS = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=32)
TARGET_RATIO = 1.5


def long_conversation() -> list[dict]:
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for i in range(100):
        messages.append({"role": "user", "content": f"Question {i}: tell me about rivers and seas " * 6})
        messages.append({"role": "assistant", "content": f"Answer {i}: rivers flow into the sea, and the sea is wide. " * 8})
    return messages


def reply(engine: Engine, messages: list[dict]) -> tuple[str, ReplyStats, float]:
    started = time.perf_counter()
    first = None
    chunks = []
    for event in engine.stream(messages, PARAMS):
        if isinstance(event, str):
            first = first or time.perf_counter()
            chunks.append(event)
        else:
            return "".join(chunks), event, (first or time.perf_counter()) - started
    raise RuntimeError("no statistics")


def raw_first_token(llm, prompt: list[int], new_tokens: int) -> float:
    """Raw llama-cpp-python with the prompt's prefix in its KV cache: time to evaluate the last
    `new_tokens` and sample the first reply token (median of 3)."""
    llm.reset()
    llm.eval(prompt[:-new_tokens])
    samples = []
    for _ in range(3):
        llm.n_tokens = len(prompt) - new_tokens
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        started = time.perf_counter()
        llm.eval(prompt[-new_tokens:])
        llm.sample(temp=0.0)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")
    parser.add_argument("--replies", type=int, default=5)
    args = parser.parse_args()

    engine = Engine(args.model, LoadOptions(n_ctx=N_CTX))
    reply(engine, [{"role": "user", "content": "Warm up."}])
    history = long_conversation()
    messages = list(history)
    rows = []
    for n in range(args.replies + 1):
        messages.append({"role": "user", "content": f"One more question, number {n}: what is a delta?"})
        prompt = engine.fit(messages, PARAMS.max_tokens).prompt_tokens  # what the reply will use
        text, stats, ttft = reply(engine, messages)
        messages.append({"role": "assistant", "content": text})
        rows.append({"ttft_s": ttft, "prompt_tokens": stats.prompt_tokens, "evaluated": stats.evaluated_prompt_tokens,
                     "dropped": stats.dropped_messages, "prompt": prompt})
    engine.close()
    raw_side = raw_llama(args.model)
    for row in rows[1:]:
        row["raw_ttft_s"] = raw_first_token(raw_side, row.pop("prompt"), row["evaluated"])
    rows[0].pop("prompt")

    later = statistics.median(r["ttft_s"] for r in rows[1:])
    raw = statistics.median(r["raw_ttft_s"] for r in rows[1:])
    result = {
        "n_ctx": N_CTX, "history_messages": len(history) - 1,  # besides the system prompt
        "history_tokens_approx": round(sum(len(m["content"]) for m in history) / 4),
        "first_overflow_ttft_s": rows[0]["ttft_s"], "later_ttft_s_median": later, "raw_ttft_s_median": raw,
        "ratio": later / raw, "replies": rows, "target_ratio": TARGET_RATIO, "threads": cpu_threads().generate,
    }
    result["pass"] = result["ratio"] <= TARGET_RATIO
    for n, row in enumerate(rows):
        raw_text = f"; raw {row['raw_ttft_s'] * 1e3:.0f} ms" if "raw_ttft_s" in row else ""
        print(f"overflowing reply {n + 1}: TTFT {row['ttft_s'] * 1e3:6.0f} ms{raw_text}; prompt {row['prompt_tokens']} "
              f"tokens, {row['evaluated']} evaluated, {row['dropped']} messages left out")
    print(f"later replies: engine {later * 1e3:.0f} ms / raw {raw * 1e3:.0f} ms = {result['ratio']:.2f} "
          f"(target <= {TARGET_RATIO}: {'PASS' if result['pass'] else 'FAIL'}); the first overflowing reply, "
          f"which evaluates its whole prompt, took {rows[0]['ttft_s']:.1f} s")
    out = ROOT / "bench" / "results" / "context_overflow.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
