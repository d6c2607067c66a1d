"""A local stand-in for the part of huggingface.co that huggingface_hub 2.4.0 talks to.

It speaks the real wire format, read from huggingface_hub's source, so the code under test
runs through huggingface_hub itself:

* `GET /api/models?search=&filter=gguf&limit=&expand=` — search, most downloaded first.
* `GET /api/models/{repo}[/revision/{rev}]?blobs=true` — repo info; `siblings` carry
  `size`, `blobId` and `lfs: {sha256, size, pointerSize}`.
* `HEAD|GET /{repo}/resolve/{rev}/{path}` — what `hf_hub_url` points at. A git file is
  served here with `ETag` (its blob id). An LFS file answers `302` with `X-Repo-Commit`,
  `X-Linked-Etag` (the sha256), `X-Linked-Size` and a `Location` on another host
  (`localhost` instead of `127.0.0.1`), as the real Hub redirects to its CDN: huggingface_hub
  stops a HEAD there and a GET follows it without the Authorization header.
* Errors carry `X-Error-Code` (`GatedRepo`, `RepoNotFound`, `RevisionNotFound`,
  `EntryNotFound`) and `X-Error-Message`, which `hf_raise_for_status` maps to its exceptions.
* File bodies honour `Range: bytes=N-` with `206 Partial Content` and `Content-Range`.

Behaviours a test switches on: gated and private repos (401 without a token, 403 with the
wrong one), a corrupted file (bytes differ from the advertised sha256), an interruption
(the connection closes after N bytes, as often as asked), a stall (the server goes quiet),
a slow body or a trickle (a few bytes at a time), a server that ignores Range, a redirect
loop (for a file, or for the whole API), other bytes served with status 200 instead of the
file (an HTML error page), a body labelled with an encoding it is not in, a stalled API and
an API that answers with something else than JSON. Every request is recorded for assertions.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

GOOD_TOKEN = "hf_fake_token_with_access"
QWEN_REPO = "Qwen/Qwen3-0.6B-GGUF"  # the sample repository the tests fill (conftest.qwen)
_STALL_LIMIT_S = 30  # a stalled handler gives up after this, or when the server stops


@dataclass
class FakeFile:
    data: bytes
    lfs: bool = True
    corrupt: bool = False  # serve other bytes than the ones whose sha256 is advertised
    interrupt_after: int | None = None  # close the connection after this many body bytes...
    interruptions: int = 1  # ...this many times, then serve normally
    stall_after: int | None = None  # send this many body bytes, then nothing
    bytes_per_second: int | None = None
    piece_size: int = 4096  # bytes per write; 1 with a low bytes_per_second is a trickle
    ignore_range: bool = False  # answer 200 with the whole file, as some proxies do
    redirect_loop: bool = False  # its URL redirects to itself
    served_instead: bytes | None = None  # sent with status 200 in place of the file (a web page)
    content_type: str = "application/octet-stream"
    content_encoding: str | None = None  # claimed, not applied: the body does not decode

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def git_sha1(self) -> str:
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()

    def served_bytes(self) -> bytes:
        if self.served_instead is not None:
            return self.served_instead
        if not self.corrupt:
            return self.data
        middle = len(self.data) // 2  # past the header, which a download checks as it arrives
        return self.data[:middle] + bytes([self.data[middle] ^ 0xFF]) + self.data[middle + 1:]


@dataclass
class FakeRepo:
    repo_id: str
    files: dict[str, FakeFile]
    sha: str
    gated: bool = False
    private: bool = False
    downloads: int = 0
    likes: int = 0
    last_modified: str = "2025-05-01T12:00:00.000Z"
    tags: list[str] = field(default_factory=lambda: ["gguf"])


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    host: str
    authorization: str | None


class FakeHub:
    """The server and its state; start() and stop() it, or use it as a context manager."""

    def __init__(self):
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[RecordedRequest] = []
        self.served: list[tuple[str, str | None]] = []  # (file path, Range header) per body sent
        self.stall_api = False
        self.redirect_api = False  # every API URL redirects to itself
        self.api_answer: bytes | None = None  # sent with status 200 for every API request
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.hub = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-hub", daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdn_url(self) -> str:
        return f"http://localhost:{self.port}"

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def add_repo(self, repo_id: str, files: dict[str, bytes | FakeFile], **options) -> FakeRepo:
        wrapped = {path: f if isinstance(f, FakeFile) else FakeFile(f) for path, f in files.items()}
        sha = hashlib.sha1(repo_id.encode()).hexdigest()
        repo = FakeRepo(repo_id, wrapped, sha, **options)
        self.repos[repo_id] = repo
        return repo

    def body_requests(self, path: str) -> list[str | None]:
        """The Range header of every request that was sent a file's bytes, in order."""
        with self._lock:
            return [range_ for served, range_ in self.served if served == path]

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def record_body(self, path: str, range_: str | None) -> None:
        with self._lock:
            self.served.append((path, range_))

    def wait_or_stop(self, seconds: float) -> bool:
        """Sleep, waking early when the server stops; True if it is stopping."""
        return self._stopping.wait(seconds)


