"""GUI figures, measured in one run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/gui_path.py [--runs 5] [--tokens 128]

1. Reply tokens/s through the whole GUI path (the engine's own process, the engine worker
   thread, queued signals, the session, the chat view's coalesced inserts) ÷ the engine alone,
   driven directly in this process. Same model, prompt and greedy settings, end-of-turn tokens
   banned so both write exactly --tokens tokens; the two alternate in one process and the rate
   is measured the same way for both: (tokens - 1) / (time of the last text - time of the
   first text) where the text arrives (for the window, where the session hands a chunk to the
   view). Beside it, what the GUI thread spends per chunk while the reply streams: its CPU
   time from the first chunk to the last (thread time, so waiting is not counted) ÷ the
   chunks between. On 2 cores every millisecond of it is taken from a generating thread.
2. Time from launch to the window being painted, and the idle window's RSS with no model
   loaded: `python -m app` with HEARTH_STARTUP_PROBE, a fresh profile per run.
Medians; the ratio is the median of per-pair ratios (each pair back to back, in turns, so a
machine that slows for a while slows both sides of a pair). Results also go to
bench/results/gui_path.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HEARTH_HOME"] = tempfile.mkdtemp(prefix="hearth-bench-")

from engine_vs_raw import PROMPT_TEXT as PROMPT  # noqa: E402  (the same reply as the engine figures)
from engine_vs_raw import banned_tokens, decode_rate  # noqa: E402


def engine_alone(engine, params) -> float:
    times = []
    for event in engine.stream([{"role": "user", "content": PROMPT}], params, threading.Event()):
        if isinstance(event, str):
            times.append(time.perf_counter())
    return decode_rate(times)


@dataclass(frozen=True)
class GuiReply:
    """One reply as the window shows it."""

    first_text_ms: float  # from Send to the first text in the view
    tokens_per_s: float  # after the first text, where the text reaches the view
    gui_ms_per_chunk: float  # the GUI thread's CPU per chunk while the reply streamed
    stats: object  # the reply's ReplyStats, as the engine counted it


def through_gui(window, params) -> GuiReply:
    """A reply asked in `window` as a user sends one, measured where its text reaches the view."""
    from PySide6.QtCore import QEventLoop

    window.session.new_conversation()
    window.models.update_settings(window.models.settings.with_changes(sampling=params))
    times, cpu, finished = [], [], QEventLoop()

    def on_chunk(text):  # the chunk has reached the view (connected after the view's slot)
        times.append(time.perf_counter())
        cpu.append(time.thread_time())

    window.session.replyChunk.connect(on_chunk)
    window.session.replyFinished.connect(finished.quit)
    sent = time.perf_counter()
    window.send(PROMPT)
    finished.exec()
    window.session.replyChunk.disconnect(on_chunk)
    window.session.replyFinished.disconnect(finished.quit)
    stats = window.session.messages()[-1].stats
    if stats.completion_tokens is None:
        raise SystemExit(f"the reply failed: {stats.error}")
    if len(times) < 2:
        raise SystemExit(f"the reply came in {len(times)} chunk(s): no rate to measure (ask for more --tokens)")
    # From the first chunk's arrival to the last's, as the engine alone is timed from its first
    # piece to its last: what the window does once the reply has ended (saving it, rendering its
    # last block as Markdown, listing the conversation) is not streaming, as the engine's own end
    # (its stats, its saved state) is not counted on the other side. Chunks are coalesced, so
    # count tokens, not chunks: the first chunk holds one token.
    return GuiReply((times[0] - sent) * 1e3, (stats.completion_tokens - 1) / (times[-1] - times[0]),
                    (cpu[-1] - cpu[0]) * 1e3 / (len(cpu) - 1), stats)


def startup_figures(runs: int) -> tuple[list[float], list[float]]:
    shown, rss = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            out = Path(home) / "probe.json"
            env = dict(os.environ, HEARTH_HOME=home, HEARTH_STARTUP_PROBE=str(out))
            subprocess.run([sys.executable, "-m", "app"], env=env, cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            figures = json.loads(out.read_text())
        shown.append(figures["shown_s"])
        rss.append(figures["idle_rss_mb"])
    return shown, rss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()

    from PySide6.QtCore import QEventLoop, QSettings

    from app.engine.llama.generator import Engine
    from app.engine.sampling import SamplingParams
    from app.engine.types import LoadOptions, ModelSettings
    from app.owners.bridge import EngineBridge
    from app.owners.chat_session import ChatSession
    from app.owners.downloads import DownloadManager
    from app.owners.model_session import ModelSession
    from app.owners.paths import default_model
    from app.owners.settings import Settings
    from app.store import ConversationStore
    from app.ui.app.application import create_application
    from app.ui.window.main_window import MainWindow

    model = default_model()
    params = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=args.tokens,
                            logit_bias=banned_tokens(model))
    create_application()  # as Hearth makes it: its style, and Qt's environment (QT_ENVIRONMENT)
    home = Path(os.environ["HEARTH_HOME"])
    store = ConversationStore(home / "bench.sqlite3")
    bridge = EngineBridge()
    settings = Settings(QSettings(str(home / "bench.ini"), QSettings.IniFormat))
    settings.save_model_settings(model.name, ModelSettings(n_ctx=4096))
    models = ModelSession(bridge, settings)
    window = MainWindow(models, ChatSession(store, bridge, models), settings, DownloadManager())
    window.show()
    loaded = QEventLoop()
    models.modelLoaded.connect(loaded.quit)
    models.load(model)
    loaded.exec()
    engine = Engine(model, LoadOptions(n_ctx=4096))

    gui, alone, gui_cpu = [], [], []
    through_gui(window, params)  # warm both paths once
    engine_alone(engine, params)
    for run in range(args.runs):  # the two back to back, in turns: each pair under the same load
        if run % 2:
            alone.append(engine_alone(engine, params))
        measured = through_gui(window, params)
        gui.append(measured.tokens_per_s)
        gui_cpu.append(measured.gui_ms_per_chunk)
        if not run % 2:
            alone.append(engine_alone(engine, params))
    engine.close()
    window.close()
    bridge.shutdown()
    store.close()

    shown, rss = startup_figures(args.runs)
    results = {
        "tokens": args.tokens, "runs": args.runs,
        "gui_tokens_per_s": statistics.median(gui), "engine_tokens_per_s": statistics.median(alone),
        "ratio": statistics.median(g / e for g, e in zip(gui, alone)), "gui_samples": gui, "engine_samples": alone,
        "gui_thread_ms_per_chunk": statistics.median(gui_cpu), "gui_thread_ms_samples": gui_cpu,
        "launch_to_window_s": statistics.median(shown), "launch_samples": shown,
        "idle_rss_mb": statistics.median(rss), "rss_samples": rss,
    }
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gui_path.json").write_text(json.dumps(results, indent=2))
    print(f"reply tok/s  GUI path {results['gui_tokens_per_s']:.2f} / engine alone {results['engine_tokens_per_s']:.2f} "
          f"= {results['ratio']:.3f}  (target >= 0.97)")
    print(f"GUI thread CPU per chunk {results['gui_thread_ms_per_chunk']:.2f} ms")
    print(f"launch to window shown {results['launch_to_window_s']:.2f} s  (aim <= 1.5 s, no model load)")
    print(f"idle window RSS {results['idle_rss_mb']:.0f} MB  (aim <= 200 MB, no model loaded)")


if __name__ == "__main__":
    main()
