"""The engine's process (#29): Hearth started as `hearth --engine-child FD`, holding one loaded
model and answering the requests of protocol.py over the socket FD its parent (backend.py) gave it.

One thread reads the socket; "stop" sets the running reply's cancel flag at once (so a Stop
reaches the reply within a token, as in process), every other request is queued for the main
thread, which runs them one at a time: the engine is driven by one thread, as its Backend
contract says. Whatever the engine raises where the in-process engine would have raised is sent
back as a Failure and the child goes on; a crash in llama.cpp ends the process, and the parent
sees the socket close and the exit status (the point of the child). Its log goes to stderr,
which the parent keeps the tail of, for the message that says why it died.
"""

from __future__ import annotations

import logging
import queue
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ...images.image import Image
from ..backend import Backend, closing_reply
from ..embedding.types import Embedder
from ..kv.cache import StateCache
from .codec import ProtocolError, decode
from .frames import ChannelClosed, FrameSocket
from .protocol import REQUESTS, EmbedderInfo, LoadRequest, StreamRequest, Vectors, failure_of

_STOPPED = object()  # the reader's last word: the parent is gone


def run_engine_child(fd: int) -> int:
    """Serve requests until "close" or until the parent goes; the exit status."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    channel = socket.socket(fileno=fd)
    frames = FrameSocket(channel)
    child = _Child(frames)
    requests: queue.Queue = queue.Queue()
    threading.Thread(target=_read, args=(frames, requests, child), daemon=True).start()
    try:
        while (request := requests.get()) is not _STOPPED:
            kind, body = request
            if kind == "close":
                break
            child.answer(kind, body)
    finally:
        child.close()
        channel.close()
    return 0


def _read(frames: FrameSocket, requests: queue.Queue, child: _Child) -> None:
    try:
        while True:
            kind, data = frames.read()
            try:
                if kind not in REQUESTS:
                    raise ProtocolError(f"no request is called {kind!r}")
                body = decode(data, REQUESTS[kind])
            except ProtocolError as exc:  # a whole frame, of the wrong shape: said, and the next one read
                requests.put(("invalid", exc))
                continue
            if kind == "stop":
                child.cancel.set()
            else:
                requests.put((kind, body))
    except (ChannelClosed, ProtocolError, OSError):
        requests.put(_STOPPED)  # the parent went, or the stream is not frames any more: nothing more to do


class _Child:
    def __init__(self, frames: FrameSocket):
        self._frames = frames  # read by _read's thread, written here: one reader, senders under the lock
        self._lock = threading.Lock()
        self.backend: Backend | None = None
        self.embedder: Embedder | None = None
        self.states: StateCache | None = None  # the model's saved KV states, where it keeps them
        self.cancel = threading.Event()
        self.images: dict[str, Image] = {}  # the images the last stream request named, and any sent since

    def send(self, kind: str, body: Any = None) -> None:
        with self._lock:
            self._frames.send(kind, body)

    def answer(self, kind: str, body: Any) -> None:
        try:
            if kind == "invalid":
                raise body
            if kind == "devices":
                from ..llama.devices import device_report

                self.send("devices", device_report())
            elif kind == "load":
                self._load(body)
            elif kind == "image":
                self.images[body.digest] = body  # for the stream request that names it: no answer
            elif kind == "stream":
                self._stream(body)
            elif kind == "template":
                self.send("template", self._loaded().set_template_override(body))
            elif kind == "prepare":
                self._loaded().prepare(body)
                self.send("done")
            elif kind == "forget":
                self._loaded().forget_state(body)
                self.send("done")
            elif kind == "states":
                if self.states is not None:
                    self.states.follow(body.states, body.cleared)
                self.send("done")
            elif kind == "embedder":
                self._load_embedder(body)
            elif kind == "embed":
                rows = self._embedding().embed(list(body)).astype(np.float32, copy=False)
                self.send("vectors", Vectors(rows.shape[0], rows.shape[1], rows.tobytes()))
            elif kind == "count":
                self.send("count", self._embedding().count_tokens(body))
        except Exception as exc:  # what the in-process engine raises, the parent raises: never the child's end
            logging.getLogger(__name__).info("%s failed: %s", kind, exc)
            self.send("failed", failure_of(exc))

    def _load_embedder(self, path: Path) -> None:
        from ..llama.embedder import LlamaEmbedder

        self.embedder = LlamaEmbedder(path)
        self.send("embedder", EmbedderInfo(self.embedder.dims, self.embedder.max_tokens))

    def _embedding(self) -> Embedder:
        if self.embedder is None:
            raise RuntimeError("no embedding model is loaded in the engine's process")
        return self.embedder

    def _loaded(self) -> Backend:
        if self.backend is None:
            raise RuntimeError("no model is loaded in the engine's process")
        return self.backend

    def _load(self, request: LoadRequest) -> None:
        from ..opening import open_backend
        from ..types import LocalModel

        try:
            self.states = request.states.open() if request.states is not None else None
        except OSError as exc:  # replies are only slower to resume: no reason to refuse the model
            logging.getLogger(__name__).warning("conversations' KV states will not be saved: %s", exc)
        self.backend = open_backend(LocalModel(request.path), request.options,
                                    progress=lambda share: self.send("progress", float(share)), states=self.states)
        self.send("loaded", self.backend.describe())

    def _stream(self, request: StreamRequest) -> None:
        self.cancel.clear()
        messages, named = request.messages(self.images)
        self.images = {digest: image for digest, image in self.images.items() if digest in named}
        stream = self._loaded().stream(messages, request.params, self.cancel,
                                       prompt_progress=lambda done, total: self.send("prompt", (done, total)),
                                       conversation_id=request.conversation_id, tools=request.tools,
                                       logprobs=request.logprobs, text_interval_s=request.text_interval_s)
        with closing_reply(stream) as events:
            for event in events:
                self.send("event", event)

    def close(self) -> None:
        if self.embedder is not None:
            self.embedder.close()
            self.embedder = None
        if self.backend is not None:
            self.backend.close()  # the conversation's KV state saved, as when the window unloads
            self.backend = None
