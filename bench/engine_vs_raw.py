"""Engine figures as ratios against raw llama-cpp-python, measured in one run on one model.

    .venv/bin/python bench/engine_vs_raw.py [--model PATH] [--runs 5] [--tokens 128]

1. Decode speed: Hearth's engine tokens/s ÷ raw `Llama.create_completion(stream=True)`
   tokens/s, same prompt, greedy, no logit bias (llama-cpp-python applies one with a numpy
   pass per token, which would slow the raw side), so both write the same tokens; the run
   checks they wrote the same number. Each sample is a fresh process; raw and engine alternate.
   Raw gets the thread counts the engine picks (app/engine/llama/devices.py). Also shown: raw with
   llama-cpp-python's default threads (half the logical CPUs), what Hearth used to get.
2. Time to first token at turn 8 of a conversation (~1,500 tokens of history) ÷ at turn 1,
   in one engine session (prefix reuse), next to turn 8 in a cold engine for contrast.
3. Peak RSS of `hearth chat` ÷ a raw llama-cpp-python script producing the same reply,
   each in its own process (os.wait4 reports the child's own peak).

Medians of --runs samples; results also go to bench/results/engine_vs_raw.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROMPT_TEXT = "Write a long, detailed story about a lighthouse keeper and a storm."
N_CTX = 4096


def banned_tokens(model: Path) -> dict[int, float]:
    from app.engine.gguf.reading import inspect_model

    return {token.id: -1000.0 for token in inspect_model(model).end_of_turn}


def rendered_prompt(model: Path) -> str:
    from app.engine.gguf.reading import inspect_model
    from app.engine.templates.chat_template import template_for

    return template_for(inspect_model(model)).render([{"role": "user", "content": PROMPT_TEXT}])


def decode_rate(times: list[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0])


# --- child processes ---------------------------------------------------------------------------

def raw_llama(model: Path, default_threads: bool = False, **load):
    """llama-cpp-python as a script would use it, with the engine's thread counts unless asked;
    `load`: more of Llama's arguments (n_gpu_layers, for scripts/gpu_check.py)."""
    from llama_cpp import Llama

    from app.engine.llama.devices import cpu_threads
    from app.engine.memory_plan import WHOLE_WINDOW_CACHE

    threads = {} if default_threads else {"n_threads": cpu_threads().generate, "n_threads_batch": cpu_threads().prompt}
    return Llama(model_path=str(model), n_ctx=N_CTX, swa_full=WHOLE_WINDOW_CACHE, verbose=False, **threads, **load)


def child_raw(model: Path, tokens: int, default_threads: bool = False) -> dict:
    return timed_raw_reply(raw_llama(model, default_threads), model, tokens)


def timed_raw_reply(llm, model: Path, tokens: int) -> dict:
    """The greedy reply to PROMPT_TEXT through `create_completion(stream=True)`, timed."""
    prompt = rendered_prompt(model)
    bos = llm.detokenize([llm.token_bos()], special=True).decode()
    prompt = prompt.removeprefix(bos)  # create_completion adds BOS itself
    times = []
    start = time.perf_counter()
    for chunk in llm.create_completion(prompt, max_tokens=tokens, temperature=0.0, repeat_penalty=1.0,
                                       stream=True):
        if chunk["choices"][0]["finish_reason"] is None:  # the last chunk only reports the end
            times.append(time.perf_counter())
    return {"tokens": len(times), "tokens_per_s": decode_rate(times), "ttft_s": times[0] - start}


def child_engine(model: Path, tokens: int) -> dict:
    """Hearth's engine with its defaults (every layer on the GPU when the build sees one)."""
    from app.engine.llama.generator import Engine
    from app.engine.sampling import SamplingParams
    from app.engine.types import LoadOptions

    engine = Engine(model, LoadOptions(n_ctx=N_CTX))
    params = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=tokens)
    times = []
    start = time.perf_counter()
    for event in engine.stream([{"role": "user", "content": PROMPT_TEXT}], params):
        if isinstance(event, str):
            times.append(time.perf_counter())
        else:
            stats = event
    return {"tokens": stats.completion_tokens, "tokens_per_s": decode_rate(times), "ttft_s": times[0] - start,
            "device": engine.device.describe()}


def child_turns(model: Path, tokens: int) -> dict:
    """TTFT per turn through 8 turns in one session, and turn 8 again in a cold engine."""
    from app.engine.llama.generator import Engine
    from app.engine.sampling import SamplingParams
    from app.engine.types import LoadOptions

    params = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=160, logit_bias=banned_tokens(model))
    engine = Engine(model, LoadOptions(n_ctx=N_CTX))
    conversation: list[dict] = []
    ttfts, prompt_sizes, evaluated = [], [], []
    for turn in range(8):
        conversation.append({"role": "user", "content": f"Turn {turn + 1}. " + PROMPT_TEXT + " Add more details about the sea, the light and the keeper's daily routine."})
        text = []
        for event in engine.stream(conversation, params):
            if isinstance(event, str):
                text.append(event)
            else:
                ttfts.append(event.ttft_s)
                prompt_sizes.append(event.prompt_tokens)
                evaluated.append(event.evaluated_prompt_tokens)
        if turn < 7:
            conversation.append({"role": "assistant", "content": "".join(text)})
    engine.close()
    cold = Engine(model, LoadOptions(n_ctx=N_CTX))
    for event in cold.stream(conversation, params.with_changes(max_tokens=1)):
        if not isinstance(event, str):
            cold_ttft = event.ttft_s
    return {"ttft": ttfts, "prompt_tokens": prompt_sizes, "evaluated": evaluated, "cold_turn8_ttft": cold_ttft}


