"""Hearth against llama.cpp's own C++ (#31): decode speed, time to first token, where each token's
time goes, and prompt lookup under the sampling a user gets.

    .venv/bin/python bench/reference_speed.py [--model PATH] [--runs 5] [--tokens 128] [--threads N]

llama-server and llama-bench are built once per machine from the very llama.cpp sources
llama-cpp-python 0.3.36 vendors, with Hearth's portable flags (scripts/llama-reference.sh, about
10 minutes on 2 cores; cached by version and flags; not part of `make test`). Every side runs the
same model with the same thread count (--threads, default: Hearth's own choice for decoding, one
per physical core), llama.cpp's default batch, the same flags, flash attention as Hearth's
Auto has it on a CPU (off; FLASH_ATTN), and the two servers the same context length
(SERVED_CONTEXT).

1. Served decode: the same prompt to `hearth serve` and to `llama-server`, streamed
   /v1/completions read by the official openai client, 128 tokens, the two back to back and
   taken in turns (Hearth's rate with lookup after them); tokens/s from
   the times the pieces arrived, (pieces - 1) ÷ (last - first). Hearth decodes one token at a
   time here (the request's `draft: "none"`), as llama-server does without a draft model; its
   rate with prompt lookup (what a request gets by default) is shown beside it. Twice: greedy, and the Balanced
   preset (temperature 0.7, top-k 40, top-p 0.95, min-p 0.05, seed 7) sent to both as the same
   request fields; repeat penalty 1 on both (Hearth's default since #31, llama.cpp's too). Target
   ≥ 0.97. Then greedy again deep in a conversation: after a prompt of about 3,000 tokens (the
   same each run, so both servers keep it cached and decode only), where a sliding-window
   model's cache layout shows: Gemma 3's window layers attend over 512 positions in llama.cpp's
   window-sized cache, over all 3,000 in a whole one (swa_full, Hearth's before #31).
2. Time to first token through each server: a ~190-token prompt whose first words change every
   run (no prefix either side reuses), request sent → first piece. Target: Hearth's ≤ llama-server's.
3. `hearth chat --draft none` (greedy, 128 tokens, its --stats json tokens/s) ÷ `llama-bench -n 128`
   (tg: decode alone, no sampling at all), taken in turns. Target ≥ 0.95. Twice: with the
   context llama-bench itself decodes in (tg128's 128 cells, padded to 256: BENCH_CONTEXT), and
   with Hearth's default of 4,096, whose bigger cache costs llama.cpp itself a few percent here
   (without flash attention V is stored transposed, its rows a context apart, so the same
   attention touches more pages; a bare llama_decode loop measured 0.985 ÷ llama-bench at 256
   cells, 0.971 at 4,096, and this bench 2-4% between its two figures).
4. The per-token budget, in process (the Engine of the window and the server), greedy and
   Balanced, drafting off: per token, the forward pass (llama_decode), sampling (ReplySampler.sample)
   and the rest of Python's loop (detokenizing, stop strings, bookkeeping), in µs; the signal hop
   to the window is bench/gui_path.py's (its last result, if run). Target: sampling < 5% of the
   forward pass.
5. Prompt lookup under the defaults a user gets: the copy-heavy reply of bench/lookup_decoding.py
   (repeat a code snippet), tokens/s with lookup ÷ without, greedy and Balanced (seeded), and
   Balanced with the repeat penalty it had before #31 (1.1 over 64 tokens), for the evidence.

Each figure is the median of per-pair ratios (each pair ran back to back, under the same load),
with the medians of each side beside it. Results also go to bench/results/reference_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # support.served
sys.path.insert(0, str(ROOT / "bench"))  # lookup_decoding's copy-heavy prompt, serve_speed's brief

from lookup_decoding import COPY_PROMPT  # noqa: E402
from serve_speed import BRIEF, paired, rate  # noqa: E402

PROMPT = "Once upon a time, in a lighthouse on a rock far out at sea, there lived a keeper who"
DEEP_PROMPT = "\n\n".join(f"Draft {n} of the notes. {BRIEF}" for n in range(1, 18)) + "\n\nThe final notes:"
BALANCED = {"temperature": 0.7, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "seed": 7}
GREEDY = {"temperature": 0.0}
# Hearth's Auto resolves flash attention off on a CPU with an f16 cache (engine/load_checks.py);
# llama.cpp's auto turns it on there. Matched: off on every side (on, llama-bench measured
# 1.5-2% faster here, within its noise).
FLASH_ATTN = "off"
SERVED_CONTEXT = 4096  # both servers' context length, as both are given
BENCH_CONTEXT = 256  # llama-bench's own for tg128: n_prompt + n_gen = 128 cells, padded to 256


def reference_bin() -> Path:
    built = subprocess.run(["bash", str(ROOT / "scripts" / "llama-reference.sh"), sys.executable], check=True,
                           capture_output=True, text=True)
    return Path(built.stdout.strip().splitlines()[-1])


class LlamaServer:
    """llama.cpp's own llama-server on a free port, ready when /health says so."""

    def __init__(self, binary: Path, model: Path, threads: int, port: int = 18093):
        environment = dict(os.environ, LD_LIBRARY_PATH=str(binary.parent))
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._process = subprocess.Popen(
            [str(binary), "-m", str(model), "--port", str(port), "-t", str(threads), "-tb", str(threads), "-c", str(SERVED_CONTEXT),
             "--parallel", "1", "--no-webui", "--flash-attn", FLASH_ATTN], env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("llama-server did not start")

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(30)


def completion_times(client, model: str, prompt: str, tokens: int, sampling: dict, **extra) -> list[float]:
    fields = dict(sampling, **extra)
    temperature = fields.pop("temperature")
    seed = fields.pop("seed", None)
    stream = client.completions.create(model=model, prompt=prompt, max_tokens=tokens, temperature=temperature,
                                       seed=seed, stream=True, extra_body={**fields, "repeat_penalty": 1.0})
    times = []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].text:
            times.append(time.perf_counter())
    return times


