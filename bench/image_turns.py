"""An image conversation's second turn ÷ a text conversation's, and what encoding an image costs
(#30), in one run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/image_turns.py [--runs 5] [--tiny-runs 21]
        [--blocks 27] [--threads N]

Through the engine's own process (ProcessBackend: `hearth --engine-child`, what the window and
`hearth serve` run), read as the window's engine thread reads it. Not through `hearth serve` and
the openai client: image_url parts in `hearth serve` were being written at the same time as this
bench, and the server hands images to the same ProcessBackend, so these are the same path less
HTTP.

Two pairs, each a real llama.cpp model with a gemma3-type projector (libmtmd), random weights:
- the tiny pair (tests/support/model_files/tiny_vision.py: 64-wide tinyllama-family model, a
  one-block projector, 16 tokens an image);
- a pair shaped like Gemma 3 4B's: the projector has the real one's sizes (GEMMA3_4B_SHAPE:
  SigLIP so400m, 896 px images in 14 px patches, 27 blocks 1152 wide, 16 heads, ffn 4304,
  pooled to 256 tokens, f16 matrices: 810 MB, the real f16 file is about 850 MB), projecting
  into a 2-layer llama-architecture model 2560 wide (Gemma 3 4B's width; n_ff 10240, TinyLlama's
  vocab and template; Gemma 3 4B has 34 layers, so everything the language model does here is
  cheaper than there). `--blocks N` writes the projector with N blocks instead of 27. Built once
  into ~/.cache/hearth/bench/image-turns/ (about 1.3 GB at 27 blocks), never into the repository.

Figure 1, second-turn time to first token, image conversation ÷ text conversation (the issue
asks ≤ 1.5). Each run holds two conversations, one after the other (which goes first
alternates), on one loaded model:
- image: turn 1 = a photo-sized JPEG (1024 × 768, about 500 KB, new each run, so turn 1 is
  always cold) and a question, answered in ANSWER_TOKENS tokens (greedy, end of turn banned, so
  both answers are as long); turn 2 = that history and a new question;
- text: the same, with words in place of the image, as many tokens as the image takes in the
  prompt (calibrated once from the prompt counts both report; each run's counts are kept), new
  words each run.
Turn 2's time is from `stream()` called to its first token's text (one token asked), as the
caller sees it: whether the image is evaluated again, or carried to the engine's process
again. Beside it, the engine's own time to the first token (ReplyStats.ttft_s, from its decode
loop's start) and the prompt tokens turn 2 evaluated. Each run's conversations start
differently, so no run reuses another's prefix. The figure is the median of the runs' ratios,
with median ÷ median beside it.

Figure 2, encode time per image, two ways, labelled apart:
- in process: an Engine loaded in this process, a new image each run, one token asked;
  `Vision.encode_seconds` (libmtmd's mtmd_helper_eval_chunk_single: the projector's encoding and
  the language model's decoding of the image's positions into the KV cache);
- through the process: turn 1's time to first token with the image minus the text
  conversation's (same prompt length), run by run, median: the projector's encoding plus the
  image's own preparation (carried to the child, the JPEG decoded, resized to the projector's
  size, libmtmd's tokenizing) as the caller waits for them.
With --blocks N below 27, the in-process figure is also measured with a 1-block projector, run
for run beside the N-block one: per block = (t_N − t_1) ÷ (N − 1), the rest = t_1 − per block
(patch embedding, pooling, projection, and this 2-layer model's decoding of the 256 positions),
and the 27-block time is an extrapolation, the rest + 27 × per block, labelled as one.

`--threads N` loads with N CPU threads (LoadOptions.n_threads, which libmtmd's encoding takes too);
the default is the app's own, one per physical core. On a machine whose cores other work shares,
one thread gives steadier figures: llama.cpp's threads wait for each other at every step, and a
thread the system sets aside stalls the rest.

Results also go to bench/results/image_turns.json. The seconds are this machine's CPUs'.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import io
import json
import random
import statistics
import sys
import threading
import time
import zlib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # support.model_files: the pairs' writers

CACHE = Path.home() / ".cache" / "hearth" / "bench" / "image-turns"
N_CTX = 2048
ANSWER_TOKENS = 8  # turn 1's answer, in both conversations
PHOTO = (1024, 768)  # each run's picture: a photo's size, as a user attaches one
FIRST_QUESTION = "What is in this picture, and what stands out in it?"
SECOND_QUESTION = "Tell me more about its colours, please."
# Words of one Llama 2 SentencePiece token each (with the space before them): the text
# conversation's stand-in for an image.
WORDS = ("the sea light house keeper storm rock wave ship boat night lamp tower wind rain cold "
         "stone door road tree bird fish sand red blue green white black old new small long "
         "high low man woman child dog cat bread milk salt fire water iron wood glass paper").split()
REAL_BLOCKS = 27  # Gemma 3 4B's projector


@dataclass(frozen=True)
class WideModel:
    """The language model under the Gemma-3-4B-shaped projector: its width, few layers."""

    n_embd: int = 2560
    n_layer: int = 2
    n_head: int = 20
    n_head_kv: int = 4
    n_ff: int = 10240


WIDE = WideModel()


# --- the pairs ----------------------------------------------------------------------------------

def write_wide_model(path: Path, shape: WideModel) -> None:
    """A llama-architecture chat model `shape.n_embd` wide with the tinyllama family's tokenizer
    and template (tiny_models' writer, at another width), random f16 weights."""
    import numpy as np
    from gguf import GGUFWriter, LlamaFileType
    from support.model_files import tiny_models as tiny
    from support.model_files.tiny_gguf import write_gguf
    from support.model_files.tiny_vision import LANGUAGE_FAMILY

    family = next(f for f in tiny.TINY_FAMILIES if f.name == LANGUAGE_FAMILY)
    vocab = tiny.read_metadata(tiny.VOCAB_DIR / family.vocab)
    entry = tiny.load_families_json()[family.name]
    n_vocab = len(vocab["tokenizer.ggml.tokens"])
    head_dim = shape.n_embd // shape.n_head
    rng = np.random.default_rng(zlib.crc32(b"hearth-bench-wide"))

    def keys(writer: GGUFWriter) -> None:
        writer.add_name("hearth-bench-gemma3-4b-shaped")
        writer.add_file_type(LlamaFileType.MOSTLY_F16)
        writer.add_context_length(tiny.CONTEXT_LENGTH)
        writer.add_embedding_length(shape.n_embd)
        writer.add_block_count(shape.n_layer)
        writer.add_feed_forward_length(shape.n_ff)
        writer.add_head_count(shape.n_head)
        writer.add_head_count_kv(shape.n_head_kv)
        writer.add_layer_norm_rms_eps(1e-5)
        writer.add_rope_dimension_count(head_dim)
        writer.add_rope_freq_base(10000.0)
        writer.add_vocab_size(n_vocab)
        tiny.add_tokenizer(writer, family, vocab, entry["chat_template"])

    def weight(*dims):
        return (rng.standard_normal(dims, dtype=np.float32) * 0.02).astype(np.float16)

    def tensors():
        yield "token_embd.weight", weight(n_vocab, shape.n_embd)  # the output layer is tied to it
        yield "output_norm.weight", np.ones(shape.n_embd, dtype=np.float32)
        for i in range(shape.n_layer):
            yield f"blk.{i}.attn_norm.weight", np.ones(shape.n_embd, dtype=np.float32)
            yield f"blk.{i}.attn_q.weight", weight(shape.n_embd, shape.n_embd)
            yield f"blk.{i}.attn_k.weight", weight(shape.n_head_kv * head_dim, shape.n_embd)
            yield f"blk.{i}.attn_v.weight", weight(shape.n_head_kv * head_dim, shape.n_embd)
            yield f"blk.{i}.attn_output.weight", weight(shape.n_embd, shape.n_embd)
            yield f"blk.{i}.ffn_norm.weight", np.ones(shape.n_embd, dtype=np.float32)
            yield f"blk.{i}.ffn_gate.weight", weight(shape.n_ff, shape.n_embd)
            yield f"blk.{i}.ffn_up.weight", weight(shape.n_ff, shape.n_embd)
            yield f"blk.{i}.ffn_down.weight", weight(shape.n_embd, shape.n_ff)

    write_gguf(path, "llama", keys, tensors())


def _key(*parts: object) -> str:
    """A cache key: the writers' sources and the shapes asked for."""
    from support.model_files import tiny_models as tiny
    from support.model_files import tiny_vision

    digest = hashlib.sha256(repr(parts).encode())
    digest.update(Path(tiny_vision.__file__).read_bytes())
    digest.update(tiny.source_key().encode())
    return digest.hexdigest()[:16]


@cache
def wide_model() -> Path:
    """The model under the Gemma-3-4B-shaped projectors, built once into CACHE (its key read
    once a run: every projector of the run goes with the same file)."""
    from support.model_files import tiny_models as tiny

    folder = tiny.cached_build(CACHE / "model", _key(WIDE, inspect.getsource(write_wide_model)),
                               lambda staging: write_wide_model(staging / "gemma3-4b-shaped.gguf", WIDE))
    return folder / "gemma3-4b-shaped.gguf"


def wide_pair(blocks: int):
    """The Gemma-3-4B-shaped pair with a `blocks`-block projector, each projector built once
    into a folder of its own in CACHE."""
    from support.model_files import tiny_models as tiny
    from support.model_files.tiny_vision import GEMMA3_4B_SHAPE, PROJECTOR_TYPE, VisionPair, write_projector

    shape = replace(GEMMA3_4B_SHAPE, blocks=blocks)
    projector = tiny.cached_build(CACHE / f"mmproj-{blocks}-blocks", _key(shape, WIDE.n_embd),
                                  lambda folder: write_projector(folder / "mmproj.gguf", WIDE.n_embd, shape))
    return VisionPair(wide_model(), projector / "mmproj.gguf", shape.image_tokens, PROJECTOR_TYPE, shape.image_size,
                      WIDE.n_embd)


# --- what each run sends ------------------------------------------------------------------------

def photo(label: str, run: int):
    """A photo-sized JPEG no other run sends: noise over a colour gradient."""
    import numpy as np
    from PIL import Image as Picture

    from app.images.image import Image

    rng = np.random.default_rng(zlib.crc32(f"{label}:{run}".encode()))
    width, height = PHOTO
    gradient = np.linspace(0, 1, width, dtype=np.float32)[None, :, None] * rng.uniform(0, 255, 3)
    pixels = np.clip(gradient + rng.normal(0, 40, (height, width, 3)), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Picture.fromarray(pixels, "RGB").save(buffer, "JPEG", quality=90)
    return Image(buffer.getvalue(), "image/jpeg", width, height)


def words(label: str, run: int, count: int) -> str:
    chooser = random.Random(f"{label}:{run}")
    return " ".join(chooser.choice(WORDS) for _ in range(count)).capitalize()


def openings(label: str, run: int, filler: int) -> dict[str, dict]:
    """The first user message of each conversation of a run: the same question, after an image or
    after `filler` words."""
    return {"image": {"role": "user", "content": FIRST_QUESTION, "images": (photo(label, run),)},
            "text": {"role": "user", "content": f"{words(label, run, filler)}\n{FIRST_QUESTION}"}}


# --- one turn, one conversation -----------------------------------------------------------------

@dataclass
class Turn:
    ttft_s: float  # stream() called -> the first token's text (or the reply's end, had it none)
    engine_ttft_s: float  # the engine's own: its decode loop began -> the first token (ReplyStats)
    text: str
    prompt_tokens: int
    evaluated: int  # prompt tokens evaluated (the rest came from the cache)


def ask(backend, messages: list[dict], params, conversation_id: int | None) -> Turn:
    from app.engine.backend import closing_reply
    from app.engine.types import ReplyStats

    pieces, first, stats = [], None, None
    started = time.perf_counter()
    with closing_reply(backend.stream(messages, params, threading.Event(), conversation_id=conversation_id)) as events:
        for event in events:
            if isinstance(event, str):
                first = first or time.perf_counter()
                pieces.append(event)
            elif isinstance(event, ReplyStats):
                first = first or time.perf_counter()
                stats = event
    if stats is None or stats.error:
        raise SystemExit(f"the reply failed: {stats}")
    return Turn(first - started, stats.ttft_s, "".join(pieces), stats.prompt_tokens, stats.evaluated_prompt_tokens)


class Conversations:
    """Turns 1 and 2 of a conversation on one backend: the answer's and the first token's
    settings, and a new conversation id for each conversation."""

    def __init__(self, backend, model: Path):
        from app.engine.gguf.reading import inspect_model
        from app.engine.sampling import SamplingParams

        banned = {token.id: -1000.0 for token in inspect_model(model).end_of_turn}
        self.backend = backend
        self.answer = SamplingParams(temperature=0.0, max_tokens=ANSWER_TOKENS, seed=1, logit_bias=banned)
        self.first_token = self.answer.with_changes(max_tokens=1)
        self._ids = iter(range(1, 1 << 30))

    def turns(self, opening: dict) -> tuple[Turn, Turn]:
        conversation = next(self._ids)
        first = ask(self.backend, [opening], self.answer, conversation)
        history = [opening, {"role": "assistant", "content": first.text}, {"role": "user", "content": SECOND_QUESTION}]
        return first, ask(self.backend, history, self.first_token, conversation)

    def first_turn(self, opening: dict) -> Turn:
        return ask(self.backend, [opening], self.first_token, next(self._ids))


def filler_for(talks: Conversations, label: str) -> int:
    """How many WORDS stand in for an image: turn 1's prompt length with the image, less the same
    without it, corrected once by what that many words gave."""
    calibration = openings(f"{label}-calibration", 0, 0)
    with_image = talks.first_turn(calibration["image"]).prompt_tokens
    guess = with_image - talks.first_turn(calibration["text"]).prompt_tokens
    return guess + with_image - talks.first_turn(openings(f"{label}-calibration", 1, guess)["text"]).prompt_tokens


# --- the figures --------------------------------------------------------------------------------

def paired(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


def ms(seconds: float, digits: int) -> float:
    return round(seconds * 1e3, digits)


def through_the_process(pair, label: str, runs: int, threads: int | None) -> dict:
    """Figure 1, and figure 2's difference of turn 1s, through ProcessBackend."""
    from app.engine.options import LoadOptions
    from app.engine.process.backend import ProcessBackend

    backend = ProcessBackend.open(pair.model, LoadOptions(n_ctx=N_CTX, n_threads=threads, mmproj=str(pair.projector)))
    try:
        talks = Conversations(backend, pair.model)
        filler = filler_for(talks, label)
        talks.turns(openings(f"{label}-warm-up", 0, filler)["text"])  # calibrating read an image already
        turns: dict[str, list[tuple[Turn, Turn]]] = {"image": [], "text": []}
        photo_bytes = []
        for run in range(runs):
            sent = openings(label, run, filler)
            photo_bytes.append(len(sent["image"]["images"][0].data))
            for side in (("image", "text") if run % 2 == 0 else ("text", "image")):
                turns[side].append(talks.turns(sent[side]))
            (image_1, image_2), (text_1, text_2) = turns["image"][-1], turns["text"][-1]
            print(f"  {label} run {run + 1}: turn 2 {image_2.ttft_s * 1e3:.1f} ms with the image, "
                  f"{text_2.ttft_s * 1e3:.1f} ms without; turn 1 {image_1.ttft_s * 1e3:.0f} vs "
                  f"{text_1.ttft_s * 1e3:.0f} ms", flush=True)
    finally:
        backend.close()
    image_1, image_2 = ([turn.ttft_s for turn in pair] for pair in zip(*turns["image"]))
    text_1, text_2 = ([turn.ttft_s for turn in pair] for pair in zip(*turns["text"]))
    return {
        "second_turn_ratio": round(paired(image_2, text_2), 3),
        "second_turn_ratio_median_over_median": round(statistics.median(image_2) / statistics.median(text_2), 3),
        "second_turn_image_ttft_ms": ms(statistics.median(image_2), 2),
        "second_turn_text_ttft_ms": ms(statistics.median(text_2), 2),
        "second_turn_engine_ttft_ms_image_text": [ms(statistics.median(second.engine_ttft_s for _, second in
                                                                        turns[side]), 2) for side in ("image", "text")],
        "encode_through_process_ms": ms(statistics.median(i - t for i, t in zip(image_1, text_1)), 1),
        "first_turn_image_ttft_ms": ms(statistics.median(image_1), 1),
        "first_turn_text_ttft_ms": ms(statistics.median(text_1), 1),
        "filler_words": filler,
        "photo_kb": round(statistics.median(photo_bytes) / 1024),
        "runs_second_turn_image_ms": [ms(x, 2) for x in image_2],
        "runs_second_turn_text_ms": [ms(x, 2) for x in text_2],
        "runs_first_turn_image_ms": [ms(x, 1) for x in image_1],
        "runs_first_turn_text_ms": [ms(x, 1) for x in text_1],
        "runs_first_turn_prompt_tokens_image_text": [[i.prompt_tokens, t.prompt_tokens] for (i, _), (t, _) in
                                                     zip(turns["image"], turns["text"])],
        "runs_second_turn_evaluated_tokens_image_text": [[i.evaluated, t.evaluated] for (_, i), (_, t) in
                                                         zip(turns["image"], turns["text"])],
    }


def encode_in_process(pairs: dict, label: str, runs: int, threads: int | None) -> dict[str, list[float]]:
    """Figure 2 in process: `Vision.encode_seconds` of a new image each run, for each pair
    (the same language model under each projector), run for run."""
    from app.engine.llama.generator import Engine
    from app.engine.options import LoadOptions

    engines = {name: Engine(pair.model, LoadOptions(n_ctx=N_CTX, n_threads=threads, mmproj=str(pair.projector)))
               for name, pair in pairs.items()}
    seconds: dict[str, list[float]] = {name: [] for name in pairs}
    try:
        for name, engine in engines.items():
            Conversations(engine, pairs[name].model).first_turn(openings(f"{label}-warm-up", 1, 1)["image"])
        for run in range(runs):
            order = list(engines) if run % 2 == 0 else list(reversed(engines))
            for name in order:
                talks = Conversations(engines[name], pairs[name].model)
                talks.first_turn(openings(f"{label}-in-process-{name}", run, 1)["image"])
                (encoded,) = engines[name]._vision.encode_seconds
                seconds[name].append(encoded)
            print(f"  {label} in process, run {run + 1}: " + ", ".join(
                f"{name} {seconds[name][-1] * 1e3:.0f} ms" for name in pairs), flush=True)
    finally:
        for engine in engines.values():
            engine.close()
    return seconds


def tiny_figures(runs: int, threads: int | None) -> dict:
    from support.model_files.tiny_vision import ensure_tiny_vision_pair

    pair = ensure_tiny_vision_pair()
    result = {"pair": "tiny (64-wide tinyllama-family model, 1-block gemma3 projector)",
              "image_tokens": pair.image_tokens, "runs": runs, **through_the_process(pair, "tiny", runs, threads)}
    seconds = encode_in_process({"tiny": pair}, "tiny", runs, threads)["tiny"]
    result["encode_in_process_ms"] = ms(statistics.median(seconds), 2)
    result["runs_encode_in_process_ms"] = [ms(x, 2) for x in seconds]
    return result


def wide_figures(runs: int, blocks: int, threads: int | None) -> dict:
    started = time.perf_counter()
    pair = wide_pair(blocks)
    print(f"  the Gemma-3-4B-shaped pair ({blocks} blocks) ready in {time.perf_counter() - started:.0f} s", flush=True)
    result = {"pair": f"Gemma 3 4B-shaped projector ({blocks} of {REAL_BLOCKS} blocks), 2-layer model {WIDE.n_embd} "
                      "wide", "vision_blocks": blocks, "image_tokens": pair.image_tokens, "runs": runs,
              "projector_mb": round(pair.projector.stat().st_size / 1e6),
              "model_mb": round(pair.model.stat().st_size / 1e6),
              **through_the_process(pair, "gemma3-4b-shaped", runs, threads)}
    pairs = {blocks: pair} if blocks in (1, REAL_BLOCKS) else {blocks: pair, 1: wide_pair(1)}
    seconds = encode_in_process(pairs, "gemma3-4b-shaped", runs, threads)
    result["encode_in_process_ms"] = ms(statistics.median(seconds[blocks]), 1)
    result["runs_encode_in_process_ms"] = [ms(x, 1) for x in seconds[blocks]]
    if blocks not in (1, REAL_BLOCKS):
        per_block = statistics.median((n - one) / (blocks - 1) for n, one in zip(seconds[blocks], seconds[1]))
        rest = statistics.median(seconds[1]) - per_block
        result |= {"encode_in_process_1_block_ms": ms(statistics.median(seconds[1]), 1),
                   "runs_encode_in_process_1_block_ms": [ms(x, 1) for x in seconds[1]],
                   "per_block_ms": ms(per_block, 1), "besides_blocks_ms": ms(rest, 1),
                   "extrapolated_27_block_encode_ms": ms(rest + REAL_BLOCKS * per_block, 0)}
    return result


def table(results: dict) -> str:
    lines = [f"{'pair':<18}{'turn 2 img÷txt':>16}{'(med÷med)':>11}{'turn 2 ms img/txt':>19}{'engine own':>15}"
             f"{'encode in proc':>17}{'encode via child':>18}"]
    for name, r in results["pairs"].items():
        engine_image, engine_text = r["second_turn_engine_ttft_ms_image_text"]
        lines.append(f"{name:<18}{r['second_turn_ratio']:>16.3f}{r['second_turn_ratio_median_over_median']:>11.3f}"
                     f"{r['second_turn_image_ttft_ms']:>11.1f} /{r['second_turn_text_ttft_ms']:>6.1f}"
                     f"{engine_image:>8.1f} /{engine_text:>6.1f}"
                     f"{r['encode_in_process_ms']:>14.1f} ms{r['encode_through_process_ms']:>15.1f} ms")
        if "extrapolated_27_block_encode_ms" in r:
            lines.append(f"{'':<18}in process: per block {r['per_block_ms']:.0f} ms, the rest "
                         f"{r['besides_blocks_ms']:.0f} ms; {REAL_BLOCKS} blocks ≈ "
                         f"{r['extrapolated_27_block_encode_ms']:.0f} ms (an extrapolation)")
    lines.append("asked: turn 2 image ÷ text ≤ 1.5")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of the Gemma-3-4B-shaped pair")
    parser.add_argument("--tiny-runs", type=int, default=21,
                        help="runs of the tiny pair (milliseconds each: more runs steady its median)")
    parser.add_argument("--blocks", type=int, default=REAL_BLOCKS,
                        help="the Gemma-3-4B-shaped projector's blocks (27 is the real count; 0 skips that pair)")
    parser.add_argument("--threads", type=int, help="llama.cpp's and libmtmd's CPU threads (default: the app's own, "
                        "one per physical core)")
    args = parser.parse_args()
    results = {"answer_tokens": ANSWER_TOKENS, "photo": list(PHOTO), "threads": args.threads or "the app's default",
               "pairs": {}}
    print("tiny pair", flush=True)
    results["pairs"]["tiny"] = tiny_figures(args.tiny_runs, args.threads)
    if args.blocks > 0:
        print("Gemma-3-4B-shaped pair", flush=True)
        results["pairs"]["gemma3-4b-shaped"] = wide_figures(args.runs, args.blocks, args.threads)
    print(table(results))
    out = ROOT / "bench" / "results" / "image_turns.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