def child_raw_reply(model: Path, tokens: int) -> dict:
    """The raw script for the memory comparison: load, one greedy reply, exit."""
    llm = raw_llama(model)
    prompt = rendered_prompt(model).removeprefix(llm.detokenize([llm.token_bos()], special=True).decode())
    out = llm.create_completion(prompt, max_tokens=tokens, temperature=0.0, repeat_penalty=1.0,
                                logit_bias=banned_tokens(model))
    return {"tokens": out["usage"]["completion_tokens"]}


CHILDREN = {
    "raw": child_raw, "raw_default_threads": lambda model, tokens: child_raw(model, tokens, default_threads=True),
    "engine": child_engine, "turns": child_turns, "raw_reply": child_raw_reply,
}


# --- parent ------------------------------------------------------------------------------------

def run_child(role: str, model: Path, tokens: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", role, "--model", str(model), "--tokens", str(tokens)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def peak_rss_mb(command: list[str]) -> float:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"{command} exited with {status}")
    return usage.ru_maxrss / 1024  # Linux reports KiB


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--child", choices=sorted(CHILDREN))
    args = parser.parse_args()
    if args.model is None:
        from app.owners.paths import default_model

        args.model = default_model()
    from app.engine.llama.devices import cpu_threads

    if args.child:
        print(json.dumps(CHILDREN[args.child](args.model, args.tokens)))
        return

    raw, engine, raw_default = [], [], []
    for _ in range(args.runs):
        raw.append(run_child("raw", args.model, args.tokens))
        engine.append(run_child("engine", args.model, args.tokens))
        raw_default.append(run_child("raw_default_threads", args.model, args.tokens))
    assert all(r["tokens"] == args.tokens for r in raw + engine), "both sides must generate the same count"
    raw_tps = statistics.median(r["tokens_per_s"] for r in raw)
    engine_tps = statistics.median(r["tokens_per_s"] for r in engine)
    raw_default_tps = statistics.median(r["tokens_per_s"] for r in raw_default)

    turns = [run_child("turns", args.model, args.tokens) for _ in range(args.runs)]
    turn1 = statistics.median(t["ttft"][0] for t in turns)
    turn8 = statistics.median(t["ttft"][7] for t in turns)
    cold8 = statistics.median(t["cold_turn8_ttft"] for t in turns)

    hearth_cmd = [sys.executable, "-m", "app", "chat", str(args.model), PROMPT_TEXT, "--temperature", "0",
                  "--repeat-penalty", "1.0", "--max-tokens", str(args.tokens), "--ctx", str(N_CTX)]
    raw_cmd = [sys.executable, __file__, "--child", "raw_reply", "--model", str(args.model), "--tokens", str(args.tokens)]
    hearth_rss, raw_rss = [], []
    for _ in range(args.runs):
        hearth_rss.append(peak_rss_mb(hearth_cmd))
        raw_rss.append(peak_rss_mb(raw_cmd))

    results = {
        "model": str(args.model), "runs": args.runs, "tokens": args.tokens,
        "decode": {"raw_tokens_per_s": raw_tps, "engine_tokens_per_s": engine_tps, "ratio": engine_tps / raw_tps,
                   "raw_samples": [r["tokens_per_s"] for r in raw], "engine_samples": [r["tokens_per_s"] for r in engine],
                   "threads": asdict(cpu_threads()), "raw_default_threads_tokens_per_s": raw_default_tps},
        "ttft": {"turn1_s": turn1, "turn8_s": turn8, "ratio": turn8 / turn1, "cold_turn8_s": cold8,
                 "turn8_prompt_tokens": turns[0]["prompt_tokens"][7], "turn8_evaluated_tokens": turns[0]["evaluated"][7]},
        "memory": {"hearth_chat_peak_rss_mb": statistics.median(hearth_rss), "raw_peak_rss_mb": statistics.median(raw_rss),
                   "ratio": statistics.median(hearth_rss) / statistics.median(raw_rss)},
    }
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "engine_vs_raw.json").write_text(json.dumps(results, indent=2))
    d, t, m = results["decode"], results["ttft"], results["memory"]
    print(f"decode tok/s   engine {d['engine_tokens_per_s']:.2f} / raw {d['raw_tokens_per_s']:.2f} = {d['ratio']:.3f}  (target >= 0.98; "
          f"threads {d['threads']}; raw with llama-cpp-python's default threads: {d['raw_default_threads_tokens_per_s']:.2f})")
    print(f"TTFT turn 8 {t['turn8_s']*1000:.0f} ms / turn 1 {t['turn1_s']*1000:.0f} ms = {t['ratio']:.2f}  (target <= 1.5; "
          f"turn 8 holds {t['turn8_prompt_tokens']} prompt tokens, {t['turn8_evaluated_tokens']} evaluated; cold turn 8 {t['cold_turn8_s']*1000:.0f} ms)")
    print(f"peak RSS       hearth chat {m['hearth_chat_peak_rss_mb']:.0f} MB / raw {m['raw_peak_rss_mb']:.0f} MB = {m['ratio']:.2f}  (target <= 1.2)")


if __name__ == "__main__":
    main()
