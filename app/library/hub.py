"""Finding GGUF models on Hugging Face: search, a repository's models, and what fits here.

Everything goes through huggingface_hub: its HTTP session (proxies, user agent, the offline
switch), its auth headers (an explicit token, else HF_TOKEN or the token saved by
`hf auth login`), its error types and its response parsing. Two things are added on top:

* Settings are read when a `HubClient` is made, not when huggingface_hub was imported, so
  HF_ENDPOINT and HF_HUB_OFFLINE set after start-up (the tests, a future settings page)
  count. Importing this module touches no network.
* Every request has connect and read timeouts and no silent retries. huggingface_hub's
  session has no timeout of its own, and `HfApi.list_models` offers no timeout argument and
  retries timeouts five times with back-off, so a stalled server would freeze a search for
  minutes. Search therefore calls the same `/api/models` endpoint through the same session
  with a timeout; `model_info` takes one directly.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime

import httpx2
import psutil
from huggingface_hub import HfApi, constants
from huggingface_hub.hf_api import ModelInfo
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

from app.library.errors import OFFLINE_MESSAGE, HubUnavailable, RepoNotFound, hub_errors
from app.library.quants import RemoteFile, RemoteModel, group_models

# llama.cpp needs the weights plus the KV cache and compute buffers; for the context sizes
# Hearth uses that is roughly a fifth more than the file, and never less than 512 MiB more.
MEMORY_OVERHEAD_FACTOR = 1.2
MEMORY_OVERHEAD_MIN = 512 * 1024**2
_SEARCH_FIELDS = ["downloads", "likes", "lastModified", "gated", "private"]
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_MODELS_NAMED = 8  # in "It has: ...", before "and N more"
_MAX_REPO_ID = 200  # characters; the Hub allows 96 for each of owner and name


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for a connection and for the next bytes of an answer, and the least a
    download must receive in a while to go on.

    The read timeout alone cannot end a download from a server that trickles a byte every
    few seconds: each byte starts the wait again. So a download also gives up when fewer
    than `slow_bytes` arrive in `slow_window` seconds (paused time not counted): about
    1 KB/s by default, a rate at which no model would arrive in a useful time.
    """

    connect: float = 5.0
    read: float = 10.0
    slow_window: float = 60.0
    slow_bytes: int = 64_000

    def for_httpx(self) -> httpx2.Timeout:
        return httpx2.Timeout(self.read, connect=self.connect)


@dataclass(frozen=True)
class RepoSummary:
    """One search result."""

    repo_id: str
    downloads: int
    likes: int
    last_modified: datetime | None
    gated: bool  # the Hub says "auto"/"manual" for gated repos, False otherwise
    private: bool


@dataclass(frozen=True)
class RepoListing:
    """A repository's downloadable GGUF models, as of one commit."""

    repo_id: str
    revision: str
    gated: bool
    models: tuple[RemoteModel, ...]  # smallest first; see quants.by_quant() to group them


@dataclass(frozen=True)
class MemoryFit:
    needed_bytes: int
    fits_ram: bool
    fits_vram: bool | None  # None when no GPU memory figure was given


def offline_mode() -> bool:
    """HF_HUB_OFFLINE as it is now, or as it was when huggingface_hub was imported."""
    now = os.environ.get("HF_HUB_OFFLINE", "").upper() in constants.ENV_VARS_TRUE_VALUES
    return now or constants.HF_HUB_OFFLINE


