"""Load a model file once in a throwaway process, so that llama.cpp aborting cannot take Hearth down.

llama.cpp checks much of a GGUF file with `GGML_ASSERT`, which calls `abort()`: the whole
process ends, and in the GUI that is the window, the open conversation and the text being
typed. `gguf/checks.py` refuses every value we know llama.cpp asserts on, but that list can
never be complete (each llama.cpp release asserts on something new, and a hostile file looks
for what we missed). So the first time the GUI loads a file, a child process loads it the same
way (`Engine`, the same template) and evaluates a reply's first token, where the remaining
asserts fire. A child that dies is reported like any other damaged file, and the window keeps
the model it had. A child that fails politely (a `ModelFileError`, say) is not reported here:
the real load fails the same way, with the message the user would get without the probe.

The child runs on the CPU with a small context. The hyperparameter checks are in llama.cpp's
model loader and graph builder, which every backend shares; what fails only on a GPU is memory,
and llama.cpp reports that without aborting. Offloading twice would cost seconds of copying.

A file that passed is remembered (resolved path, size, modification time, llama.cpp version),
so the probe runs once per file and not once per load. The child reads the weights cold; the
real load that follows finds them in the page cache, so a first load costs about one process
start more than before (`bench/probe_cost.py`).

The command line does not probe: an abort there ends only that command. Nor is a remote model
probed: there is no file, and what runs it is the server's process, not Hearth's.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from ..backend import Backend, BackendOpener, LoadCancelled, LoadProgress
from ..gguf.modelfile import ModelFileError
from ..opening import open_backend
from ..process.crash import describe_status, hearth_command, hearth_folder, last_words
from ..types import LoadOptions, LocalModel, ModelSource
from .load_checks import check_load_options

log = logging.getLogger(__name__)

PROBE_FLAG = "--probe-model"  # the hidden command-line switch the child runs under
PROBE_CONTEXT = 512  # tokens: room for any template's framing of one short message
PROBE_SHARE = 0.5  # of the load's progress bar: the probe reads the file from disk, the load from cache
MAX_REMEMBERED = 500  # files whose probe passed; the oldest are forgotten first
# The child's exit statuses. Killed by a signal: llama.cpp crashed. Any other status is the
# child itself failing (it could not start, a Python error): the probe is skipped, not the file.
_EXIT_PASSED, _EXIT_REFUSED = 0, 65  # 65: EX_DATAERR, "the input data was incorrect"
# Time for the child: a hostile file can make llama.cpp loop, and then only Cancel would end
# the load. Generous: the child reads the whole file cold (20 MB/s is a slow disk).
PROBE_BASE_SECONDS = 120
PROBE_BYTES_PER_SECOND = 20_000_000
_PROGRESS = "progress "
# Where llama.cpp says why it stopped: its own assert or abort line first, anything else after.
# No CUDA in the child (its checks are the CPU's, and the GPU still holds the current model),
# and no backtrace from ggml_abort pushing the assert's line out of the tail we keep.
_CHILD_ENVIRONMENT = {"CUDA_VISIBLE_DEVICES": "", "GGML_NO_BACKTRACE": "1"}


class ProbingOpener:
    """A BackendOpener that has a child process load each new file before Hearth does."""

    def __init__(self, verdicts: Path, opener: BackendOpener = open_backend, command: Sequence[str] | None = None):
        """`verdicts`: the file remembering which files passed. `command`: the child to run
        (Hearth itself by default); tests give one that crashes on purpose."""
        self._verdicts = _PassedFiles(verdicts)
        self._open = opener
        self._command = list(command) if command is not None else child_command()

    def __call__(
        self,
        source: ModelSource,
        options: LoadOptions,
        progress: LoadProgress | None = None,
        cancel: threading.Event | None = None,
    ) -> Backend:
        if not isinstance(source, LocalModel):  # a server's model: no file, and no llama.cpp here
            return self._open(source, options, progress, cancel)
        check_load_options(options)  # refused before the probe loads anything, as the Engine would
        identity = _identity(source.path)
        if identity is None or self._verdicts.passed(identity):
            return self._open(source, options, progress, cancel)
        report = progress or (lambda fraction: None)
        if self._probe(source, options, lambda f: report(f * PROBE_SHARE), cancel):
            self._verdicts.remember(identity)
        return self._open(source, options, lambda f: report(PROBE_SHARE + f * (1 - PROBE_SHARE)), cancel)

    def _probe(self, source: LocalModel, options: LoadOptions, progress: LoadProgress, cancel) -> bool:
        """Run the child; True if it loaded the file and read a token. Raises ModelFileError
        if it crashed, LoadCancelled if the user cancelled meanwhile."""
        request = {"path": str(source.path), "template_override": options.template_override,
                   "n_ctx": min(options.n_ctx or PROBE_CONTEXT, PROBE_CONTEXT)}
        child = _Child(self._command, request)
        limit = PROBE_BASE_SECONDS + source.path.stat().st_size / PROBE_BYTES_PER_SECOND
        deadline = time.monotonic() + limit
        try:
            while (status := child.wait(0.05)) is None:
                child.report_progress(progress)
                if cancel is not None and cancel.is_set():
                    raise LoadCancelled(f"Loading {source.path.name} was cancelled.")
                if time.monotonic() > deadline:
                    raise ModelFileError(
                        f"Hearth did not load {source.path.name}: a test load of it had not finished after "
                        f"{limit:.0f} s, so llama.cpp is probably stuck on it. The file may be damaged.")
        finally:
            child.kill()
        if status >= 0:
            if status not in (_EXIT_PASSED, _EXIT_REFUSED):
                log.warning("the probe process failed on its own (exit status %d); loading %s without it:\n%s",
                            status, source.path, "\n".join(child.stderr_tail))
            return status == _EXIT_PASSED
        last_words = child.last_words()
        log.error("llama.cpp crashed (%s) loading %s in the probe; its last output:\n%s",
                  describe_status(status), source.path, "\n".join(child.stderr_tail))
        raise ModelFileError(
            f"{source.path.name} made llama.cpp crash ({describe_status(status)}), so Hearth did not "
            "load it: the file is damaged, or uses something this version of llama.cpp cannot handle."
            + (f" llama.cpp said: {last_words}" if last_words else "")
        )


def child_command() -> list[str]:
    """How to start Hearth as a probe child."""
    return hearth_command(PROBE_FLAG)


class _Child:
    """A running probe: its progress lines queued, the tail of its stderr kept for the log."""

    def __init__(self, command: list[str], request: dict):
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=hearth_folder(), text=True, errors="replace",
            env={**os.environ, **_CHILD_ENVIRONMENT},
        )
        self._progress: queue.Queue[float] = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=40)
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        try:
            self._process.stdin.write(json.dumps(request))
            self._process.stdin.close()
        except OSError:  # it died before reading: wait() says how
            pass

    def _read_stdout(self) -> None:
        for line in self._process.stdout:
            if line.startswith(_PROGRESS):
                try:
                    self._progress.put(float(line[len(_PROGRESS):]))
                except ValueError:
                    pass

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            self.stderr_tail.append(line.rstrip()[:1000])

    def wait(self, seconds: float) -> int | None:
        try:
            status = self._process.wait(seconds)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:  # so the tail holds everything it wrote before dying
            reader.join(timeout=1)
        return status

    def report_progress(self, progress: LoadProgress) -> None:
        latest = None
        while not self._progress.empty():
            latest = self._progress.get_nowait()
        if latest is not None:
            progress(latest)

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def last_words(self) -> str:
        """The line of llama.cpp's output that says why it stopped, shortened for a message."""
        return last_words(self.stderr_tail)


