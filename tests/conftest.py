"""Suite-wide set-up: headless Qt, a throwaway profile, no Hugging Face cache, the real default model."""

from __future__ import annotations

import os
import tempfile
import time

# Before anything imports Qt or reads a path: tests never touch the user's own profile.
os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ["HEARTH_HOME"] = tempfile.mkdtemp(prefix="hearth-test-home-")
# Nor the machine's own Hugging Face cache, which the model picker scans (huggingface_hub reads
# this when imported; tests of the cache itself point it elsewhere).
os.environ["HF_HUB_CACHE"] = os.path.join(os.environ["HEARTH_HOME"], "no-hf-cache")

import pytest  # noqa: E402
from support.bundle_build import build as bundle_build  # noqa: E402
from support.engine_children import our_engine_children  # noqa: E402


def _xdist_controller(config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def _keep_to_this_workers_cpus(workerinput: dict) -> None:
    """Run this pytest-xdist worker, and the processes it starts (`hearth` subprocesses), on its
    own share of the CPUs: worker i of n takes every n-th CPU from the i-th (one core each, on
    two cores with two workers).

    llama.cpp gives a context one thread per CPU this process may run on
    (app.engine.llama.devices.cpu_threads), and its threads spin while they wait for each other. Two
    workers each running two of them on two cores took 6 to 20 times as long per token as one
    thread each (tests/engine/test_lookup_decoding.py's replies, measured here); the count is
    what a user's machine gets, not what this suite checks (test_generator checks it against
    the CPUs the process may use, whatever they are)."""
    if not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    count, index = int(workerinput["workercount"]), int(workerinput["workerid"].removeprefix("gw"))
    os.sched_setaffinity(0, cpus[index::count] or [cpus[index % len(cpus)]])


def pytest_configure(config):
    """Under pytest-xdist, the controlling process starts the one bundle build before the
    workers exist, when the run may include the bundle's tests (the whole suite, or that file);
    each worker keeps to its own CPUs."""
    if hasattr(config, "workerinput"):
        _keep_to_this_workers_cpus(config.workerinput)
    slow = os.environ.get("HEARTH_SLOW_TESTS") == "1"
    whole = not config.args or any(arg.rstrip("/") in ("tests", ".") or "test_bundle" in arg for arg in config.args)
    if slow and whole and not config.option.keyword and _xdist_controller(config):
        bundle_build.start_for_workers()


def pytest_collection_finish(session):
    """Without workers: start building the bundle now if its tests are going to run."""
    if os.environ.get("HEARTH_SLOW_TESTS") == "1" and not hasattr(session.config, "workerinput") and any(
        item.path.name == "test_bundle.py" and item.get_closest_marker("slow") for item in session.items
    ):
        bundle_build.start()


def pytest_unconfigure(config):
    bundle_build.abandon()  # after every worker has finished: nobody waits for it any more


@pytest.fixture(scope="session")
def gemma_path():
    """The real Gemma 3 270M (the embedded default), assembled from its package on first use."""
    from app.owners.paths import default_model

    path = default_model()
    assert path is not None and path.exists(), "the default model package is a dependency"
    return path


@pytest.fixture(scope="session")
def gemma_info(gemma_path):
    """The default model's metadata, read without loading it."""
    from app.engine.gguf.reading import inspect_model

    return inspect_model(gemma_path)


@pytest.fixture
def script(gemma_info):
    """What scripted backends answer (tests/support/scripted_backend.py), described as the real Gemma."""
    from support.scripted_backend import Script

    return Script(gemma_info)


@pytest.fixture
def scripted_models(qapp, tmp_path, script):
    """A ModelSession over a real bridge and engine thread whose backends are scripted, with a
    settings file in tmp_path."""

    from support.window_stack import ModelStack

    stack = ModelStack.start(tmp_path, opener=script.open)
    yield stack.models
    stack.shutdown()


@pytest.fixture(autouse=True, scope="module")
def _no_engine_process_outlives_its_module():
    """Every engine process a test file starts (a bridge's, a backend's) has ended by the file's
    end: Unload, closing a window's engine and a crash all end theirs, so one left running is a
    leak (its model's memory kept), found here rather than by the next file that counts them."""
    before = set(our_engine_children())
    yield
    deadline = time.monotonic() + 5
    while (left := set(our_engine_children()) - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"engine processes left running: {sorted(left)}"
