"""What running llama.cpp in a process of its own costs a reply (#29), in one run.

    .venv/bin/python bench/engine_process.py [--runs 5] [--tokens 128]

The default model (Gemma 3 270M), greedy, the same prompt, read through the Backend interface as
the window's engine thread reads it: the in-process Engine and ProcessBackend (the same Engine in
`hearth --engine-child`, its events framed over a socket pair), interleaved, each loaded once.
Figures, medians of the runs: tokens per second through the child ÷ in process (the issue's
target through the window ≥ 0.98), the time to the first token's difference in ms (target ≤ +5),
and the resident memory of parent + child ÷ the one process (target ≤ 1.1), read from
/proc/PID/status (VmRSS) after the replies. Results also go to bench/results/engine_process.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MESSAGES = [{"role": "user", "content": "Write a long story about a lighthouse keeper and the sea."}]


def timed(backend, tokens: int) -> tuple[float, float]:
    """(time to the first piece, tokens a second after it), as the caller sees them."""
    from app.engine.backend import closing_reply
    from app.engine.sampling import SamplingParams
    from app.engine.types import ReplyStats

    params = SamplingParams(temperature=0.0, max_tokens=tokens, seed=1)
    start = time.perf_counter()
    first = None
    stats = None
    with closing_reply(backend.stream(MESSAGES, params, threading.Event(), conversation_id=None)) as events:
        for event in events:
            if isinstance(event, str) and first is None:
                first = time.perf_counter()
            elif isinstance(event, ReplyStats):
                stats = event
    end = time.perf_counter()
    return first - start, (stats.completion_tokens - 1) / (end - first)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    from app.engine.llama.generator import Engine
    from app.engine.options import LoadOptions
    from app.engine.process.backend import ProcessBackend
    from app.owners.paths import default_model

    model, options = default_model(), LoadOptions(n_ctx=2048)
    before = rss_kb(os.getpid())
    child = ProcessBackend.open(model, options)
    engine = Engine(model, options)
    speed, ttft = [], []
    try:
        for run in range(args.runs):
            in_ttft, in_rate = timed(engine, args.tokens)
            out_ttft, out_rate = timed(child, args.tokens)
            speed.append(out_rate / in_rate)
            ttft.append((out_ttft - in_ttft) * 1000)
            print(f"  run {run + 1}: {in_rate:.1f} → {out_rate:.1f} tok/s; first token {in_ttft * 1000:.0f} → "
                  f"{out_ttft * 1000:.0f} ms", flush=True)
        in_process = rss_kb(os.getpid()) - before  # the engine's share of this process
        separate = rss_kb(child.pid)
    finally:
        child.close()
        engine.close()
    result = {"tokens_per_s_ratio": statistics.median(speed), "ttft_delta_ms": statistics.median(ttft),
              "child_rss_mb": separate / 1024, "in_process_engine_rss_mb": in_process / 1024, "runs": args.runs}
    print(f"through the child ÷ in process, tokens/s: {result['tokens_per_s_ratio']:.3f} (target ≥ 0.98 through the "
          f"window); first token {result['ttft_delta_ms']:+.1f} ms (target ≤ +5); the child's memory "
          f"{result['child_rss_mb']:.0f} MB, the engine's in process {result['in_process_engine_rss_mb']:.0f} MB")
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "engine_process.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
