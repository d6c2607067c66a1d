"""`hearth serve` ÷ raw llama-cpp-python, ÷ llama_cpp.server, and its first token ÷ the engine's, in one run.

    .venv/bin/python bench/serve_speed.py [--model PATH] [--runs 9] [--tokens 128] [--threads N]

Four things hold the same model at once, each with the same llama.cpp thread count (--threads,
by default one fewer than the machine has CPUs, so the client and the servers' event loops have
a core of their own, as bench/remote_chat.py does):
- Hearth's server, `hearth serve` (tests/support/served.py starts it as a user would), read by
  the official `openai` client, streamed;
- raw llama-cpp-python in this process: `Llama.create_completion(stream=True)` on the prompt
  Hearth's template renders (what a script that skips any server gets);
- llama-cpp-python's own server, `python -m llama_cpp.server` (tests/support/remote_servers.py), read
  by the same `openai` client;
- Hearth's Engine in this process: tokens/s and time to first token without the server.

1. Decode speed. The same greedy request (the lighthouse story of bench/engine_vs_raw.py,
   repeat penalty 1), taken in turns by the server, raw llama-cpp-python, llama_cpp.server and
   the engine alone (the order rotating from run to run); tokens/s from the times the reader
   saw each piece, (pieces - 1) ÷ (last - first), on every side alike. Each must write at
   least 90% of --tokens pieces, or the comparison is void. llama_cpp.server applies its own
   Gemma format, so its text may differ a little; the count of pieces is what is compared. The
   issue asks for served ÷ raw ≥ 0.95 and served ÷ llama_cpp.server ≥ 1.0; served ÷ engine is
   what the server itself costs (HTTP, the queue, the reader in another process), engine ÷ raw
   what the engine does (bench/engine_vs_raw.py's figure, here at the bench's thread count).
2. Time to first token: a request of ~190 prompt tokens, different in its first words at each
   run so that no prefix cache helps either side, through the server (request sent → first
   text piece read) ÷ the engine alone (`Engine.stream` called → first piece). The issue asks
   ≤ 1.1 "plus a few ms": the milliseconds the server adds are shown as well.

Each figure is the median of the ratios of adjacent runs (each pair ran under the same load),
with median ÷ median beside it. Results also go to bench/results/serve_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # support: remote_servers.LlamaServer, served.Served

N_CTX = 4096
STORY = [{"role": "user", "content": "Write a long, detailed story about a lighthouse keeper and a storm."}]
BRIEF = (
    "You are helping a small museum write the notes for an exhibition about lighthouses. The exhibition "
    "has five rooms: the history of coastal lights from bonfires to lenses; the keepers and their "
    "families, with letters and logbooks; the great storms and the rescues the lights made possible; the "
    "engineering of towers on rock and sand; and automation, when the last keepers left. Visitors are "
    "families with children and retired sailors, so the notes must be exact but warm, never dry. Each "
    "room needs a title, a paragraph of introduction and three captions for objects. Keep the captions "
    "under forty words each and mention a date or a place in every one of them. The curator prefers "
    "British spelling, plain words and short sentences, and asks that nothing be invented: where a "
    "detail is uncertain, say so. Start with the room about the great storms."
)


def ttft_messages(run: int) -> list[dict]:
    """A prompt of ~190 tokens whose first words change at every run (no prefix to reuse)."""
    return [{"role": "user", "content": f"Request {run} of the day. {BRIEF}"}]


def rate(times: list[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0


def stream_times(stream, text_of) -> list[float]:
    """When each piece of text arrived."""
    times = []
    for chunk in stream:
        if chunk.choices and text_of(chunk.choices[0]):
            times.append(time.perf_counter())
    return times


def served_rate(client, model_id: str, tokens: int) -> tuple[float, int]:
    stream = client.chat.completions.create(model=model_id, messages=STORY, stream=True, temperature=0,
                                            max_tokens=tokens, extra_body={"repeat_penalty": 1.0})
    times = stream_times(stream, lambda choice: choice.delta.content)
    return rate(times), len(times)


def raw_rate(llm, prompt: str, tokens: int) -> tuple[float, int]:
    times = []
    for chunk in llm.create_completion(prompt, max_tokens=tokens, temperature=0.0, repeat_penalty=1.0, stream=True):
        if chunk["choices"][0]["text"]:
            times.append(time.perf_counter())
    return rate(times), len(times)


def engine_rate(engine, params) -> tuple[float, int]:
    import threading

    times = []
    for event in engine.stream(STORY, params, threading.Event()):
        if isinstance(event, str):
            times.append(time.perf_counter())
    return rate(times), len(times)


def served_ttft(client, model_id: str, messages: list[dict]) -> float:
    started = time.perf_counter()
    stream = client.chat.completions.create(model=model_id, messages=messages, stream=True, temperature=0,
                                            max_tokens=2)
    first = None
    for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter()
    return first - started


def engine_ttft(engine, params, messages: list[dict]) -> float:
    import threading

    started = time.perf_counter()
    first = None
    for event in engine.stream(messages, params, threading.Event()):
        if first is None and isinstance(event, str):
            first = time.perf_counter()
    return first - started


def paired(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded Gemma 3 270M)")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    args = parser.parse_args()

    import openai
    from llama_cpp import Llama
    from support.remote_servers import LlamaServer
    from support.served import Served

    from app.engine.gguf.reading import inspect_model
    from app.engine.llama.generator import Engine
    from app.engine.memory_plan import WHOLE_WINDOW_CACHE
    from app.engine.sampling import PRESETS
    from app.engine.templates.chat_template import template_for
    from app.engine.types import LoadOptions
    from app.owners.paths import default_model

    model = args.model or default_model()
    threads = str(args.threads)
    hearth = Served(model, "--threads", threads, "--ctx", str(N_CTX))
    reference = None
    try:
        reference = LlamaServer(model, n_ctx=N_CTX, threads=args.threads)
        llm = Llama(model_path=str(model), n_ctx=N_CTX, n_threads=args.threads, n_threads_batch=args.threads,
                    swa_full=WHOLE_WINDOW_CACHE, verbose=False)
        bos = llm.detokenize([llm.token_bos()], special=True).decode()
        raw_prompt = template_for(inspect_model(model)).render(STORY).removeprefix(bos)  # create_completion adds BOS
        engine = Engine(model, LoadOptions(n_ctx=N_CTX, n_threads=args.threads))
        ttft_params = PRESETS["Precise"].with_changes(max_tokens=2)
        rate_params = PRESETS["Precise"].with_changes(max_tokens=args.tokens)  # greedy, repeat penalty 1
        ours = openai.OpenAI(base_url=hearth.base_url, api_key="unused", max_retries=0)
        theirs = openai.OpenAI(base_url=reference.base_url, api_key="unused", max_retries=0)

        # Warm-up: each side reads its prompt once.
        served_rate(ours, hearth.model_id, 8), raw_rate(llm, raw_prompt, 8)
        served_rate(theirs, reference.model_id, 8), engine_ttft(engine, ttft_params, ttft_messages(-1))
        served_ttft(ours, hearth.model_id, ttft_messages(-2))

        sides = {
            "served": lambda: served_rate(ours, hearth.model_id, args.tokens),
            "raw": lambda: raw_rate(llm, raw_prompt, args.tokens),
            "llama_server": lambda: served_rate(theirs, reference.model_id, args.tokens),
            "engine": lambda: engine_rate(engine, rate_params),
        }
        samples: dict[str, list[tuple[float, int]]] = {name: [] for name in sides}
        for run in range(args.runs):
            order = list(sides)[run % len(sides):] + list(sides)[:run % len(sides)]  # none always follows another
            for name in order:
                samples[name].append(sides[name]())
        served, raw, llama_server, alone_rate = (samples[name] for name in sides)
        through_server, alone = [], []
        for run in range(args.runs):
            through_server.append(served_ttft(ours, hearth.model_id, ttft_messages(run)))
            alone.append(engine_ttft(engine, ttft_params, ttft_messages(run)))
        ours.close()
        theirs.close()
        engine.close()
        llm.close()
    finally:
        hearth.stop()
        if reference is not None:
            reference.stop()

    for name, side in (("hearth serve", served), ("raw llama-cpp-python", raw), ("llama_cpp.server", llama_server),
                       ("the engine", alone_rate)):
        if min(count for _, count in side) < 0.9 * args.tokens:
            raise SystemExit(f"{name} wrote fewer than 90% of {args.tokens} pieces; the comparison is void")
    served_tps, raw_tps, server_tps, engine_tps = (
        [tps for tps, _ in side] for side in (served, raw, llama_server, alone_rate))
    result = {
        "model": Path(model).name,
        "runs": args.runs,
        "tokens": args.tokens,
        "threads": args.threads,
        "served_tokens_per_s": round(statistics.median(served_tps), 2),
        "raw_tokens_per_s": round(statistics.median(raw_tps), 2),
        "llama_cpp_server_tokens_per_s": round(statistics.median(server_tps), 2),
        "served_vs_raw": round(paired(served_tps, raw_tps), 3),
        "served_vs_raw_median_over_median": round(statistics.median(served_tps) / statistics.median(raw_tps), 3),
        "served_vs_llama_cpp_server": round(paired(served_tps, server_tps), 3),
        "served_vs_llama_cpp_server_median_over_median":
            round(statistics.median(served_tps) / statistics.median(server_tps), 3),
        # What the server itself costs: the same engine, through HTTP and the queue ÷ called directly.
        "engine_tokens_per_s": round(statistics.median(engine_tps), 2),
        "served_vs_engine": round(paired(served_tps, engine_tps), 3),
        "engine_vs_raw": round(paired(engine_tps, raw_tps), 3),
        "served_ttft_s": round(statistics.median(through_server), 4),
        "engine_ttft_s": round(statistics.median(alone), 4),
        "ttft_ratio": round(paired(through_server, alone), 3),
        "ttft_added_ms": round(statistics.median(s - e for s, e in zip(through_server, alone)) * 1000, 1),
        "asked": {"served_vs_raw": ">= 0.95", "served_vs_llama_cpp_server": ">= 1.0", "ttft_ratio": "<= 1.1"},
        "served_runs_tokens_per_s": [round(x, 1) for x in served_tps],
        "raw_runs_tokens_per_s": [round(x, 1) for x in raw_tps],
        "llama_cpp_server_runs_tokens_per_s": [round(x, 1) for x in server_tps],
        "engine_runs_tokens_per_s": [round(x, 1) for x in engine_tps],
        "served_runs_ttft_ms": [round(x * 1000, 1) for x in through_server],
        "engine_runs_ttft_ms": [round(x * 1000, 1) for x in alone],
    }
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results" / "serve_speed.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
