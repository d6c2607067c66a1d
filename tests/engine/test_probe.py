"""The probe process: a file that makes llama.cpp abort costs a message, not the window.

Two kinds of child run here. The real one (Hearth's own `--probe-model`, loading the real
Gemma or a damaged file) shows the wiring and the verdicts. For a crash, the child is a small
Python process that aborts the way llama.cpp does (GGML_ASSERT's line on stderr, then abort()):
the validation in gguf_checks.py refuses every file we know llama.cpp aborts on before any child
sees it, so no real file can be built that passes it and still aborts. That is the one stand-in.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest
from support.settings_file import settings_at

from app.engine.backend import LoadCancelled
from app.engine.gguf.modelfile import ModelFileError
from app.engine.llama.probe import ProbingOpener
from app.engine.types import LoadOptions, LocalModel

ASSERT_LINE = "llama-model.cpp:512: GGML_ASSERT(hparams.n_layer > 0) failed"
ABORTING_CHILD = [sys.executable, "-c", f"import os, sys; sys.stdin.read(); print({ASSERT_LINE!r}, file=sys.stderr, flush=True); os.abort()"]
HANGING_CHILD = [sys.executable, "-c", "import time; time.sleep(60)"]


class RecordingOpener:
    """Stands in for the real load after the probe; records that it was asked."""

    def __init__(self):
        self.opened: list[LocalModel] = []

    def __call__(self, source, options, progress=None, cancel=None):
        self.opened.append(source)
        if progress is not None:
            progress(1.0)
        return "backend"


def test_a_file_that_passes_is_loaded_and_not_probed_again(gemma_path, tmp_path):
    verdicts = tmp_path / "probed.json"
    opener, progress = RecordingOpener(), []
    assert ProbingOpener(verdicts, opener)(LocalModel(gemma_path), LoadOptions(n_ctx=2048), progress.append) == "backend"
    assert opener.opened == [LocalModel(gemma_path)]
    assert progress == sorted(progress) and progress[-1] == 1.0  # one bar for probe and load
    # Remembered across runs: a later Hearth with a child that would crash never starts it.
    again = ProbingOpener(verdicts, opener, command=ABORTING_CHILD)
    assert again(LocalModel(gemma_path), LoadOptions()) == "backend"


def test_a_child_that_aborts_is_reported_as_a_damaged_file_and_nothing_is_loaded(gemma_path, tmp_path):
    opener = RecordingOpener()
    probing = ProbingOpener(tmp_path / "probed.json", opener, command=ABORTING_CHILD)
    started = time.monotonic()
    with pytest.raises(ModelFileError) as refused:
        probing(LocalModel(gemma_path), LoadOptions())
    message = str(refused.value)
    assert gemma_path.name in message and "SIGABRT" in message and ASSERT_LINE in message
    assert len(message) < 500 and opener.opened == []
    assert time.monotonic() - started < 10
    # A crash is not remembered: next time the file is probed again.
    with pytest.raises(ModelFileError):
        probing(LocalModel(gemma_path), LoadOptions())
    assert not (tmp_path / "probed.json").exists()


def test_a_file_the_child_refuses_politely_gets_the_real_loads_own_message(tmp_path):
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(b"GGUF" + bytes(60))
    opener = RecordingOpener()
    ProbingOpener(tmp_path / "probed.json", opener)(LocalModel(damaged), LoadOptions())
    assert opener.opened == [LocalModel(damaged)]  # the real load reports it, as without a probe
    assert not (tmp_path / "probed.json").exists()


def test_cancel_stops_the_probe_at_once(gemma_path, tmp_path):
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(LoadCancelled):
        ProbingOpener(tmp_path / "probed.json", RecordingOpener(), command=HANGING_CHILD)(
            LocalModel(gemma_path), LoadOptions(), None, cancel)
    assert time.monotonic() - started < 3


def test_the_window_keeps_its_model_when_a_file_crashes_the_probe(qapp, script, gemma_path, tmp_path, qtbot):
    """Through the real bridge and engine thread: the crash ends as a load failure, and the
    model loaded before stays loaded. (The child aborts only for the file named bad.gguf.)"""

    from app.owners.bridge import EngineBridge
    from app.owners.model_session import ModelSession

    picky_child = [sys.executable, "-c", "import json, os, sys\n"
                   "if json.load(sys.stdin)['path'].endswith('bad.gguf'): os.abort()"]
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(100))
    bridge = EngineBridge(ProbingOpener(tmp_path / "probed.json", script.open, command=picky_child))
    try:
        models = ModelSession(bridge, settings_at(tmp_path / "hearth.ini"))
        with qtbot.waitSignal(models.modelLoaded, timeout=10_000):
            models.load(gemma_path)
        with qtbot.waitSignal(models.loadFailed, timeout=10_000) as failed:
            models.load(bad)
        assert "bad.gguf made llama.cpp crash (SIGABRT)" in failed.args[0]
        assert models.current.path == gemma_path and [source.path for source, _ in script.loads] == [gemma_path]
    finally:
        bridge.shutdown()


def test_a_child_stuck_on_a_file_is_given_up_on_with_a_message(gemma_path, tmp_path, monkeypatch):
    """llama.cpp looping on a hostile file would otherwise hold the load until Cancel."""
    import app.engine.llama.probe as probe

    monkeypatch.setattr(probe, "PROBE_BASE_SECONDS", 0.5)
    monkeypatch.setattr(probe, "PROBE_BYTES_PER_SECOND", 10**15)
    opener = RecordingOpener()
    started = time.monotonic()
    with pytest.raises(ModelFileError, match=f"did not load {gemma_path.name}: a test load of it had not finished"):
        ProbingOpener(tmp_path / "probed.json", opener, command=HANGING_CHILD)(LocalModel(gemma_path), LoadOptions())
    assert time.monotonic() - started < 5 and opener.opened == []


def test_a_child_that_fails_on_its_own_does_not_condemn_the_file(gemma_path, tmp_path):
    """A probe that cannot run (here: it exits 2 at once, as an argparse error would) is skipped:
    the file loads as it did before there was a probe, and is probed again next time."""
    opener = RecordingOpener()
    broken_child = [sys.executable, "-c", "import sys; sys.exit(2)"]
    ProbingOpener(tmp_path / "probed.json", opener, command=broken_child)(LocalModel(gemma_path), LoadOptions())
    assert opener.opened == [LocalModel(gemma_path)] and not (tmp_path / "probed.json").exists()
