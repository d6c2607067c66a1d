"""What twenty tool schemas cost a conversation's next reply through `hearth serve`, in one run.

    .venv/bin/python bench/tool_prompt.py [--model PATH] [--runs 7] [--tools 20] [--threads N]

An agent sends its tools with every request. They go into the prompt (the template's tool
block, or the system note for a template without one), so the first request of a
conversation reads them all; the next one should read only its new turn, because the tools
sit in the prefix the engine reuses. That is what this measures, on the path agents take: a
real `hearth serve` (tests/support/served.py), read by the official `openai` client.

Each run is one conversation, begun with a question that differs from run to run (nothing to
reuse across runs), asked twice over: with the tools (tool_choice auto, so the lazy call
grammar is in place too) and without. Each asks its first question, then a follow-up that
carries the first answer. The time to the first token is the time of a request with
max_tokens 1 (request sent → whole answer read): the prompt is read, one token is sampled.
In each run the conversation without tools goes first, so the first request with them finds
no tools in the cache (cold, as a new agent's first request).

The figure the issue asks for: the follow-up's time with the tools ÷ without, median of the
per-run ratios, ≤ 1.2. The first requests' times are shown beside it (there the tools are
read in full, and cost what their tokens cost).

A third conversation tells the two costs in that figure apart: the same prompt, token for
token, sent with no tools (the tools' text as the system message the template would carry
them in), so no schema check, grammar or parse. With tools ÷ that is what Hearth's tool
machinery costs; that ÷ without tools is what the model pays to attend to the tools' tokens
on every later token, which no server can avoid without dropping them from the prompt. (The
third arm needs a template that takes the tools as a system note, as the default model's
does; for a template that lays tools out itself it is left out.) Results also go to
bench/results/tool_prompt.json.
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
sys.path.insert(0, str(ROOT / "tests"))  # support: served.Served

N_CTX = 8192
ANSWER = "It depends on the season; May and September are mild, and the museums are quieter then."


def tool_schemas(count: int) -> list[dict]:
    """`count` tools of the size agents send: a sentence of description, three or four typed
    parameters, an enum among them."""
    kinds = ["weather", "calendar", "email", "files", "maps", "music", "notes", "shopping", "timer", "translate"]
    tools = []
    for n in range(count):
        kind = kinds[n % len(kinds)]
        tools.append({"type": "function", "function": {
            "name": f"{kind}_action_{n}",
            "description": f"Work with the user's {kind}: look things up, add or change entries. Use it only "
                           f"when the user asks about their {kind}.",
            "parameters": {"type": "object", "required": ["query"], "additionalProperties": False, "properties": {
                "query": {"type": "string", "description": f"What to look up or change in {kind}"},
                "limit": {"type": "integer", "description": "At most this many results"},
                "mode": {"enum": ["read", "write", "delete"], "description": "What to do"},
                "confirm": {"type": "boolean", "description": "Ask the user first"}}}}})
    return tools


def conversation(run: int) -> tuple[list[dict], list[dict]]:
    """The first request's messages and the follow-up's, different from run to run."""
    first = [{"role": "user", "content": f"Question {run} of the day: when is the best time to visit Lisbon?"}]
    follow = first + [{"role": "assistant", "content": ANSWER}, {"role": "user", "content": "And for Porto?"}]
    return first, follow


def same_prompt_without_tools(model: Path, tools: list[dict], messages: list[dict]) -> list[dict] | None:
    """`messages` with the tools' system note written into them, for the server to render to
    the same prompt as with the tools; None where the template lays the tools out itself."""
    from app.engine.gguf.reading import inspect_model
    from app.engine.templates.chat_template import template_for
    from app.engine.tools.detection import detect_format
    from app.engine.tools.tool_prompt import prompt_messages
    from app.engine.tools.wire import tool_use_from_openai

    fmt = detect_format(template_for(inspect_model(model)))
    return None if fmt.native else prompt_messages(fmt, messages, tool_use_from_openai(tools, "auto"))


def first_token_s(client, model_id: str, messages: list[dict], tools: list[dict] | None) -> tuple[float, int]:
    """Seconds to read the prompt and pick one token, and the prompt's size in tokens."""
    extra = {"tools": tools, "tool_choice": "auto"} if tools else {}
    started = time.perf_counter()
    reply = client.chat.completions.create(model=model_id, messages=messages, max_tokens=1, temperature=0, **extra)
    return time.perf_counter() - started, reply.usage.prompt_tokens


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded Gemma 3 270M)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tools", type=int, default=20)
    parser.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    args = parser.parse_args()

    import openai
    from support.served import Served

    from app.owners.paths import default_model

    model = args.model or default_model()
    tools = tool_schemas(args.tools)
    served = Served(model, "--threads", str(args.threads), "--ctx", str(N_CTX))
    samples: dict[str, list[float]] = {f"{turn}_{side}": [] for turn in ("first", "next")
                                       for side in ("with", "without", "same_prompt")}
    sizes: dict[str, int] = {}
    try:
        client = openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=600)
        warm = conversation(-1)[0]
        first_token_s(client, served.model_id, warm, tools), first_token_s(client, served.model_id, warm, None)
        for run in range(args.runs):
            first, follow = conversation(run)
            sides = [("without", first, follow, None), ("with", first, follow, tools)]
            if (noted := same_prompt_without_tools(model, tools, first)) is not None:
                sides.append(("same_prompt", noted, same_prompt_without_tools(model, tools, follow), None))
            for side, opening, next_turn, side_tools in sides:
                seconds, sizes[f"first_{side}"] = first_token_s(client, served.model_id, opening, side_tools)
                samples[f"first_{side}"].append(seconds)
                seconds, sizes[f"next_{side}"] = first_token_s(client, served.model_id, next_turn, side_tools)
                samples[f"next_{side}"].append(seconds)
        client.close()
    finally:
        served.stop()

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(samples[a], samples[b]))

    samples = {name: values for name, values in samples.items() if values}
    results = {
        "model": Path(model).name, "runs": args.runs, "tools": args.tools, "threads": args.threads,
        "prompt_tokens": sizes,
        "median_ms": {name: round(statistics.median(values) * 1000, 1) for name, values in samples.items()},
        "next_with_over_without": round(ratio("next_with", "next_without"), 3),
        "first_with_over_without": round(ratio("first_with", "first_without"), 3),
    }
    if "next_same_prompt" in samples:
        results["next_with_over_same_prompt"] = round(ratio("next_with", "next_same_prompt"), 3)
        results["next_same_prompt_over_without"] = round(ratio("next_same_prompt", "next_without"), 3)
    print(f"{args.tools} tool schemas, {args.runs} runs, medians ({Path(model).name}, {args.threads} threads):")
    for name, label in (("first", "first request"), ("next", "follow-up (prefix reused)")):
        print(f"  {label:26} with tools {results['median_ms'][name + '_with']:8.1f} ms "
              f"({sizes[name + '_with']} prompt tokens), without {results['median_ms'][name + '_without']:8.1f} ms "
              f"({sizes[name + '_without']}): ratio {results[name + '_with_over_without']:.3f}")
    print(f"follow-up with ÷ without: {results['next_with_over_without']:.3f} (the issue asks ≤ 1.2)")
    if "next_same_prompt" in samples:
        print(f"  of which Hearth's tool machinery (with ÷ the same prompt without tools): "
              f"{results['next_with_over_same_prompt']:.3f}; the model attending to the tools' "
              f"{sizes['next_with'] - sizes['next_without']} tokens (same prompt ÷ without): "
              f"{results['next_same_prompt_over_without']:.3f}")
    out = ROOT / "bench" / "results" / "tool_prompt.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if results["next_with_over_without"] <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
