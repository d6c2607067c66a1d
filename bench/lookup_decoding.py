"""Prompt-lookup drafting: tokens/s with it ÷ without, measured in one run on one model.

    .venv/bin/python bench/lookup_decoding.py [--model PATH] [--runs 5] [--threads 1 0]

1. Copy-heavy reply: "Repeat the following code exactly, changing only the function name" on
   a ~300-token snippet, greedy, 300 tokens. Target >= 1.5, with the same text.
2. Free-form reply: engine_vs_raw.py's decode benchmark (its story prompt, greedy, 128 tokens,
   no repeat penalty). Target >= 0.98. A small base model loops on it, which drafts well;
3. so also a sampled free-form reply (the Balanced preset, a fixed seed, 128 tokens), where
   little matches: the cost of looking when there is nothing to find. Target >= 0.98.
4. Seeded sampling: 20 replies (temperature 0.8, seeds 0-19, 48 tokens) with and without
   drafting: how many are the same text. Drafting checks a draft in one batch, and llama.cpp
   computes a batch's logits with other kernels than one token's (as it does a prompt's), so
   the logits differ in the last bits; the sampler's random stream and penalties are the same.
   Also shown: how far apart the two distributions are at each step (total variation of the
   softmax at temperature 0.8 over the copy-heavy reply, its tokens evaluated one at a time
   and as one batch).

Each thread count runs in its own process, which loads the model once and alternates the
two settings (--runs times each, after one warm-up reply each, so every measured reply finds
its prompt in the cache); figures are medians. --threads 0 is the engine's default (one per
physical core, every logical CPU for batches). Results also go to
bench/results/lookup_decoding.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SNIPPET = '''def summarize_orders(orders, currency="EUR", minimum=0.0):
    """Total the paid orders per customer, largest first, skipping small ones."""
    totals = {}
    for order in orders:
        if order.get("status") != "paid":
            continue
        amount = float(order.get("amount", 0.0))
        if order.get("currency", currency) != currency:
            rate = EXCHANGE_RATES.get((order["currency"], currency))
            if rate is None:
                raise ValueError(f"no exchange rate from {order['currency']} to {currency}")
            amount *= rate
        customer = order.get("customer", "unknown")
        totals[customer] = totals.get(customer, 0.0) + amount
    ranked = sorted(totals.items(), key=lambda item: item[1], reverse=True)
    lines = []
    for customer, total in ranked:
        if total < minimum:
            break
        lines.append(f"{customer:<24} {total:>12,.2f} {currency}")
    if not lines:
        return "No paid orders above the minimum."
    return "\\n".join(lines)
'''
COPY_PROMPT = ("Repeat the following code exactly, changing only the function name "
               "summarize_orders to total_paid_orders.\n\n```python\n" + SNIPPET + "```")
COPY_TOKENS = 300  # the default model copies the request and the code verbatim: about this long
N_CTX = 4096


def child(model: Path, threads: int, runs: int) -> dict:
    import time

    from app.engine.llama.generator import Engine
    from app.engine.sampling import PRESETS, SamplingParams
    from app.engine.types import LoadOptions, ReplyStats
    from bench.engine_vs_raw import PROMPT_TEXT

    engine = Engine(model, LoadOptions(n_ctx=N_CTX, n_threads=threads or None))
    greedy = SamplingParams(temperature=0.0, repeat_penalty=1.0)
    cases = {
        "copy": ([{"role": "user", "content": COPY_PROMPT}], greedy.with_changes(max_tokens=COPY_TOKENS)),
        "free_greedy": ([{"role": "user", "content": PROMPT_TEXT}], greedy.with_changes(max_tokens=128)),
        "free_sampled": ([{"role": "user", "content": PROMPT_TEXT}], PRESETS["Balanced"].with_changes(max_tokens=128, seed=7)),
    }

    def reply(messages, params) -> tuple[str, object, float]:
        text = []
        start = time.perf_counter()
        for event in engine.stream(messages, params):
            if isinstance(event, ReplyStats):
                stats = event
            else:
                text.append(event)
        return "".join(text), stats, time.perf_counter() - start

    results = {}
    for name, (messages, params) in cases.items():
        samples = {"none": [], "lookup": []}
        texts = {"none": set(), "lookup": set()}
        draft_stats = None
        for run in range(runs + 1):
            for draft in ("none", "lookup"):
                text, stats, _ = reply(messages, params.with_changes(draft=draft))
                if run == 0:
                    continue  # the warm-up: its prompt was not in the cache yet
                samples[draft].append(stats.tokens_per_s)
                texts[draft].add(text)
                if draft == "lookup":
                    draft_stats = engine.last_draft_stats
        results[name] = {
            "tokens": stats.completion_tokens,
            "none_tokens_per_s": statistics.median(samples["none"]),
            "lookup_tokens_per_s": statistics.median(samples["lookup"]),
            "ratio": statistics.median(samples["lookup"]) / statistics.median(samples["none"]),
            "same_text": texts["none"] == texts["lookup"] and len(texts["none"]) == 1,
            "samples": samples,
            "drafted": draft_stats.drafted, "accepted": draft_stats.accepted, "batches": draft_stats.batches,
        }

    same = 0
    for seed in range(20):
        params = SamplingParams(temperature=0.8, max_tokens=48, seed=seed)
        messages = [{"role": "user", "content": COPY_PROMPT if seed % 2 else PROMPT_TEXT}]
        reply(messages, params.with_changes(max_tokens=1))  # the prompt in the cache for both
        same += reply(messages, params.with_changes(draft="none"))[0] == reply(messages, params)[0]
    results["seeded_same_of_20"] = same
    microseconds = lookup_cost(engine, cases["free_sampled"][0], reply)
    results["lookup_cost"] = {"microseconds_per_token": microseconds,
                              "share_of_a_decode": microseconds * 1e-6 * results["free_sampled"]["none_tokens_per_s"]}
    results["batch_vs_single_tv"] = batch_vs_single(engine, cases["copy"][0])
    return results


def lookup_cost(engine, messages, reply) -> float:
    """What looking costs where nothing matches: the drafter's work per token of the sampled
    free-form reply (append, look up, decide), in microseconds."""
    import time

    from app.engine.lookup import Drafter
    from app.engine.sampling import PRESETS

    text, _, _ = reply(messages, PRESETS["Balanced"].with_changes(max_tokens=128, seed=7, draft="none"))
    prompt = engine.prompt_tokens(messages)
    tokens = engine.tokenize(text, at_start=False)
    start = time.perf_counter()
    drafter = Drafter(prompt)
    for token in tokens:
        drafter.append(token)
        drafter.propose(128)
    return (time.perf_counter() - start) / len(tokens) * 1e6


def batch_vs_single(engine, messages) -> dict:
    """Total variation distance between the temperature-0.8 distributions at each position of
    a reply's tokens, evaluated one at a time and as one batch (what drafting changes)."""
    import numpy as np
    from llama_cpp import llama_cpp as llama_c

    llm = engine._llm
    prompt = engine.prompt_tokens(messages)
    reply = engine.tokenize(SNIPPET, at_start=False)[:48]
    n_vocab = llama_c.llama_vocab_n_tokens(llm._model.vocab)

    def probabilities(row: int) -> np.ndarray:
        logits = np.ctypeslib.as_array(llama_c.llama_get_logits_ith(llm._ctx.ctx, row), shape=(n_vocab,)) / 0.8
        weights = np.exp(logits - logits.max())
        return weights / weights.sum()

    llm.reset()
    llm.eval(prompt)
    single = []
    for token in reply:
        llm.eval([token])
        single.append(probabilities(-1))
    distances = []
    for start in range(0, len(reply), 16):  # batches of 16, as the longest draft
        llm.n_tokens = len(prompt) + start
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        chunk = reply[start:start + 16]
        llm._batch.set_batch(chunk, llm.n_tokens, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.n_tokens += len(chunk)
        distances += [0.5 * float(np.abs(probabilities(i) - single[start + i]).sum()) for i in range(len(chunk))]
    engine._prefix.segments = []  # the cache no longer holds what the engine remembers
    llm.reset()
    return {"mean": statistics.mean(distances), "median": statistics.median(distances), "max": max(distances)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 0], help="0: the engine's default")
    parser.add_argument("--child", type=int, metavar="THREADS")
    args = parser.parse_args()
    if args.model is None:
        from app.owners.paths import default_model

        args.model = default_model()
    if args.child is not None:
        print(json.dumps(child(args.model, args.child, args.runs)))
        return

    results = {"model": str(args.model), "runs": args.runs, "by_threads": {}}
    for threads in args.threads:
        out = subprocess.run([sys.executable, __file__, "--child", str(threads), "--model", str(args.model),
                              "--runs", str(args.runs)], capture_output=True, text=True, check=True, cwd=ROOT)
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        results["by_threads"][str(threads)] = figures
        label = f"{threads} thread{'s' if threads != 1 else ''}" if threads else "default threads"
        print(f"-- {label}")
        for name, target in (("copy", 1.5), ("free_greedy", 0.98), ("free_sampled", 0.98)):
            f = figures[name]
            print(f"{name:<13} lookup {f['lookup_tokens_per_s']:.1f} / none {f['none_tokens_per_s']:.1f} tok/s "
                  f"= {f['ratio']:.2f}  (target >= {target}; {f['tokens']} tokens, same text: {f['same_text']}; "
                  f"{f['accepted']}/{f['drafted']} drafted tokens accepted in {f['batches']} batches)")
        tv = figures["batch_vs_single_tv"]
        print(f"seeded replies the same with and without drafting: {figures['seeded_same_of_20']}/20 "
              f"(batch vs single-token distributions: total variation mean {tv['mean']:.4f}, max {tv['max']:.4f})")
        cost = figures["lookup_cost"]
        print(f"looking where nothing matches: {cost['microseconds_per_token']:.1f} µs per token "
              f"({cost['share_of_a_decode']:.2%} of a decode)")
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "lookup_decoding.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