def _identity(path: Path) -> str | None:
    """What a verdict is remembered under; None when the file cannot be read (the real load
    then says why)."""
    try:
        resolved = path.resolve()
        stat = resolved.stat()
    except (OSError, RuntimeError):
        return None
    from llama_cpp import __version__ as llama_version  # the engine thread loads it anyway

    return f"{resolved}|{stat.st_size}|{stat.st_mtime_ns}|{llama_version}"


class _PassedFiles:
    """The files whose probe passed, kept in a small JSON file (newest last).

    Only passes are remembered: a file that crashed the child is probed again next time, so
    a file repaired in place, or a fixed llama.cpp, gets a fresh verdict.
    """

    def __init__(self, path: Path):
        self._path = path
        self._passed: list[str] | None = None
        self._lock = threading.Lock()

    def passed(self, identity: str) -> bool:
        with self._lock:
            return identity in self._load()

    def remember(self, identity: str) -> None:
        with self._lock:
            passed = [entry for entry in self._load() if entry != identity] + [identity]
            self._passed = passed[-MAX_REMEMBERED:]
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                partial = self._path.with_name(self._path.name + ".partial")
                partial.write_text(json.dumps(self._passed), encoding="utf-8")
                os.replace(partial, self._path)
            except OSError as exc:  # the probe simply runs again next time
                log.warning("could not remember probed models in %s: %s", self._path, exc)

    def _load(self) -> list[str]:
        if self._passed is None:
            try:
                loaded = json.loads(self._path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                loaded = []
            self._passed = [entry for entry in loaded if isinstance(entry, str)] if isinstance(loaded, list) else []
        return self._passed


def run_child() -> int:
    """The child's side: read the request from stdin, load, read one token, exit 0 or 65.

    Progress goes to stdout as `progress F` lines. A polite failure exits 65 with its reason on
    stderr; an abort is the exit the parent is looking for.
    """
    from ..context import ContextFullError
    from ..sampling import SamplingParams
    from ..templates.chat_template import TemplateError
    from .generator import Engine

    request = json.loads(sys.stdin.read())
    options = LoadOptions(n_ctx=int(request["n_ctx"]), n_gpu_layers=0,
                          template_override=request.get("template_override"))

    to_parent = sys.stdout  # the engine points sys.stdout at its log while it loads
    reported = -1.0

    def progress(fraction: float) -> None:
        nonlocal reported
        if fraction - reported >= 0.01 or fraction >= 1.0:
            reported = fraction
            print(f"{_PROGRESS}{fraction:.3f}", file=to_parent, flush=True)

    try:
        engine = Engine(request["path"], options, progress=progress)
        for _ in engine.stream([{"role": "user", "content": "Hello"}], SamplingParams(max_tokens=1), threading.Event()):
            pass
    except (ModelFileError, TemplateError, ContextFullError, ValueError) as exc:
        print(f"hearth probe: {exc}", file=sys.stderr)
        return _EXIT_REFUSED
    return _EXIT_PASSED