def deep(ours, our_model: str, theirs, their_model: str, runs: int, tokens: int) -> dict:
    """Greedy decode after DEEP_PROMPT, in turns; each server evaluates the prompt once (the warm
    run) and keeps it cached after that."""
    sides = [("hearth", ours, our_model, {"draft": "none"}), ("llama-server", theirs, their_model, {})]
    rates: dict[str, list[float]] = {"hearth": [], "llama-server": []}
    for _side, client, model_id, extra in sides:  # warm both: the prompt evaluated once
        completion_times(client, model_id, DEEP_PROMPT, 8, GREEDY, **extra)
    for run in range(runs):
        for side, client, model_id, extra in (sides if run % 2 == 0 else sides[::-1]):
            rates[side].append(rate(completion_times(client, model_id, DEEP_PROMPT, tokens, GREEDY, **extra)))
    result = _pairs(rates["hearth"], rates["llama-server"], "tokens/s")
    result["prompt_tokens"] = ours.completions.create(model=our_model, prompt=DEEP_PROMPT, max_tokens=1,
                                                      temperature=0).usage.prompt_tokens
    return result


def first_piece(client, model: str, prompt: str) -> float:
    started = time.perf_counter()
    for chunk in client.completions.create(model=model, prompt=prompt, max_tokens=2, temperature=0, stream=True):
        if chunk.choices and chunk.choices[0].text:
            return time.perf_counter() - started
    return float("nan")


