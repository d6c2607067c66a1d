"""Longest stall of the GUI event loop while a fast model streams into the chat view.

A producer thread stands in for the engine: it writes a synthetic reply at 2,000 tokens/s and
hands it on as the engine worker does (one chunk per app.owners.engine_worker.CHUNK_INTERVAL_S),
through a queued connection into ChatView.append_text. A second mode sends one signal per
token, a harsher load than the app ever makes, and is reported beside it. A 1 ms
QTimer heartbeat in the GUI thread records the gaps between its ticks: the longest gap is the
longest time the window could not respond. Target: max gap <= 50 ms while streaming.
finish_reply's gap is reported apart: it happens once, after the stream. One untimed warm-up
render comes first (see warm_up).

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/event_loop_stall.py
Writes bench/results/event_loop_stall.json.
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

from PySide6.QtCore import QEventLoop, QObject, Qt, QThread, QTimer, Signal  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from view_update import synthetic_tokens  # noqa: E402

from app.engine.types import ReplyStatus  # noqa: E402
from app.owners.engine_worker import CHUNK_INTERVAL_S  # noqa: E402
from app.ui.chat.view import ChatView  # noqa: E402

TOKENS_PER_S = 2_000
SECONDS = 5.0
RUNS = 5
TARGET_MS = 50.0


class Producer(QObject):
    """Makes tokens on a fixed schedule from its own thread (catching up if it falls behind)
    and emits them in chunks at most every `interval` seconds (0: every token)."""

    chunk = Signal(str)
    done = Signal(str)

    def __init__(self, interval: float) -> None:
        super().__init__()
        self.interval = interval

    def run(self) -> None:
        tokens = synthetic_tokens()
        sent, pending = [], []
        started = last_emit = time.perf_counter()
        for i in range(int(TOKENS_PER_S * SECONDS)):
            delay = started + i / TOKENS_PER_S - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent.append(next(tokens))
            pending.append(sent[-1])
            now = time.perf_counter()
            if now - last_emit >= self.interval:
                self.chunk.emit("".join(pending))
                pending.clear()
                last_emit = now
        if pending:
            self.chunk.emit("".join(pending))
        self.done.emit("".join(sent))


class Heartbeat(QObject):
    """A 1 ms timer that keeps the gaps between its ticks."""

    def __init__(self) -> None:
        super().__init__()
        self.gaps: list[float] = []
        self._last = time.perf_counter()
        self._timer = QTimer(self, interval=1, timerType=Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)
        self._timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self._last)
        self._last = now

    def take(self) -> list[float]:
        """The gaps so far, the one up to now included; then start again."""
        self._tick()
        gaps, self.gaps = self.gaps, []
        return gaps


def run_once(app: QApplication, interval: float) -> dict:
    view = ChatView()
    view.resize(900, 700)
    view.show()
    app.processEvents()
    view.begin_reply(1, "bench")

    thread = QThread()
    producer = Producer(interval)
    producer.moveToThread(thread)
    producer.chunk.connect(view.append_text, Qt.ConnectionType.QueuedConnection)
    finished = QEventLoop()
    text = []
    producer.done.connect(lambda streamed: (text.append(streamed), finished.quit()))
    thread.started.connect(producer.run)

    beat = Heartbeat()
    started = time.perf_counter()
    thread.start()
    finished.exec()
    QTimer.singleShot(100, finished.quit)  # let the last chunks through the flush timer
    finished.exec()
    streaming = beat.take()
    elapsed = time.perf_counter() - started

    view.finish_reply(text[0], None, ReplyStatus.COMPLETE)
    QTimer.singleShot(20, finished.quit)
    finished.exec()
    finishing = beat.take()

    thread.quit()
    thread.wait()
    view.deleteLater()
    app.processEvents()
    ordered = sorted(streaming)
    return {
        "max_gap_ms": ordered[-1] * 1e3,
        "p99_gap_ms": ordered[int(len(ordered) * 0.99)] * 1e3,
        "median_gap_ms": statistics.median(ordered) * 1e3,
        "ticks": len(ordered),
        "seconds": elapsed,
        "finish_reply_gap_ms": max(finishing) * 1e3,
    }


def warm_up(app: QApplication) -> None:
    """Render the synthetic reply once, untimed. The first code block in a language compiles
    that Pygments lexer (15-80 ms, once per language per session): a one-off, not a stall
    that streaming causes, so it is kept out of these figures."""
    view = ChatView()
    tokens = synthetic_tokens()
    view.begin_reply(None)
    view.append_text("".join(next(tokens) for _ in range(400)))
    view.flush_now()
    view.deleteLater()
    app.processEvents()


def summarise(runs: list[dict]) -> dict:
    keys = ("max_gap_ms", "p99_gap_ms", "median_gap_ms", "finish_reply_gap_ms")
    return {
        "runs": runs,
        **{f"median_{key}": statistics.median(run[key] for run in runs) for key in keys},
        "worst_max_gap_ms": max(run["max_gap_ms"] for run in runs),
    }


def report(title: str, result: dict) -> None:
    keys = ("max_gap_ms", "p99_gap_ms", "median_gap_ms", "finish_reply_gap_ms")
    print(title)
    print(f"{'run':<6}{'max gap':>10}{'p99 gap':>10}{'median':>10}{'finish':>10}")
    for i, run in enumerate(result["runs"], 1):
        print(f"{i:<6}" + "".join(f"{run[key]:>8.2f}ms" for key in keys))
    print(f"{'median':<6}" + "".join(f"{result['median_' + key]:>8.2f}ms" for key in keys))


def main() -> None:
    app = QApplication.instance() or QApplication([])
    warm_up(app)
    app_policy = summarise([run_once(app, CHUNK_INTERVAL_S) for _ in range(RUNS)])
    per_token = summarise([run_once(app, 0.0) for _ in range(RUNS)])
    result = {
        "tokens_per_s": TOKENS_PER_S, "seconds_per_run": SECONDS, "target_ms": TARGET_MS,
        "chunks_as_the_app_sends_them": app_policy, "one_signal_per_token": per_token,
        "pass": app_policy["median_max_gap_ms"] <= TARGET_MS,
    }
    report(f"chunks as the engine worker sends them (every {CHUNK_INTERVAL_S * 1000:.0f} ms):", app_policy)
    report("stress: one signal per token:", per_token)
    print(f"{TOKENS_PER_S} tokens/s for {SECONDS:.0f} s; target max gap <= {TARGET_MS:.0f} ms (median of "
          f"{RUNS} runs, app's chunking): {'PASS' if result['pass'] else 'FAIL'} "
          f"({app_policy['median_max_gap_ms']:.1f} ms; worst run {app_policy['worst_max_gap_ms']:.1f} ms; "
          f"per-token stress {per_token['median_max_gap_ms']:.1f} ms)")
    out = ROOT / "bench" / "results" / "event_loop_stall.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
