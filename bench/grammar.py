"""Constrained decoding: tokens/s with an active grammar ÷ without, on the same output.

    .venv/bin/python bench/grammar.py [--model PATH] [--runs 5]

The default model is asked to repeat a JSON object; greedy, it writes a line of text and then
the object. A lazy grammar, triggered by the object's "{", then holds the rest to a schema
the object satisfies (its keys required, their types, nothing else), so both replies are the
same tokens, and the reply stops where the object ends (`max_tokens`). The grammar is active
for the object's tokens: each is checked against it (engine/llama/reply_sampler.py), and the
chain is cloned before each pick. Target >= 0.9.

Both run through the Engine's own decode loop with the ReplySampler, drafting off (a draft
would make the two decode differently), alternating, after one warm-up each; figures are
medians. Results also go to bench/results/grammar.json.
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

OBJECT = {"name": "Paris", "country": "France", "population": 2102650, "capital": True, "river": "Seine"}
PROMPT = f"Repeat this JSON object exactly, and nothing else:\n{json.dumps(OBJECT)}"
N_CTX = 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from app.engine.llama import generator
    from app.engine.llama.generator import Engine
    from app.engine.llama.grammar import Grammar, response_grammar
    from app.engine.llama.reply_sampler import ReplySampler
    from app.engine.sampling import SamplingParams
    from app.engine.tools.types import ResponseFormat, ResponseKind
    from app.engine.types import LoadOptions, ReplyStats
    from app.owners.paths import default_model

    engine = Engine(args.model or default_model(), LoadOptions(n_ctx=N_CTX))
    messages = [{"role": "user", "content": PROMPT}]
    params = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=96, draft="none")
    spent: dict[str, float] = {}

    class TimedSampler(ReplySampler):
        """The time inside sample(), the sampler's own share of a token (what the grammar adds
        to it shows even where decode time varies more than the whole of it)."""

        def sample(self, index):
            started = time.perf_counter()
            try:
                return super().sample(index)
            finally:
                spent["s"] = spent.get("s", 0.0) + time.perf_counter() - started

    def reply(grammar: Grammar | None, max_tokens: int) -> tuple[str, ReplyStats, ReplySampler]:
        """A reply through the Engine's loop, its sampler given `grammar` (the Engine makes its
        own from a request's tools; the bench hands it this one), closed by the Engine."""
        made: list[ReplySampler] = []

        def sampler(llm, sampling, seed, _grammar, stop_tokens):
            made.append(TimedSampler(llm, sampling, seed, grammar, stop_tokens))
            return made[-1]

        generator.ReplySampler = sampler
        try:
            text = []
            for event in engine.stream(messages, params.with_changes(max_tokens=max_tokens)):
                if isinstance(event, ReplyStats):
                    stats = event
                else:
                    text.append(event)
        finally:
            generator.ReplySampler = ReplySampler
        return "".join(text), stats, made[-1]

    free, _, _ = reply(None, params.max_tokens)
    start = free.index("{")
    value, length = json.JSONDecoder().raw_decode(free[start:])
    wanted = free[:start + length]
    tokens, before_object = _tokens_for(engine, wanted), _tokens_for(engine, free[:start])
    schema = {"type": "object", "additionalProperties": False, "required": list(value),
              "properties": {key: {"type": _json_type(item)} for key, item in value.items()}}
    json_grammar = response_grammar(ResponseFormat(ResponseKind.JSON_SCHEMA, schema))
    lazy = Grammar(json_grammar.gbnf, lazy=True, trigger_patterns=(r"[\s\S]*?(\{)[\s\S]*",))

    samples: dict[str, list[float]] = {"without": [], "with": []}
    sampling_us: dict[str, list[float]] = {"without": [], "with": []}
    texts: dict[str, set[str]] = {"without": set(), "with": set()}
    rejections = 0
    for run in range(args.runs + 1):
        for name, grammar in (("without", None), ("with", lazy)):
            spent["s"] = 0.0
            text, stats, sampler = reply(grammar, tokens)
            if run == 0:
                continue
            samples[name].append(stats.tokens_per_s)
            sampling_us[name].append(spent["s"] / stats.completion_tokens * 1e6)
            texts[name].add(text)
            rejections += sampler.rejections
    without, with_grammar = statistics.median(samples["without"]), statistics.median(samples["with"])
    results = {
        "tokens": tokens,
        "grammar_tokens": tokens - before_object,
        "without_tokens_per_s": without,
        "with_tokens_per_s": with_grammar,
        "ratio": with_grammar / without,
        "same_text": texts["with"] == texts["without"] and len(texts["with"]) == 1,
        "rejections": rejections,
        "sample_us_per_token_without": statistics.median(sampling_us["without"]),
        "sample_us_per_token_with": statistics.median(sampling_us["with"]),
        "text": next(iter(texts["with"])),
        "samples": samples,
        "device": engine.device.describe(),
    }
    engine.close()
    print(json.dumps({k: v for k, v in results.items() if k != "samples"}, indent=1))
    print(f"grammar ÷ none: {results['ratio']:.3f} (target >= 0.9), same text: {results['same_text']}")
    out = ROOT / "bench" / "results" / "grammar.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if results["same_text"] else 1


def _tokens_for(engine, text: str) -> int:
    """How many tokens of the last reply spell `text`, a prefix of it (from the Engine's record
    of the reply's pieces)."""
    reply = engine._prefix.segments[-1]
    wanted = text.encode()
    spelled = b""
    for count, piece in enumerate(reply.pieces, 1):
        spelled += piece[1:] if count == 1 and reply.shown_without_space else piece
        if len(spelled) >= len(wanted):
            return count
    return len(reply.pieces)


def _json_type(value: object) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(type(value), "string")


if __name__ == "__main__":
    sys.exit(main())