def served(model: Path, binary: Path, threads: int, runs: int, tokens: int) -> dict:
    import openai
    from support.served import Served

    hearth = Served(model, "--threads", str(threads), "--ctx", str(SERVED_CONTEXT))
    reference = LlamaServer(binary / "llama-server", model, threads)
    results: dict = {}
    try:
        with (openai.OpenAI(base_url=hearth.base_url, api_key="x", max_retries=0, timeout=300) as ours,
              openai.OpenAI(base_url=reference.base_url, api_key="x", max_retries=0, timeout=300) as theirs):
            for name, sampling in (("greedy", GREEDY), ("balanced", BALANCED)):
                for client, model_id in ((ours, hearth.model_id), (theirs, model.name)):  # warm both
                    completion_times(client, model_id, PROMPT, 8, sampling)
                rates = {"hearth": [], "hearth with lookup": [], "llama-server": []}
                for run in range(runs):
                    # The pair compared runs back to back, in turns; the rate with lookup after it.
                    pair = [("hearth", ours, hearth.model_id, {"draft": "none"}),
                            ("llama-server", theirs, model.name, {})]
                    sides = [*(pair if run % 2 == 0 else pair[::-1]), ("hearth with lookup", ours, hearth.model_id, {})]
                    for side, client, model_id, extra in sides:
                        times = completion_times(client, model_id, PROMPT, tokens, sampling, **extra)
                        rates[side].append(rate(times))
                results[name] = _pairs(rates["hearth"], rates["llama-server"], "tokens/s")
                results[name + ", as served (prompt lookup on)"] = _pairs(rates["hearth with lookup"],
                                                                         rates["llama-server"], "tokens/s")
            results["greedy after a 3,000-token prompt"] = deep(ours, hearth.model_id, theirs, model.name, runs, tokens)
            firsts = {"hearth": [], "llama-server": []}
            for run in range(runs):
                prompt = f"Note {run} of the day, for room {run % 5}. {BRIEF}"
                sides = [("hearth", ours, hearth.model_id, "A. "), ("llama-server", theirs, model.name, "B. ")]
                for side, client, model_id, head in (sides if run % 2 == 0 else sides[::-1]):
                    firsts[side].append(first_piece(client, model_id, head + prompt) * 1000)
            results["ttft_ms"] = _pairs(firsts["hearth"], firsts["llama-server"], "ms")
    finally:
        reference.stop()
        hearth.stop()
    return results


def chat_rate(model: Path, tokens: int, *extra: str) -> float:
    done = subprocess.run([sys.executable, "-m", "app", "chat", str(model), PROMPT, "--temperature", "0",
                           "--repeat-penalty", "1", "--draft", "none", "--max-tokens", str(tokens), "--stats", "json",
                           *extra], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stderr.strip().splitlines()[-1])["tokens_per_s"]


def bench_rate(binary: Path, model: Path, threads: int, tokens: int) -> float:
    done = subprocess.run([str(binary / "llama-bench"), "-m", str(model), "-t", str(threads), "-n", str(tokens),
                           "-p", "0", "-r", "1", "-fa", FLASH_ATTN, "-o", "json"], env=dict(os.environ, LD_LIBRARY_PATH=str(binary)),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)[0]["avg_ts"]


def against_bench(model: Path, binary: Path, threads: int, runs: int, tokens: int) -> dict:
    """`hearth chat` decodes with Hearth's own thread count (it has no flag for it), so llama-bench
    is given the same: `threads` here is always Hearth's choice. The three in turns, each run
    starting one further along."""
    sides = [("llama-bench's context", lambda: chat_rate(model, tokens, "--ctx", str(BENCH_CONTEXT))),
             ("hearth's default context", lambda: chat_rate(model, tokens)),
             ("llama-bench", lambda: bench_rate(binary, model, threads, tokens))]
    rates: dict[str, list[float]] = {side: [] for side, _ in sides}
    for run in range(runs):
        for side, measure in sides[run % 3:] + sides[:run % 3]:
            rates[side].append(measure())
    return {side: _pairs(rates[side], rates["llama-bench"], "tokens/s") for side, _ in sides[:2]}


