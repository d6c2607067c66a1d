"""Cost of one chat-view update late in a long reply, relative to early in it.

An update is what the flush timer does: write ~8 tokens of buffered text (a plain flush), or
write text that completes a Markdown block, which renders that block (a block flush). Both are
timed with the repaint they cause, at the end of a 1,000-token and of a 20,000-token reply.
Streaming must not get slower as a reply grows: target ratio (20k / 1k) <= 2.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/view_update.py
Writes bench/results/view_update.json.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.engine.types import ReplyStatus  # noqa: E402
from app.ui.chat.view import ChatView  # noqa: E402

SAMPLES = 25
ROUNDS = 5
TOKENS_PER_FLUSH = 8
TARGET_RATIO = 2.0

# A reply in the shape models write: prose, a list, a code block, a table. About 4 characters
# a token, the usual figure for English text.
_REPLY = """## Step {n}

The function below reads the configuration file, checks each entry against the schema and
returns the values that passed, so that a caller never sees a half-valid configuration.

- It opens the file **once** and keeps the `handle` for the whole pass
- Unknown keys are reported, not dropped silently
- Errors carry the line number

```python
def load(path: str) -> dict[str, str]:
    values = {{}}
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values
```

| Key | Meaning |
|-----|---------|
| `path` | the file to read |

"""


def synthetic_tokens():
    """An endless reply, cut into token-sized pieces (a word and its space, or a newline)."""
    for n in itertools.count(1):
        for line in _REPLY.format(n=n).splitlines(keepends=True):
            words = line.split(" ")
            for i, word in enumerate(words):
                yield word if i == len(words) - 1 else word + " "


def _measure(view: ChatView, app: QApplication, text: str) -> float:
    started = time.perf_counter()
    view.append_text(text)
    view.flush_now()
    app.processEvents()  # layout and repaint
    return time.perf_counter() - started


def run_at(app: QApplication, length: int) -> dict:
    view = ChatView()
    view.resize(900, 700)
    view.show()
    tokens = synthetic_tokens()
    sent = []
    view.begin_reply(1, "bench")
    for _ in range(length // 200):  # build the reply fast, in large flushes
        sent.append("".join(itertools.islice(tokens, 200)))
        view.append_text(sent[-1])
        view.flush_now()
    app.processEvents()
    plain, block = [], []
    for _ in range(SAMPLES):
        sent.append("word " * TOKENS_PER_FLUSH)
        plain.append(_measure(view, app, sent[-1]))
        # Ends a paragraph and starts the next: the block (about 60 tokens) is rendered.
        sent.append("word " * TOKENS_PER_FLUSH + "end.\n\nNext " + "word " * 50)
        block.append(_measure(view, app, sent[-1]))
    started = time.perf_counter()
    view.finish_reply("".join(sent), None, ReplyStatus.COMPLETE)
    app.processEvents()
    finish = time.perf_counter() - started
    view.deleteLater()
    app.processEvents()
    return {"plain": statistics.median(plain), "block": statistics.median(block), "finish": finish}


def main() -> None:
    app = QApplication.instance() or QApplication([])
    lengths = (1_000, 20_000)
    rounds = {n: [run_at(app, n) for _ in range(ROUNDS)] for n in lengths}
    result: dict = {"samples_per_round": SAMPLES, "rounds": ROUNDS, "tokens_per_flush": TOKENS_PER_FLUSH}
    for kind in ("plain", "block"):
        medians = {n: statistics.median(r[kind] for r in rounds[n]) for n in lengths}
        result[kind] = {
            "median_ms_1k": medians[1_000] * 1e3,
            "median_ms_20k": medians[20_000] * 1e3,
            "ratio": medians[20_000] / medians[1_000],
        }
    update = {n: result["plain"][f"median_ms_{n // 1000}k"] + result["block"][f"median_ms_{n // 1000}k"] for n in lengths}
    result["update"] = {
        "median_ms_1k": update[1_000],
        "median_ms_20k": update[20_000],
        "ratio": update[20_000] / update[1_000],
    }
    # Once per reply, so not in the ratio. With the streamed text as content, finish_reply
    # renders only the unrendered tail; shown so that a slow finish does not go unnoticed.
    finish = {n: statistics.median(r["finish"] for r in rounds[n]) for n in lengths}
    result["finish_reply_ms"] = {f"{n // 1000}k": finish[n] * 1e3 for n in lengths}
    result["target_ratio"] = TARGET_RATIO
    result["pass"] = result["update"]["ratio"] <= TARGET_RATIO

    print(f"{'update':<26}{'1k tokens':>12}{'20k tokens':>12}{'ratio':>8}")
    for kind, title in (("plain", "plain flush (8 tokens)"), ("block", "block flush (+render)"), ("update", "plain + block")):
        row = result[kind]
        print(f"{title:<26}{row['median_ms_1k']:>10.3f}ms{row['median_ms_20k']:>10.3f}ms{row['ratio']:>8.2f}")
    done = result["finish_reply_ms"]
    print(f"{'finish_reply':<26}{done['1k']:>10.1f}ms{done['20k']:>10.1f}ms  (once per reply)")
    print(f"target ratio <= {TARGET_RATIO}: {'PASS' if result['pass'] else 'FAIL'}")
    out = ROOT / "bench" / "results" / "view_update.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
