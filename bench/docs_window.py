"""What answering from documents costs in the window, the path users take, in one run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/docs_window.py [--runs 5]

The main window as the application assembles it (tests/support/documents_window.py): its
ChatSession with ConversationDocuments over a DocumentLibrary, the engine thread with the real
llama.cpp and the default model (Gemma 3 270M, greedy, one token a reply), the embedding model
loaded once as the window loads it. The corpus is bench/docs_ttft.py's: the first 20 topics of
Python's Language Reference as Markdown, one collection.

Each run asks one question in a new conversation twice: plainly, and with the collection ticked
on the documents button. Times are from Send (the Return key in the message box) to the first
token on the GUI thread, where the user sees it; with documents they hold the lookup (the question
embedded, both searches, the sources stored with the question) and the longer prompt. Figures,
medians of the runs:
- the issue's figure through the window: time to first token with the sources ÷ (1.5 × without
  + the sources' own prompt cost), ≤ 1; their own cost is their extra prompt tokens at the rate
  the engine read the plain prompt (its `ttft_s` ÷ its prompt tokens), as bench/docs_ttft.py;
- the lookup alone: Send → the reply begins (sources found and stored), in ms;
- a second question in the same conversation: the share of its prompt the engine evaluated
  (`evaluated_prompt_tokens` ÷ `prompt_tokens`). The first question's sources are kept with it,
  so the conversation reads as before and its prefix is reused: only the new question and its
  own sources are read. Results also go to bench/results/docs_window.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from window_waits import Bot  # noqa: E402

QUESTIONS = [
    ("How do I catch an error and still run cleanup code afterwards?", "Can that cleanup code return a value?"),
    ("What happens when a name is assigned inside a function but declared global?", "And for nonlocal?"),
    ("How are the arguments of a function call matched to its parameters?", "What about keyword-only ones?"),
    ("What does the assert statement do when optimizations are on?", "Which flag turns them on?"),
    ("How can a loop be left early, and what does its else clause do?", "Does continue skip the else?"),
]
TARGET = 1.5  # the factor on the plain time to first token
WAIT_MS = 600_000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import pydoc_data.topics
    from support.documents_window import window_with_documents

    from app.engine.opening import open_embedder
    from app.engine.sampling import SamplingParams
    from app.owners.paths import default_model

    app = QApplication.instance() or QApplication([])
    bot = Bot()
    folder = Path(tempfile.mkdtemp(prefix="hearth-bench-docs-window-"))
    corpus = folder / "corpus"
    corpus.mkdir()
    for number, (name, text) in enumerate(sorted(pydoc_data.topics.topics.items())[:20]):
        (corpus / f"topic{number:03d}.md").write_text(f"# {name}\n\n{text}", encoding="utf-8")
    models_dir = folder / "embedding-models"
    models_dir.mkdir()
    with window_with_documents(bot, folder, lambda model: open_embedder(model, models_dir)) as opened:
        opened.stack.load(bot, default_model(), WAIT_MS)
        models = opened.window.models
        models.update_settings(models.settings.with_changes(sampling=SamplingParams(temperature=0.0, max_tokens=1)))
        with bot.waitSignal(opened.library.indexed, WAIT_MS):
            opened.library.add("reference", [corpus])
        bot.waitUntil(lambda: opened.library.names() == ("reference",), WAIT_MS)
        session, composer = opened.session, opened.window.composer
        marks: dict[str, float] = {}
        session.replyStarted.connect(lambda _message: marks.setdefault("began", time.perf_counter()))
        session.replyChunk.connect(lambda _text: marks.setdefault("token", time.perf_counter()))
        finished = []
        session.replyFinished.connect(finished.append)

        def ask(text: str):
            marks.clear()
            finished.clear()
            composer.edit.setFocus()
            composer.edit.setPlainText(text)
            sent = time.perf_counter()
            QTest.keyClick(composer.edit, Qt.Key.Key_Return)
            bot.waitUntil(lambda: bool(finished) and not session.busy, WAIT_MS)
            return marks["token"] - sent, marks["began"] - sent, finished[0].stats

        figures, ratios, lookups, second_share = [], [], [], []
        for run in range(args.runs):
            question, follow_up = QUESTIONS[run % len(QUESTIONS)]
            session.choose_collections(())
            opened.open_new_conversation(f"plain {run}")
            plain_s, _began, plain = ask(question)
            opened.open_new_conversation(f"documents {run}")
            session.choose_collections(("reference",))
            docs_s, began_s, with_docs = ask(question)
            _second_s, _began, second = ask(follow_up)
            rate = plain.ttft_s / plain.prompt_tokens
            own_cost = (with_docs.prompt_tokens - plain.prompt_tokens) * rate
            figures.append(docs_s / (TARGET * plain_s + own_cost))
            ratios.append(docs_s / plain_s)
            lookups.append(began_s * 1000)
            second_share.append(second.evaluated_prompt_tokens / second.prompt_tokens)
            print(f"  run {run + 1}: Send → first token {plain_s * 1000:.0f} ms → {docs_s * 1000:.0f} ms "
                  f"(lookup {began_s * 1000:.0f} ms); prompt {plain.prompt_tokens} → {with_docs.prompt_tokens} tokens; "
                  f"second question read {second.evaluated_prompt_tokens} of {second.prompt_tokens}", flush=True)
    del app
    result = {"issue_figure": statistics.median(figures), "ttft_ratio": statistics.median(ratios),
              "lookup_ms": statistics.median(lookups), "second_question_evaluated_share": statistics.median(second_share),
              "runs": args.runs}
    print(f"through the window, Send → first token with the sources ÷ (1.5 × without + their own prompt cost): "
          f"{result['issue_figure']:.2f} (target ≤ 1); with ÷ without: {result['ttft_ratio']:.1f}; "
          f"the lookup (Send → reply begins): {result['lookup_ms']:.0f} ms; a second question evaluated "
          f"{result['second_question_evaluated_share']:.0%} of its prompt (the rest reused)")
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "docs_window.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["issue_figure"] <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
