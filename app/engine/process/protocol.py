"""What the window's process and the engine's process say to each other (#29): the requests, the
answers, and which type each kind of message carries, declared once for both sides.

The parent (backend.py, ProcessBackend) asks; the child (child.py) answers, one request at a time
except "stop", which may come while a reply streams:

    devices   None              -> devices(DeviceReport): asked before a load, and after one
    load      LoadRequest       -> progress(float)…, then loaded(ModelDescription) or failed(Failure)
    image     Image             -> (nothing: kept for the stream requests that name it, until one
                                   that names it no more; backend.py sends each image once)
    stream    StreamRequest     -> prompt(tuple[int, int])…, event(a ReplyEvent)… ending in a
                                   ReplyStats, or failed(Failure) before the first piece
    stop      None              -> (the stream in progress ends at its next token, CANCELLED)
    prepare   int | None        -> done
    forget    int               -> done
    template  str | None        -> template(str) or failed(Failure)
    states    StatesChange      -> done (the user changed the saved states' budget, or cleared them)
    close     None              -> (the child frees the model and exits)

A child holds a chat model (load…) or an embedding model (ProcessEmbedder, embedder.py):

    embedder  Path              -> embedder(EmbedderInfo) or failed(Failure)
    embed     tuple[str, ...]   -> vectors(Vectors): one float32 row per text
    count     str               -> count(int): the tokens the embedding model reads for it

A Failure names the exception the child met by class name; the parent raises the same class
where it is one callers tell apart (RAISED), else EngineFailure: the window, the command line and
the server treat a child's refusals exactly as they treat the in-process engine's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...images.image import Image, ImageError
from ..backend import LoadCancelled
from ..context import ContextFullError
from ..gguf.modelfile import ModelFileError
from ..kv.cache import SavedStates
from ..logprobs import LogprobsUnavailable, TokenLogprob
from ..options import LoadOptions
from ..sampling import SamplingError, SamplingParams
from ..templates.limits import TemplateError
from ..tools.types import ToolCall, ToolCallDelta, ToolsError, ToolUse
from ..types import DeviceReport, ModelDescription, ReplyStats


@dataclass(frozen=True)
class LoadRequest:
    """Load this GGUF file with these options; `states`: the conversations' saved KV states
    (None: keep none)."""

    path: Path
    options: LoadOptions
    states: SavedStates | None = None


@dataclass(frozen=True)
class StreamRequest:
    """One reply, as Backend.stream takes it. `messages` travel as their JSON text: the parent
    wrote them, and the child reads them as the in-process engine would. A message's images are
    named there by digest; each image crosses once, in an "image" request of its own before the
    first stream request that names it (a conversation's photos are megabytes each: sent with
    every request, they would soon outgrow a frame, and cost each turn their encoding)."""

    messages_json: str
    params: SamplingParams
    conversation_id: int | None = None
    tools: ToolUse = ToolUse()
    logprobs: int | None = None
    text_interval_s: float = 0.0

    @classmethod
    def of(cls, messages: list[dict], params: SamplingParams, **rest) -> tuple[StreamRequest, dict[str, Image]]:
        """The request for these messages, and the images they name, by digest."""
        images: dict[str, Image] = {}
        named = []
        for message in messages:
            attached = message.get("images")
            if attached:
                images.update((image.digest, image) for image in attached)
                message = {**message, "images": [image.digest for image in attached]}
            named.append(message)
        return cls(json.dumps(named, ensure_ascii=False), params, **rest), images

    def messages(self, images: Mapping[str, Image]) -> tuple[list[dict], set[str]]:
        """The messages as the parent had them, their images taken from `images`, and the digests
        they name. ImageError for an image named but never sent."""
        messages = json.loads(self.messages_json)
        named: set[str] = set()
        for message in messages:
            if isinstance(message, dict) and message.get("images"):
                try:
                    message["images"] = tuple(images[digest] for digest in message["images"])
                except (KeyError, TypeError):
                    raise ImageError("A message names an image that was not sent to the engine's process.") from None
                named.update(image.digest for image in message["images"])
        return messages, named


@dataclass(frozen=True)
class StatesChange:
    """The saved states' budgets now, and whether the user just cleared them all."""

    states: SavedStates
    cleared: bool = False


@dataclass(frozen=True)
class EmbedderInfo:
    """An embedding model loaded in the child: the length of its vectors, the most tokens a text may have."""

    dims: int
    max_tokens: int


@dataclass(frozen=True)
class Vectors:
    """Embeddings as they travel: `rows` float32 rows of `dims`, row after row, as bytes."""

    rows: int
    dims: int
    data: bytes


@dataclass(frozen=True)
class Failure:
    """An exception the child met where the in-process engine would have raised it: its class's
    name and its message, for the user."""

    kind: str
    message: str
    param: str | None = None  # a ToolsError's field, for the server's 400


class EngineFailure(Exception):
    """The engine's process refused or failed in a way no caller tells apart: the message says it."""


# The exceptions callers tell apart, raised again in the parent by name.
RAISED: dict[str, type[Exception]] = {cls.__name__: cls for cls in (
    ContextFullError, ImageError, LoadCancelled, LogprobsUnavailable, ModelFileError, SamplingError, TemplateError,
    ToolsError,
)}

ReplyEventType = str | TokenLogprob | ToolCallDelta | ToolCall | ReplyStats

# What each kind of message carries, each side's: a kind not listed is a ProtocolError.
REQUESTS: dict[str, Any] = {
    "devices": type(None), "load": LoadRequest, "image": Image, "stream": StreamRequest, "stop": type(None), "prepare": int | None, "forget": int,
    "template": str | None, "states": StatesChange, "close": type(None), "embedder": Path, "embed": tuple[str, ...], "count": str,
}
ANSWERS: dict[str, Any] = {
    "progress": float, "loaded": ModelDescription, "failed": Failure, "prompt": tuple[int, int],
    "event": ReplyEventType, "done": type(None), "template": str, "devices": DeviceReport,
    "embedder": EmbedderInfo, "vectors": Vectors, "count": int,
}


def failure_of(exc: BaseException) -> Failure:
    """The Failure for `exc`, named by the nearest class callers tell apart (a MessageTooLongError
    is raised again as the TemplateError it is), else by its own."""
    named = next((cls.__name__ for cls in type(exc).__mro__ if cls.__name__ in RAISED), type(exc).__name__)
    param = getattr(exc, "param", None)
    return Failure(named, str(exc), param if isinstance(param, str) else None)


def raised(failure: Failure) -> Exception:
    """The exception to raise in the parent for a child's Failure."""
    if failure.kind == ToolsError.__name__:
        return ToolsError(failure.message, failure.param)
    return RAISED.get(failure.kind, EngineFailure)(failure.message)