class HubClient:
    """A connection profile for one Hub: its endpoint, the token to send and the timeouts.

    `endpoint` defaults to HF_ENDPOINT, then huggingface.co. `token=None` lets
    huggingface_hub use HF_TOKEN or the user's saved login; pass a string to use that one.
    """

    def __init__(self, endpoint: str | None = None, token: str | None = None, timeouts: Timeouts = Timeouts()):
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self.token = token
        self.timeouts = timeouts

    def headers(self) -> dict[str, str]:
        return build_hf_headers(token=self.token)

    def check_online(self) -> None:
        """Raise HubUnavailable at once in offline mode, before any socket is opened."""
        if offline_mode():
            raise HubUnavailable(OFFLINE_MESSAGE)

    def search(self, query: str, limit: int = 30) -> list[RepoSummary]:
        """GGUF repositories whose id contains `query` (text or owner/name), most downloaded first."""
        self.check_online()
        params = {"search": query.strip(), "filter": "gguf", "sort": "downloads", "limit": limit,
                  "expand": _SEARCH_FIELDS}
        with hub_errors("search Hugging Face", reading_answer=True):
            response = get_session().get(
                f"{self.endpoint}/api/models", params=params, headers=self.headers(),
                timeout=self.timeouts.for_httpx(),
            )
            hf_raise_for_status(response)
            items = response.json()
            return [_summary(ModelInfo(**item)) for item in items[:limit] if _plausible_result(item)]

    def list_models(self, repo_id: str, revision: str | None = None) -> RepoListing:
        """The GGUF models in a repository, with sizes and checksums, split models as one."""
        self.check_online()
        api = HfApi(endpoint=self.endpoint, token=self.token)
        with hub_errors(f"list the files of {repo_id}", repo_id, reading_answer=True):
            info = api.model_info(
                repo_id, revision=revision, files_metadata=True, timeout=self.timeouts.for_httpx()
            )
            commit = info.sha if isinstance(info.sha, str) else revision or constants.DEFAULT_REVISION
            files = [file for sibling in info.siblings or [] if (file := _remote_file(sibling)) is not None]
        return RepoListing(repo_id, commit, bool(info.gated), tuple(group_models(repo_id, commit, files)))

    def find_model(self, repo_id: str, *, file: str | None = None, quant: str | None = None) -> RemoteModel:
        """One model of a repository, picked by file name (any part) or by quantization.

        With neither, the repository must hold exactly one model. With a quant that several
        models share, the smallest is taken.
        """
        models = self.list_models(repo_id).models
        if not models:
            raise RepoNotFound(f"{repo_id} has no GGUF model files.")
        if file is not None:
            chosen = [m for m in models if any(file in (p.name, p.path) for p in m.parts)]
            problem = f"{repo_id} has no file named {file}."
        elif quant is not None:
            chosen = [m for m in models if m.quant == quant.upper()]
            problem = f"{repo_id} has no {quant.upper()} model."
        else:
            chosen = list(models) if len(models) == 1 else []
            problem = f"{repo_id} holds several models; choose one by file name or quantization."
        if not chosen:
            raise RepoNotFound(f"{problem} It has: {_some_models(models)}.")
        return chosen[0]


def memory_fit(file_size: int, vram_bytes: int | None = None) -> MemoryFit:
    """Whether a model file of this size fits this machine's free RAM, and the given VRAM.

    RAM is judged against what is available now (psutil's `available`: free plus what the
    OS would give back without swapping), since that is what a load is about to get.
    """
    needed = max(int(file_size * MEMORY_OVERHEAD_FACTOR), file_size + MEMORY_OVERHEAD_MIN)
    return MemoryFit(
        needed_bytes=needed,
        fits_ram=needed <= psutil.virtual_memory().available,
        fits_vram=None if vram_bytes is None else needed <= vram_bytes,
    )


def _remote_file(sibling) -> RemoteFile | None:
    """One entry of a listing as a RemoteFile; None for an entry no download could use.

    A listing is the server's word: a name that is not text or a size that is not a whole
    number of bytes leaves that entry out, and a checksum that is not one counts as none.
    """
    lfs = sibling.lfs
    size = lfs.size if lfs else sibling.size if sibling.size is not None else 0
    if not isinstance(sibling.rfilename, str) or type(size) is not int or size < 0:
        return None
    sha256 = lfs.sha256 if lfs else None
    return RemoteFile(
        path=sibling.rfilename,
        size=size,
        sha256=sha256.lower() if isinstance(sha256, str) and _SHA256.match(sha256.lower()) else None,
        git_sha1=sibling.blob_id if isinstance(sibling.blob_id, str) and _GIT_SHA1.match(sibling.blob_id) else None,
    )


def _some_models(models: tuple[RemoteModel, ...]) -> str:
    """The first few models as "NAME (QUANT)", and how many more: a listing can be huge."""
    named = ", ".join(f"{m.name} ({m.quant})" for m in models[:_MODELS_NAMED])
    more = len(models) - _MODELS_NAMED
    return f"{named} and {more} more" if more > 0 else named


def _plausible_result(item) -> bool:
    """Whether a search result names a repository at all; one that does not is left out."""
    repo_id = item.get("id") if isinstance(item, dict) else None
    return isinstance(repo_id, str) and 0 < len(repo_id) <= _MAX_REPO_ID and repo_id.isprintable()


def _summary(info: ModelInfo) -> RepoSummary:
    """A search result; counts that are not whole numbers count as 0 (the table formats them)."""
    return RepoSummary(
        repo_id=info.id,
        downloads=_count(info.downloads),
        likes=_count(info.likes),
        last_modified=info.last_modified if isinstance(info.last_modified, datetime) else None,
        gated=bool(info.gated),
        private=bool(info.private),
    )


def _count(value) -> int:
    return value if type(value) is int and value >= 0 else 0
