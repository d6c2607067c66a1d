"""The window with llama.cpp in a process of its own (#29) ÷ the window with llama.cpp in its own
process (as Hearth ran before), measured through the window, in one run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/window_process.py [--runs 5] [--tokens 128]

Two real windows in one process, each over its own bridge: one whose engine thread opens the model
in process (`open_backend`, what the bridge did before #29), one as Hearth makes it now (each
local model in a child, ChildOpener). The same model (Gemma 3 270M), prompt and greedy settings,
end-of-turn tokens banned so both write exactly --tokens tokens; the replies alternate. Per reply:
tokens a second where the text reaches the view (bench/gui_path.py's measure), and the time from
Send to the first text in the view. Then the GUI event loop's longest stall while a tiny real
model (the conformance suite's tinyllama: 64 wide, 2 layers, a 32,000-token vocabulary) streams
as fast as llama.cpp writes it, about 2,000 tokens a second here, each way: a 1 ms QTimer's
longest gap (bench/event_loop_stall.py's heartbeat), the engine thread's frames decoding beside
the GUI thread in the child's way. Then the peak resident memory of each way on its own, in a
fresh process per run (the window's VmHWM, plus the child's for the child's way). Medians; results
also go to bench/results/window_process.json. Targets (the issue's): tokens/s ≥ 0.98, first text
≤ +5 ms, the longest stall no worse, peak memory ≤ 1.1.
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
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HEARTH_HOME"] = tempfile.mkdtemp(prefix="hearth-bench-")

from engine_vs_raw import PROMPT_TEXT as PROMPT  # noqa: E402  (the same reply as the engine figures)
from engine_vs_raw import banned_tokens  # noqa: E402
from gui_path import through_gui  # noqa: E402


def open_window(home: Path, in_process: bool, name: str, model: Path | None = None):
    """A window over its own bridge, store and settings, `model` (the default one) loaded."""
    from functools import partial

    from PySide6.QtCore import QEventLoop, QSettings

    from app.engine.opening import open_backend
    from app.engine.types import ModelSettings
    from app.owners.bridge import EngineBridge
    from app.owners.chat_session import ChatSession
    from app.owners.downloads import DownloadManager
    from app.owners.model_session import ModelSession
    from app.owners.paths import default_model
    from app.owners.settings import Settings
    from app.store import ConversationStore
    from app.ui.window.main_window import MainWindow

    model = model or default_model()
    store = ConversationStore(home / f"{name}.sqlite3")
    bridge = EngineBridge(partial(open_backend, states=None) if in_process else None)
    settings = Settings(QSettings(str(home / f"{name}.ini"), QSettings.IniFormat))
    settings.save_model_settings(model.name, ModelSettings(n_ctx=4096))
    models = ModelSession(bridge, settings)
    window = MainWindow(models, ChatSession(store, bridge, models), settings, DownloadManager())
    window.show()
    if not in_process:
        bridge.ask_devices()  # as the application does once its window shows
    loaded = QEventLoop()
    models.modelLoaded.connect(loaded.quit)
    models.load(model)
    loaded.exec()
    return window, bridge, store


def reply(window, params) -> tuple[float, float, float]:
    """(ms from Send to the first text in the view, tokens a second after it, the engine's own ms
    to its first token)."""
    measured = through_gui(window, params)
    return measured.first_text_ms, measured.tokens_per_s, measured.stats.ttft_s * 1e3


def longest_stall(window, params) -> tuple[float, float]:
    """(the GUI thread's longest gap between 1 ms ticks while the reply streams, in ms; tokens a
    second)."""
    from event_loop_stall import Heartbeat
    from PySide6.QtCore import QEventLoop

    window.session.new_conversation()
    window.models.update_settings(window.models.settings.with_changes(sampling=params))
    finished, first = QEventLoop(), []
    on_chunk = lambda _text: first or first.append(heartbeat.take())  # noqa: E731 - from the first text on
    heartbeat = Heartbeat()
    window.session.replyChunk.connect(on_chunk)
    window.session.replyFinished.connect(finished.quit)
    window.send(PROMPT)
    finished.exec()
    gaps = heartbeat.take()  # the stream's, up to its end
    window.session.replyChunk.disconnect(on_chunk)
    window.session.replyFinished.disconnect(finished.quit)
    stats = window.session.messages()[-1].stats
    return max(gaps) * 1e3, stats.tokens_per_s


def peak_memory(in_process: bool, params_tokens: int) -> float:
    """MB: the peak resident memory of a window that loaded the model and wrote one reply, in a
    process of its own (plus its engine child's, where there is one)."""
    out = subprocess.run([sys.executable, __file__, "--memory-of", "in-process" if in_process else "child",
                          "--tokens", str(params_tokens)], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(out.stdout.strip().splitlines()[-1])


def _high_water(pid: int | str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def memory_of(way: str, tokens: int) -> None:
    from PySide6.QtWidgets import QApplication
    from support.engine_children import our_engine_children

    from app.engine.sampling import SamplingParams
    from app.owners.paths import default_model

    app = QApplication.instance() or QApplication([])  # noqa: F841 - widgets need it
    window, bridge, store = open_window(Path(os.environ["HEARTH_HOME"]), way == "in-process", way)
    reply(window, SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=tokens,
                                 logit_bias=banned_tokens(default_model())))
    total = _high_water("self") + sum(_high_water(pid) for pid in our_engine_children())
    window.close()
    bridge.shutdown()
    store.close()
    print(total / 2**20)


def alternate(home: Path, model: Path | None, runs: int, measure) -> list[dict[str, list[float]]]:
    """Both ways' windows over `model`, `measure(window)` (a tuple of figures) taken in turn, each
    way warmed once first: for each figure, its samples by way."""
    tag = model.stem if model is not None else "default"
    ways = {"in_process": open_window(home, True, f"{tag}-in-process", model),
            "child": open_window(home, False, f"{tag}-child", model)}
    figures: list[dict[str, list[float]]] = []
    for window, _bridge, _store in ways.values():
        measure(window)
    for _ in range(runs):
        for way, (window, _bridge, _store) in ways.items():
            for index, figure in enumerate(measure(window)):
                if index == len(figures):
                    figures.append({name: [] for name in ways})
                figures[index][way].append(figure)
    for window, bridge, store in ways.values():
        window.close()
        bridge.shutdown()
        store.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--memory-of", choices=["in-process", "child"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_of:
        memory_of(args.memory_of, args.tokens)
        return

    from PySide6.QtWidgets import QApplication

    from app.engine.sampling import SamplingParams
    from app.owners.paths import default_model

    params = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=args.tokens,
                            logit_bias=banned_tokens(default_model()))
    app = QApplication.instance() or QApplication([])  # noqa: F841 - widgets need it
    home = Path(os.environ["HEARTH_HOME"])
    first_ms, rates, engine_first_ms = alternate(home, None, args.runs, lambda window: reply(window, params))

    from support.model_files.tiny_models import ensure_tiny_models

    tiny = ensure_tiny_models()["tinyllama"][0]
    fast = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=3000, logit_bias=banned_tokens(tiny))
    stalls, fast_rates = alternate(home, tiny, args.runs, lambda window: longest_stall(window, fast))

    memory = {"in_process": [], "child": []}
    for _ in range(args.runs):
        memory["in_process"].append(peak_memory(True, args.tokens))
        memory["child"].append(peak_memory(False, args.tokens))

    median = {name: {way: statistics.median(samples) for way, samples in figures.items()}
              for name, figures in (("first_ms", first_ms), ("engine_first_ms", engine_first_ms),
                                    ("tokens_per_s", rates), ("peak_mb", memory),
                                    ("longest_stall_ms", stalls), ("fast_tokens_per_s", fast_rates))}
    results = {
        "tokens": args.tokens, "runs": args.runs, "medians": median,
        "tokens_per_s_ratio": median["tokens_per_s"]["child"] / median["tokens_per_s"]["in_process"],
        "first_text_extra_ms": median["first_ms"]["child"] - median["first_ms"]["in_process"],
        "peak_memory_ratio": median["peak_mb"]["child"] / median["peak_mb"]["in_process"],
        "samples": {"first_ms": first_ms, "tokens_per_s": rates, "peak_mb": memory, "longest_stall_ms": stalls,
                    "fast_tokens_per_s": fast_rates},
    }
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "window_process.json").write_text(json.dumps(results, indent=2))
    print(f"through the window, tok/s   child {median['tokens_per_s']['child']:.2f} / in process "
          f"{median['tokens_per_s']['in_process']:.2f} = {results['tokens_per_s_ratio']:.3f}  (target >= 0.98)")
    print(f"Send to first text          child {median['first_ms']['child']:.1f} ms / in process "
          f"{median['first_ms']['in_process']:.1f} ms: {results['first_text_extra_ms']:+.1f} ms  (target <= +5); "
          f"the engine's own count: child {median['engine_first_ms']['child']:.1f} ms, in process "
          f"{median['engine_first_ms']['in_process']:.1f} ms")
    print(f"longest GUI stall, tiny model  child {median['longest_stall_ms']['child']:.1f} ms at "
          f"{median['fast_tokens_per_s']['child']:.0f} tok/s / in process {median['longest_stall_ms']['in_process']:.1f} "
          f"ms at {median['fast_tokens_per_s']['in_process']:.0f} tok/s  (target: no worse)")
    print(f"peak memory, window + model child {median['peak_mb']['child']:.0f} MB / in process "
          f"{median['peak_mb']['in_process']:.0f} MB = {results['peak_memory_ratio']:.3f}  (target <= 1.1)")


if __name__ == "__main__":
    main()
