"""Remote chat through Hearth ÷ the same server read directly by the `openai` client, in one run.

    .venv/bin/python bench/remote_chat.py [--model PATH] [--runs 15] [--tokens 96]

One llama-cpp-python server (`python -m llama_cpp.server`, as tests/support/remote_servers.py starts
it) serves the model on 127.0.0.1 with one thread fewer than the machine has CPUs, so the
client has a core of its own as it would with the server on another machine. The same
streamed, greedy request is then read in turns, Hearth and the reference alternating:
- Hearth: `RemoteBackend.stream` (httpx + httpx-sse, what the GUI and `hearth chat --server`
  use), its tokens/s as Hearth reports it in ReplyStats;
- the reference: `openai.OpenAI().chat.completions.create(stream=True)`, its tokens/s measured
  here the way Hearth measures its own: text events after the first ÷ the time from the first
  to the last (llama_cpp.server sends one event per token and no usage).
Both must write the same text, and the run checks they did. Decode speed here is the server's,
so what differs is each client's cost, and the machine's other load is noise: the figure is
the median of the ratios of adjacent runs (each pair ran under the same load), with median ÷
median beside it (the issue asks for ≥ 0.97), and time to first token. Results also go to
bench/results/remote_chat.json.
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
sys.path.insert(0, str(ROOT / "tests"))  # remote_servers.LlamaServer: the test suite's server

MESSAGES = [{"role": "user", "content": "Write a long, detailed story about a lighthouse keeper and a storm."}]


def hearth_run(backend, params) -> tuple[str, float, float]:
    """Hearth's reply, its tokens/s and time to first token, from its own ReplyStats."""
    pieces = []
    for event in backend.stream(MESSAGES, params, threading.Event()):
        if isinstance(event, str):
            pieces.append(event)
        else:
            stats = event
    if stats.error:
        raise RuntimeError(stats.error)
    return "".join(pieces), stats.tokens_per_s, stats.ttft_s


def openai_run(client, model_id: str, params) -> tuple[str, float, float]:
    """The reference client's reply, tokens/s and time to first token, timed per text event."""
    started = time.perf_counter()
    stream = client.chat.completions.create(
        model=model_id, messages=MESSAGES, stream=True, temperature=params.temperature, top_p=params.top_p,
        max_tokens=params.max_tokens, seed=params.seed,
        extra_body={"top_k": params.top_k, "min_p": params.min_p, "repeat_penalty": params.repeat_penalty},
    )
    pieces, times = [], []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            times.append(time.perf_counter())
            pieces.append(chunk.choices[0].delta.content)
    rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
    return "".join(pieces), rate, times[0] - started if times else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded Gemma 3 270M)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=96)
    args = parser.parse_args()

    import openai
    from support.remote_servers import LlamaServer

    from app.engine.remote.backend import RemoteBackend
    from app.engine.sampling import PRESETS
    from app.engine.types import RemoteModel, ServerConfig
    from app.owners.paths import default_model

    model = args.model or default_model()
    params = PRESETS["Precise"].with_changes(max_tokens=args.tokens, seed=1)
    server = LlamaServer(model, threads=max(1, (os.cpu_count() or 2) - 1))
    try:
        backend = RemoteBackend.open(RemoteModel(ServerConfig(server.base_url), server.model_id))
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        hearth_text, _, _ = hearth_run(backend, params)  # warm-up: the server reads the prompt once
        reference_text, _, _ = openai_run(client, server.model_id, params)
        if hearth_text != reference_text:
            raise SystemExit("Hearth and the openai client read different replies; the comparison is void")
        hearth, reference = [], []
        for _ in range(args.runs):
            hearth.append(hearth_run(backend, params))
            reference.append(openai_run(client, server.model_id, params))
        backend.close()
        client.close()
    finally:
        server.stop()
    if any(text != hearth_text for text, _, _ in hearth + reference):
        raise SystemExit("a run's reply differed from the warm-up's; the comparison is void")
    hearth_rate = statistics.median(rate for _, rate, _ in hearth)
    reference_rate = statistics.median(rate for _, rate, _ in reference)
    result = {
        "model": Path(model).name,
        "runs": args.runs,
        "reply_characters": len(hearth_text),
        "hearth_tokens_per_s": round(hearth_rate, 2),
        "openai_client_tokens_per_s": round(reference_rate, 2),
        "tokens_per_s_ratio": round(statistics.median(h[1] / r[1] for h, r in zip(hearth, reference)), 3),
        "median_over_median": round(hearth_rate / reference_rate, 3),
        "hearth_ttft_s": round(statistics.median(ttft for _, _, ttft in hearth), 4),
        "openai_client_ttft_s": round(statistics.median(ttft for _, _, ttft in reference), 4),
        "hearth_runs_tokens_per_s": [round(rate, 1) for _, rate, _ in hearth],
        "openai_client_runs_tokens_per_s": [round(rate, 1) for _, rate, _ in reference],
    }
    print(json.dumps(result, indent=2))
    out = ROOT / "bench" / "results" / "remote_chat.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
