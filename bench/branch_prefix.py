"""Prefix reuse along a branch: what a reply evaluates after Regenerate, Edit and Show a version.

A conversation of eight exchanges is stored in a real SQLite file and answered by the real
Engine the way ChatSession answers (tests/support/branch_walk.py: history from the branch shown via
app.conversation.history, each reply stored streaming then finished). Then (a) the last reply is
regenerated, (b) the user message before the last is edited (a sibling version) and answered,
(c) the original version is shown again and a message sent on that branch. For each reply:
the prompt's tokens (ReplyStats.prompt_tokens), those the engine evaluated because they were
not in its KV cache (ReplyStats.evaluated_prompt_tokens), and the tokens after the point where
the new prompt and the branch in the cache differ, found apart from the engine by rendering
both with the model's template, tokenizing them afresh and taking the common prefix.

Expected: (a) evaluates one token (the engine always decodes the last prompt token again for
fresh logits); (b) only the edited message and the turn markers after it; (c) everything from
the edited message on, since the cache now holds the edited branch. Target: (b) evaluates less
than half its prompt and within 2 tokens of the tokens after the divergence. For contrast, the
whole (c) prompt answered after an unrelated conversation filled the cache. Medians of ROUNDS
walks (token counts are the same in each: the sampling is seeded).

    .venv/bin/python bench/branch_prefix.py [--model PATH] [--rounds 3]
Writes bench/results/branch_prefix.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # branch_walk: the walk the test suite checks

from support.branch_walk import PARAMS, SYSTEM_PROMPT, BranchPrefix, Measured, walk_branches  # noqa: E402

from app.conversation.history import history  # noqa: E402
from app.engine.llama.generator import Engine  # noqa: E402
from app.engine.types import LoadOptions, ReplyStats  # noqa: E402
from app.store import ConversationStore  # noqa: E402

N_CTX = 2048
TOLERANCE = 2


def whole_prompt(engine: Engine, messages: list[dict]) -> ReplyStats:
    """The reply to `messages` when the cache holds an unrelated conversation: its whole prompt
    is evaluated (all but the opening turn marker)."""
    for _ in engine.stream([{"role": "user", "content": "Something else entirely."}], PARAMS):
        pass
    return [event for event in engine.stream(messages, PARAMS) if isinstance(event, ReplyStats)][0]


def median_row(rows: list[Measured]) -> dict:
    return {"step": rows[0].step, **{name: statistics.median(getattr(row, name) for row in rows)
                                     for name in ("prompt_tokens", "evaluated_prompt_tokens", "after_divergence",
                                                  "ttft_s")}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    engine = Engine(args.model, LoadOptions(n_ctx=N_CTX))
    walks: list[BranchPrefix] = []
    cold: list[ReplyStats] = []
    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as folder:
        store = ConversationStore(Path(folder) / "conversations.sqlite3")
        for _ in range(args.rounds):
            walk = walk_branches(engine, store)
            walks.append(walk)
            cold.append(whole_prompt(engine, history(store, walk.conversation_id, SYSTEM_PROMPT)[:-1]))
        store.close()
    engine.close()

    steps = [median_row([walk.exchanges[-1] for walk in walks]), median_row([walk.regenerated for walk in walks]),
             median_row([walk.edited for walk in walks]), median_row([walk.switched_back for walk in walks])]
    _, regenerated, edited, _ = steps
    whole = {"step": "(c)'s prompt, the cache holding another conversation",
             "prompt_tokens": statistics.median(s.prompt_tokens for s in cold),
             "evaluated_prompt_tokens": statistics.median(s.evaluated_prompt_tokens for s in cold),
             "ttft_s": statistics.median(s.ttft_s for s in cold)}
    result = {
        "rounds": args.rounds, "n_ctx": N_CTX, "exchanges": len(walks[0].exchanges),
        "steps": steps + [whole],
        "tolerance_tokens": TOLERANCE,
    }
    result["pass"] = (regenerated["evaluated_prompt_tokens"] <= 1
                      and edited["evaluated_prompt_tokens"] < edited["prompt_tokens"] / 2
                      and abs(edited["evaluated_prompt_tokens"] - edited["after_divergence"]) <= TOLERANCE)
    for row in steps + [whole]:
        after = f", {row['after_divergence']:.0f} after the divergence" if "after_divergence" in row else ""
        print(f"{row['step']}: prompt {row['prompt_tokens']:.0f} tokens, evaluated {row['evaluated_prompt_tokens']:.0f}"
              f"{after}; first token {row['ttft_s'] * 1e3:.0f} ms")
    print(f"(b) evaluates {edited['evaluated_prompt_tokens']:.0f} of {edited['prompt_tokens']:.0f} prompt tokens, "
          f"{edited['after_divergence']:.0f} after the divergence (target: < half, within {TOLERANCE}: "
          f"{'PASS' if result['pass'] else 'FAIL'})")
    out = ROOT / "bench" / "results" / "branch_prefix.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
