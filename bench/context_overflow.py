"""Replies in a conversation longer than the context window, against a first reply.

A 200-message conversation (about 20,000 tokens) is answered in a 4,096-token window, then
continued for several more replies, in one engine session. Each reply's time to first token
(fitting the conversation, rendering, tokenizing and evaluating the prompt) is divided by
that of turn 1 of a fresh one-message conversation, the same ratio as the turn-8 figure of
engine_vs_raw.py. The first overflowing reply evaluates its whole cut-down prompt; the replies
after it drop the same turns and evaluate only their new tokens (context.py). Target for
those: <= 1.5.

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

from app.engine.generator import Engine, LoadOptions, ReplyStats  # noqa: E402
from app.engine.sampling import SamplingParams  # noqa: E402

N_CTX = 4096
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")
    parser.add_argument("--replies", type=int, default=5)
    args = parser.parse_args()

    fresh = Engine(args.model, LoadOptions(n_ctx=N_CTX))
    reply(fresh, [{"role": "user", "content": "Warm up."}])
    turn1 = statistics.median(
        reply(fresh, [{"role": "user", "content": f"Say something about the number {n}."}])[2] for n in range(5))
    fresh.close()

    engine = Engine(args.model, LoadOptions(n_ctx=N_CTX))
    reply(engine, [{"role": "user", "content": "Warm up."}])
    messages = long_conversation()
    rows = []
    for n in range(args.replies + 1):
        messages.append({"role": "user", "content": f"One more question, number {n}: what is a delta?"})
        text, stats, ttft = reply(engine, messages)
        messages.append({"role": "assistant", "content": text})
        rows.append({"ttft_s": ttft, "prompt_tokens": stats.prompt_tokens,
                     "evaluated": stats.evaluated_prompt_tokens, "dropped": stats.dropped_messages})
    engine.close()

    history_tokens = round(sum(len(m["content"]) for m in long_conversation()) / 4)
    later = statistics.median(r["ttft_s"] for r in rows[1:])
    result = {
        "n_ctx": N_CTX, "history_messages": 200, "history_tokens_approx": history_tokens,
        "turn1_ttft_s": turn1, "first_overflow_ttft_s": rows[0]["ttft_s"], "later_ttft_s_median": later,
        "first_overflow_ratio": rows[0]["ttft_s"] / turn1, "later_ratio": later / turn1,
        "replies": rows, "target_ratio": TARGET_RATIO,
    }
    result["pass"] = result["later_ratio"] <= TARGET_RATIO
    print(f"turn 1 of a fresh conversation: TTFT {turn1 * 1e3:.0f} ms (median of 5)")
    for n, row in enumerate(rows):
        print(f"overflowing reply {n + 1}: TTFT {row['ttft_s'] * 1e3:6.0f} ms; prompt {row['prompt_tokens']} tokens, "
              f"{row['evaluated']} evaluated, {row['dropped']} messages left out")
    print(f"first overflowing reply / turn 1: {result['first_overflow_ratio']:.2f}; "
          f"later replies (median) / turn 1: {result['later_ratio']:.2f} "
          f"(target <= {TARGET_RATIO}: {'PASS' if result['pass'] else 'FAIL'})")
    out = ROOT / "bench" / "results" / "context_overflow.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
