"""What answering from documents costs the first token, through `hearth chat --docs`, in one run.

    .venv/bin/python bench/docs_ttft.py [--runs 5]

The path users take: the command line, the default model (Gemma 3 270M), a collection indexed
with the default embedding model from a corpus of Python's Language Reference topics (the first
20 topics as Markdown: bench/docs_recall.py's corpus, smaller). Each run asks one question twice
in fresh processes: plainly, and with `--docs NAME` (the 5 chunks that answer it go before the
question, as in the window: conversation/sources.py). Each process prints the engine's own statistics (`--stats json`): the time to
the first token (from the reply's start: the prompt rendered, read, one token sampled) and the
prompt's tokens.

The issue's figure: the time to first token with the chunks within 1.5 × the time without, plus
the chunks' own prompt cost, i.e. ttft with ÷ (1.5 × ttft without + their cost) ≤ 1. Their own
cost is what reading their tokens costs at the rate the engine read the plain prompt (a short
prompt reads slower per token than a long one, so this is a generous rate: the second figure,
the time per prompt token with the chunks ÷ without, says how generous). The retrieval itself
(embedding the question, the search) happens before the reply starts, so the engine's time to
first token does not hold it: bench/docs_search.py times the search. Medians of the per-run
values. Results also go to bench/results/docs_ttft.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QUESTIONS = [
    "How do I catch an error and still run cleanup code afterwards?",
    "What happens when a name is assigned inside a function but declared global?",
    "How are the arguments of a function call matched to its parameters?",
    "What does the assert statement do when optimizations are on?",
    "How can a loop be left early, and what does its else clause do?",
]
TARGET = 1.5  # the factor on the plain time to first token


def hearth(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HEARTH_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, cwd=ROOT, env=env,
                          timeout=600, check=True)


def stats_of(out: subprocess.CompletedProcess) -> dict:
    return json.loads(out.stderr.decode().strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import pydoc_data.topics

    from app.owners.paths import default_model

    model = str(default_model())
    home = Path(tempfile.mkdtemp(prefix="hearth-docs-ttft-"))
    corpus = home / "corpus"
    corpus.mkdir()
    for number, (name, text) in enumerate(sorted(pydoc_data.topics.topics.items())[:20]):
        (corpus / f"topic{number:03d}.md").write_text(f"# {name}\n\n{text}", encoding="utf-8")
    hearth(home, "docs", "add", "reference", str(corpus))
    plain = ("chat", model, "--max-tokens", "1", "--temperature", "0", "--stats", "json")
    ratios, figures, per_token = [], [], []
    for run in range(args.runs):
        question = QUESTIONS[run % len(QUESTIONS)]
        without = stats_of(hearth(home, *plain[:2], question, *plain[2:]))
        with_docs = stats_of(hearth(home, *plain[:2], question, *plain[2:], "--docs", "reference"))
        rate = without["ttft_s"] / without["prompt_tokens"]  # seconds a prompt token, plainly
        chunks_cost = (with_docs["prompt_tokens"] - without["prompt_tokens"]) * rate
        ratios.append(with_docs["ttft_s"] / without["ttft_s"])
        figures.append(with_docs["ttft_s"] / (TARGET * without["ttft_s"] + chunks_cost))
        per_token.append((with_docs["ttft_s"] / with_docs["prompt_tokens"]) / rate)
        print(f"  run {run + 1}: ttft {without['ttft_s']:.3f} s → {with_docs['ttft_s']:.3f} s; "
              f"prompt {without['prompt_tokens']} → {with_docs['prompt_tokens']} tokens", flush=True)
    result = {"ttft_ratio": statistics.median(ratios), "issue_figure": statistics.median(figures),
              "per_token_ratio": statistics.median(per_token), "runs": args.runs}
    print(f"ttft with 5 chunks ÷ (1.5 × without + the chunks' own prompt cost): {result['issue_figure']:.2f} "
          f"(target ≤ 1); per prompt token, with ÷ without: {result['per_token_ratio']:.2f}; "
          f"ttft with ÷ without: {result['ttft_ratio']:.1f}")
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "docs_ttft.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["issue_figure"] <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
