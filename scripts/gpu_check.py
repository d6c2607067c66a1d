"""Hearth on this machine's GPU, as one JSON line: scripts/gpu-check.sh runs it in .venv-cuda.

    .venv-cuda/bin/python scripts/gpu_check.py [--model PATH] [--runs 3] [--tokens 128]
    python3 scripts/gpu_check.py --preflight   (any Python: is there a GPU to build for?)

Decode speed through Hearth's engine ÷ raw llama-cpp-python, both with every layer on the GPU,
the same prompt, greedy, each sample in a fresh process, the two alternating (the method of
bench/engine_vs_raw.py, whose prompt it shares); time to first token of each; the device
report Hearth gives; and the GUI self-test's verdict. Where there is no GPU to check (no
driver, no device, a CPU build), the line says why, with "ok": false, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.engine_vs_raw import child_engine, raw_llama, timed_raw_reply  # noqa: E402

SELF_TEST_TIMEOUT_S = 600


def child_raw(model: Path, tokens: int) -> dict:
    """llama-cpp-python as a script would use it on a GPU: every layer offloaded."""
    return timed_raw_reply(raw_llama(model, default_threads=True, n_gpu_layers=-1), model, tokens)


CHILDREN = {"raw": child_raw, "engine": child_engine}


def run_child(role: str, model: Path, tokens: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", role, "--model", str(model), "--tokens", str(tokens)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def self_test() -> dict:
    """`hearth --self-test`, headless: its verdict line (which names the device it ran on)."""
    run = subprocess.run([sys.executable, "-m", "app", "--self-test"], capture_output=True, text=True, cwd=ROOT,
                         env=os.environ | {"QT_QPA_PLATFORM": "offscreen"}, timeout=SELF_TEST_TIMEOUT_S)
    verdict = next((line for line in run.stdout.splitlines() if line.startswith("self-test ")), run.stderr[-500:])
    return {"passed": run.returncode == 0 and verdict.startswith("self-test passed"), "output": verdict}


def preflight() -> dict | None:
    """Why there is no GPU to check here, asked of the driver alone (no llama.cpp needed), or None."""
    from app.engine.llama.cuda_driver import check_driver

    check = check_driver(runtime_version=lambda: None)
    return None if check.devices else {"ok": False, "error": f"no GPU to check: {check.reason}"}


def check(model: Path | None, runs: int, tokens: int) -> dict:
    from app.engine.llama.devices import devices, offload_support

    support = offload_support()
    if not support.gpu:
        return {"ok": False, "error": f"no GPU to check: {support.describe()}", "device": support.describe()}
    if model is None:
        from app.owners.paths import default_model

        model = default_model()
    raw, engine = [], []
    for _ in range(runs):
        raw.append(run_child("raw", model, tokens))
        engine.append(run_child("engine", model, tokens))
    raw_tps = statistics.median(r["tokens_per_s"] for r in raw)
    engine_tps = statistics.median(e["tokens_per_s"] for e in engine)
    test = self_test()
    return {
        "ok": test["passed"] and all(r["tokens"] == e["tokens"] == tokens for r, e in zip(raw, engine)),
        "model": model.name, "runs": runs, "tokens": tokens,
        "decode_tokens_per_s": {"hearth": round(engine_tps, 2), "raw": round(raw_tps, 2),
                                "ratio": round(engine_tps / raw_tps, 3)},
        "ttft_s": {"hearth": round(statistics.median(e["ttft_s"] for e in engine), 4),
                   "raw": round(statistics.median(r["ttft_s"] for r in raw), 4)},
        "device": engine[0]["device"],
        "gpus": [{"name": d.name, "description": d.description, "memory_total": d.memory_total}
                 for d in devices() if d.kind in ("GPU", "IGPU")],
        "self_test": test,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--preflight", action="store_true", help="only say whether a GPU is there to build for")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.preflight:
        result = preflight()
        if result is not None:
            print(json.dumps(result))
        return 0 if result is None else 1
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.model, args.tokens)))
        return 0
    result = check(args.model, args.runs, args.tokens)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