def budget(model: Path, threads: int, tokens: int) -> dict:
    """Per token, in process: the forward pass, sampling, and the rest of the loop, in µs."""
    from app.engine.llama import draft_verifier, reply_sampler
    from app.engine.llama.generator import Engine
    from app.engine.options import LoadOptions
    from app.engine.sampling import SamplingParams

    spent = {"decode": 0.0, "sample": 0.0}

    def timed(owner, name, key):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - started
        setattr(owner, name, wrapper)

    timed(draft_verifier.DraftVerifier, "_decode", "decode")
    timed(reply_sampler.ReplySampler, "sample", "sample")
    engine = Engine(model, LoadOptions(n_ctx=2048, n_threads=threads))
    results = {}
    try:
        messages = [{"role": "user", "content": "Write a long, detailed story about a lighthouse keeper and a storm."}]
        for name, sampling in (("greedy", dict(temperature=0.0, repeat_penalty=1.0)),
                               ("balanced", dict(seed=7))):
            params = SamplingParams(max_tokens=tokens, draft="none", **sampling)
            rows = []
            for _ in range(3):
                # From the first token's text to the last's: each token between costs one forward
                # pass and one pick, and the prompt's evaluation (timed apart) counts for none.
                times, at_first = [], {}
                for event in engine.stream(messages, params, threading.Event()):
                    if isinstance(event, str):
                        times.append(time.perf_counter())
                        at_first = at_first or dict(spent)
                n = max(len(times) - 1, 1)
                rows.append({"total": (times[-1] - times[0]) / n, "decode": (spent["decode"] - at_first["decode"]) / n,
                             "sample": (spent["sample"] - at_first["sample"]) / n})
            row = {key: statistics.median(r[key] for r in rows) * 1e6 for key in ("total", "decode", "sample")}
            row["python"] = row["total"] - row["decode"] - row["sample"]
            row["sampling_share_of_forward"] = row["sample"] / row["decode"]
            results[name] = {key: round(value, 3 if key.endswith("forward") else 1) for key, value in row.items()}
    finally:
        engine.close()
    gui = ROOT / "bench" / "results" / "gui_path.json"
    if gui.exists():  # bench/gui_path.py's last run: the window's rate against the engine's, per token
        window = json.loads(gui.read_text())
        hop = 1 / window["gui_tokens_per_s"] - 1 / window["engine_tokens_per_s"]
        results["window_hop_us_from_gui_path_json"] = {"per_token": round(hop * 1e6, 1), "gui_path_ratio":
                                                       window["ratio"]}
    return results


def lookup_under_defaults(model: Path, threads: int, runs: int) -> dict:
    from app.engine.llama.generator import Engine
    from app.engine.options import LoadOptions
    from app.engine.sampling import PRESETS, SamplingParams

    engine = Engine(model, LoadOptions(n_ctx=4096, n_threads=threads))
    messages = [{"role": "user", "content": COPY_PROMPT}]
    results = {}
    try:
        for name, base in (("greedy", SamplingParams(temperature=0.0, repeat_penalty=1.0)),
                           ("balanced (the default)", PRESETS["Balanced"].with_changes(seed=7)),
                           ("balanced, repeat penalty 1.1 (the default before #31)",
                            PRESETS["Balanced"].with_changes(seed=7, repeat_penalty=1.1, repeat_last_n=64))):
            rates = {"lookup": [], "none": []}
            for run in range(runs + 1):
                for draft in (("lookup", "none") if run % 2 == 0 else ("none", "lookup")):
                    params = base.with_changes(max_tokens=200, draft=draft)
                    times = []
                    for event in engine.stream(messages, params, threading.Event()):
                        if isinstance(event, str):
                            times.append(time.perf_counter())
                    if run:  # the first pair warms the cache
                        rates[draft].append(rate(times))
            results[name] = _pairs(rates["lookup"], rates["none"], "tokens/s")
    finally:
        engine.close()
    return results


def _pairs(ours: list[float], theirs: list[float], unit: str) -> dict:
    return {"ratio": round(paired(ours, theirs), 3),
            "medians": [round(statistics.median(ours), 2), round(statistics.median(theirs), 2)], "unit": unit}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded Gemma 3 270M)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, help="llama.cpp threads on every side (default: Hearth's choice)")
    parser.add_argument("--only", choices=("served", "bench", "budget", "lookup"), action="append")
    args = parser.parse_args()
    from app.engine.llama.devices import cpu_threads
    from app.owners.paths import default_model

    model = args.model or default_model()
    threads = args.threads or cpu_threads().generate
    parts = args.only or ["served", "bench", "budget", "lookup"]
    binary = reference_bin() if {"served", "bench"} & set(parts) else None
    results = {"model": model.name, "threads": threads, "tokens": args.tokens, "runs": args.runs}
    if "served" in parts:
        results["served"] = served(model, binary, threads, args.runs, args.tokens)
    if "bench" in parts:
        results["chat_vs_llama_bench"] = against_bench(model, binary, cpu_threads().generate, args.runs, args.tokens)
    if "budget" in parts:
        results["per_token_us"] = budget(model, threads, args.tokens)
    if "lookup" in parts:
        results["lookup_copy_heavy"] = lookup_under_defaults(model, threads, args.runs)
    print(json.dumps(results, indent=2))
    out = ROOT / "bench" / "results" / "reference_speed.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