_REPO_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+?)(?:/revision/(?P<rev>[^/]+))?$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$", re.DOTALL)
_CDN = re.compile(r"^/cdn/(?P<repo>[^/]+/[^/]+)/(?P<path>.+)$", re.DOTALL)
_RANGE = re.compile(r"^bytes=(?P<start>\d+)-$")  # all huggingface_hub and Hearth ask for


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1.0"

    @property
    def hub(self) -> FakeHub:
        return self.server.hub

    def log_message(self, format, *args) -> None:  # keep test output clean
        pass

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    # -- routing -------------------------------------------------------------------------

    def _route(self, head: bool) -> None:
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        query = parse_qs(parts.query)
        self.hub.record(RecordedRequest(
            self.command, path, query, self.headers.get("Host", ""), self.headers.get("Authorization"),
        ))
        try:
            if path.startswith("/api/") and self.hub.stall_api:
                self.hub.wait_or_stop(_STALL_LIMIT_S)
                self.close_connection = True
            elif path.startswith("/api/") and self.hub.redirect_api:
                self._redirect_to(self.path)
            elif path.startswith("/api/") and self.hub.api_answer is not None:
                self._answer(200, self.hub.api_answer, "application/json")
            elif path == "/api/models":
                self._search(query)
            elif match := _REPO_INFO.match(path):
                self._repo_info(match["repo"], match["rev"], query)
            elif match := _RESOLVE.match(path):
                self._resolve(match["repo"], match["rev"], match["path"], head)
            elif match := _CDN.match(path):
                repo = self.hub.repos[match["repo"]]
                self._serve_file(repo, match["path"], head)
            else:
                self._error(404, "NotFound", "Not Found")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (a pause or a cancel)

    # -- API -----------------------------------------------------------------------------

    def _search(self, query: dict[str, list[str]]) -> None:
        text = query.get("search", [""])[0].lower()
        filters = query.get("filter", [])
        limit = int(query.get("limit", ["1000"])[0])
        fields = query.get("expand", []) or ["downloads", "likes", "lastModified", "gated", "private"]
        authorized = self._has_good_token()
        found = [
            repo for repo in self.hub.repos.values()
            if text in repo.repo_id.lower()
            and all(tag in repo.tags for tag in filters)
            and (authorized or not repo.private)
        ]
        found.sort(key=lambda repo: repo.downloads, reverse=True)
        items = []
        for repo in found[:limit]:
            full = {"id": repo.repo_id, "_id": repo.sha[:24], "downloads": repo.downloads, "likes": repo.likes,
                    "lastModified": repo.last_modified, "gated": "manual" if repo.gated else False,
                    "private": repo.private, "tags": repo.tags}
            items.append({key: value for key, value in full.items() if key in ("id", "_id", *fields)})
        self._json(200, items)

    def _repo_info(self, repo_id: str, revision: str | None, query: dict[str, list[str]]) -> None:
        repo = self._repo_or_error(repo_id, for_content=False)
        if repo is None or not self._revision_ok(repo, revision):
            return
        blobs = query.get("blobs", ["false"])[0].lower() in ("1", "true")
        siblings = []
        for path, file in repo.files.items():
            sibling = {"rfilename": path}
            if blobs:
                sibling.update(size=len(file.data), blobId=file.git_sha1)
                if file.lfs:
                    sibling["lfs"] = {"sha256": file.sha256, "size": len(file.data), "pointerSize": 134}
            siblings.append(sibling)
        self._json(200, {
            "_id": repo.sha[:24], "id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.sha,
            "lastModified": repo.last_modified, "private": repo.private,
            "gated": "manual" if repo.gated else False, "disabled": False,
            "downloads": repo.downloads, "likes": repo.likes, "tags": repo.tags,
            "library_name": "gguf", "siblings": siblings,
        })

    # -- files ---------------------------------------------------------------------------

    def _resolve(self, repo_id: str, revision: str, path: str, head: bool) -> None:
        repo = self._repo_or_error(repo_id, for_content=True)
        if repo is None or not self._revision_ok(repo, revision):
            return
        file = repo.files.get(path)
        if file is None:
            self._error(404, "EntryNotFound", f"{path} does not exist on \"{revision}\"")
            return
        if file.redirect_loop:
            self._redirect_to(self.path)
            return
        if not file.lfs:
            self._serve_file(repo, path, head, etag=file.git_sha1)
            return
        self.send_response(302)
        self.send_header("Location", f"{self.hub.cdn_url}/cdn/{repo.repo_id}/{quote(path)}")
        self.send_header("X-Repo-Commit", repo.sha)
        self.send_header("X-Linked-Etag", f'"{file.sha256}"')
        self.send_header("X-Linked-Size", str(len(file.data)))
        self.send_header("ETag", f'"{file.git_sha1}"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _serve_file(self, repo: FakeRepo, path: str, head: bool, etag: str | None = None) -> None:
        file = repo.files[path]
        body = file.served_bytes()
        start, status = 0, 200
        requested = self.headers.get("Range")
        honours_range = not file.ignore_range and file.served_instead is None
        match = _RANGE.match(requested.strip()) if requested and honours_range else None
        if match:
            start = int(match["start"])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        payload = body[start:]
        if not head:  # recorded before answering: a client may act on the headers alone
            self.hub.record_body(path, requested)
        self.send_response(status)
        self.send_header("Content-Type", file.content_type)
        if file.content_encoding:
            self.send_header("Content-Encoding", file.content_encoding)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-Repo-Commit", repo.sha)
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("ETag", f'"{etag or file.sha256}"')
        self.end_headers()
        if not head:
            self._send_body(file, payload)

    def _send_body(self, file: FakeFile, payload: bytes) -> None:
        limit = len(payload)
        interrupt = file.interrupt_after is not None and file.interruptions > 0
        if interrupt:
            file.interruptions -= 1
            limit = min(limit, file.interrupt_after)
        if file.stall_after is not None:
            limit = min(limit, file.stall_after)
        piece = file.piece_size
        for offset in range(0, limit, piece):
            self.wfile.write(payload[offset:min(offset + piece, limit)])
            if file.bytes_per_second and self.hub.wait_or_stop(piece / file.bytes_per_second):
                break
        self.wfile.flush()
        if file.stall_after is not None and limit < len(payload):
            self.hub.wait_or_stop(_STALL_LIMIT_S)
        if limit < len(payload):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- access --------------------------------------------------------------------------

    def _has_good_token(self) -> bool:
        return self.headers.get("Authorization") == f"Bearer {GOOD_TOKEN}"

    def _repo_or_error(self, repo_id: str, for_content: bool) -> FakeRepo | None:
        """The repo, or None after answering as the Hub does to who may not see it."""
        repo = self.hub.repos.get(repo_id)
        authorized = self._has_good_token()
        if repo is None or (repo.private and not authorized):
            # The Hub does not tell "missing" from "private" to a client without access.
            if self.headers.get("Authorization"):
                self._error(404, "RepoNotFound", "Repository not found")
            else:
                self._error(401, "RepoNotFound", "Invalid username or password.")
            return None
        if repo.gated and for_content and not authorized:
            if self.headers.get("Authorization"):
                self._error(403, "GatedRepo", f"Access to model {repo_id} is restricted and you are not in the "
                            f"authorized list. Visit https://huggingface.co/{repo_id} to ask for access.")
            else:
                self._error(401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access to "
                            "it and be authenticated to access it. Please log in.")
            return None
        return repo

    def _revision_ok(self, repo: FakeRepo, revision: str | None) -> bool:
        if revision in (None, "main", repo.sha):
            return True
        self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return False

    # -- answers -------------------------------------------------------------------------

    def _json(self, status: int, payload, headers: dict[str, str] | None = None) -> None:
        self._answer(status, json.dumps(payload).encode(), "application/json; charset=utf-8", headers)

    def _answer(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _redirect_to(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _error(self, status: int, code: str, message: str) -> None:
        self._json(status, {"error": message}, {"X-Error-Code": code, "X-Error-Message": message})


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll for a condition another thread brings about; False if it never came."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
