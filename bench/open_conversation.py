"""Time to show a saved conversation, long against short.

Opening a conversation renders its messages (Markdown, highlighted code) into the chat pane on
the GUI thread, so it must not grow with the history: a 200-message conversation (about 35,000
tokens) should open within twice the time of a 10-message one (it shows a page of about 12,000
characters, the short one all of its 9,000). Also timed: rendering all 200 at once, as Hearth
did before paging. Each open is timed with the layout and repaint that follow; medians.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/open_conversation.py
Writes bench/results/open_conversation.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.engine.types import ReplyStats, ReplyStatus, StopReason  # noqa: E402
from app.ui import chat_view  # noqa: E402
from app.ui.chat_view import ChatView, MessageView  # noqa: E402
from view_update import _REPLY  # noqa: E402  (the same model-shaped reply)

ROUNDS = 7
SHORT, LONG = 10, 200
TARGET_RATIO = 2.0


def conversation(count: int) -> list[MessageView]:
    messages = []
    for i in range(count // 2):
        messages.append(MessageView(2 * i + 1, "user", f"Question {i}: how do I read the configuration?"))
        reply = _REPLY.format(n=i) * 2  # about 170 tokens of prose, a list, code and a table
        messages.append(MessageView(
            2 * i + 2, "assistant", reply, ReplyStats(completion_tokens=170, stop_reason=StopReason.END_OF_TURN),
            ReplyStatus.COMPLETE, "bench"))
    return messages


def open_time(app: QApplication, view: ChatView, messages: list[MessageView]) -> float:
    started = time.perf_counter()
    view.set_messages(messages)
    app.processEvents()
    return time.perf_counter() - started


def main() -> None:
    app = QApplication.instance() or QApplication([])
    view = ChatView()
    view.resize(900, 700)
    view.show()
    app.processEvents()
    short, long = conversation(SHORT), conversation(LONG)
    open_time(app, view, long)  # warm caches (lexers, fonts) before timing
    times: dict[int, list[float]] = {SHORT: [], LONG: []}
    for _ in range(ROUNDS):
        for messages in (short, long):
            times[len(messages)].append(open_time(app, view, messages))
    view.set_messages(long)
    rendered_at_open = LONG - view.hidden_count()
    page = chat_view.HISTORY_SHOWN_CHARS
    chat_view.HISTORY_SHOWN_CHARS = 10**9  # everything at once
    whole = statistics.median(open_time(app, view, long) for _ in range(3))
    chat_view.HISTORY_SHOWN_CHARS = page
    medians = {n: statistics.median(samples) for n, samples in times.items()}
    result = {
        "rounds": ROUNDS,
        "tokens_in_long": round(sum(len(m.content) for m in long) / 4),
        "median_ms_short": medians[SHORT] * 1e3,
        "median_ms_long": medians[LONG] * 1e3,
        "ratio": medians[LONG] / medians[SHORT],
        "messages_rendered_of_long": rendered_at_open,
        "median_ms_long_all_at_once": whole * 1e3,
        "target_ratio": TARGET_RATIO,
    }
    result["pass"] = result["ratio"] <= TARGET_RATIO
    print(f"open {SHORT} messages: {result['median_ms_short']:.0f} ms; open {LONG} messages "
          f"(~{result['tokens_in_long']:,} tokens): {result['median_ms_long']:.0f} ms; "
          f"ratio {result['ratio']:.2f} (target <= {TARGET_RATIO}: {'PASS' if result['pass'] else 'FAIL'})")
    print(f"rendered at open: {rendered_at_open} of {LONG} messages, the rest on request; "
          f"rendering all {LONG} at once takes {whole * 1e3:.0f} ms")
    out = ROOT / "bench" / "results" / "open_conversation.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
