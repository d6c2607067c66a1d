"""The remote servers the user added, and the models each one offers.

`RemoteServers` is an owner object (it outlives any window): it keeps the saved servers in
`Settings` (name and address) and their API keys in the keyring (`library/server_keys.py`),
and lists each server's models (`GET /models`) on a thread of its own, never on the GUI
thread: a server that is slow, off or unreachable costs a row saying so, never a frozen window
or a slower start. Each answer comes back to the GUI thread as a queued signal carrying a typed
`ServerListing`; only the newest listing of a server counts, and one of a server removed
meanwhile is dropped.

The model list shows the listings beside the local files; choosing one asks this object for
the `RemoteModel` to load, which carries the server's key. The HTTP client (httpx) is imported
by the first listing, on its thread: the window starts without it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import QObject, Signal

from ..common.newest import NewestWins, Ticket
from ..common.text import shorten
from ..engine.remote.errors import RemoteError, RemoteFailure
from ..engine.types import RemoteModel, ServerConfig
from ..library import server_keys
from ..library.server_keys import KeySaved
from .settings import Settings

if TYPE_CHECKING:
    from ..engine.remote.models import RemoteModelInfo

# Listing is a small request: a server that has not answered by then is shown as unreachable
# (a reply's own timeouts, remote/http.py's defaults, are longer: a long prompt takes time).
LISTING_CONNECT_S, LISTING_READ_S = 5.0, 15.0


@dataclass(frozen=True)
class ServerListing:
    """One server's models as it listed them, or why it could not list them."""

    server: ServerConfig  # as saved: without its key
    models: tuple[RemoteModelInfo, ...] = ()
    error: str | None = None  # what went wrong, for the user (a RemoteError's message)
    failure: RemoteFailure | None = None  # its cause, where it was a RemoteError

    @property
    def reachable(self) -> bool:
        return self.error is None


def list_server(server: ServerConfig, key_from_keyring: bool = False) -> ServerListing:
    """List `server`'s models with the key it carries (or, `key_from_keyring`, the one kept for
    it); every failure becomes the listing's error, so a server always answers with a row.
    Blocks: run it off the GUI thread."""
    try:
        if key_from_keyring:
            server = _with_key(server)
        from ..engine.remote.http import RemoteTimeouts
        from ..engine.remote.models import list_models

        timeouts = RemoteTimeouts(connect=LISTING_CONNECT_S, read=LISTING_READ_S, write=LISTING_CONNECT_S)
        return ServerListing(_public(server), tuple(list_models(server, timeouts)))
    except RemoteError as exc:
        return ServerListing(_public(server), error=str(exc), failure=exc.failure)
    except Exception as exc:  # not a server's failure (a bug, a keyring error): still this server's row
        return ServerListing(_public(server), error=f"Listing the models of {server.name} failed: "
                                                    f"{shorten(str(exc) or type(exc).__name__)}")


def _public(server: ServerConfig) -> ServerConfig:
    return replace(server, api_key=None)


def _with_key(server: ServerConfig) -> ServerConfig:
    """The server with its key from the keyring (which may block a moment: a desktop's
    secret service answers over D-Bus)."""
    return replace(server, api_key=server_keys.load_key(server.base_url))


class _Answers(QObject):
    """Carries listings from their threads to the GUI thread: one for the whole application,
    made on the GUI thread and never deleted.

    A listing thread holds no reference to the RemoteServers that asked: when the last
    reference to one was dropped on a listing thread, Qt deleted it there, with its answer
    still queued to it, and the process crashed. The GUI thread keeps what to do with each
    answer (`_waiting`), so an asker is released where it lives.
    """

    arrived = Signal(int, object)

    def __init__(self) -> None:
        super().__init__()
        self._waiting: dict[int, Callable[[ServerListing], None]] = {}
        self._numbers = itertools.count(1)
        self.arrived.connect(self._deliver)  # queued: the receiver lives on the GUI thread

    def run(self, listing: Callable[[], ServerListing], deliver: Callable[[ServerListing], None]) -> None:
        """Call `listing()` on a daemon thread (a silent server never holds up quitting), then
        `deliver(answer)` on the GUI thread. Call from the GUI thread."""
        number = next(self._numbers)
        self._waiting[number] = deliver
        arrived = self.arrived
        threading.Thread(target=lambda: arrived.emit(number, listing()), name="hearth-server-listing",
                         daemon=True).start()

    def _deliver(self, number: int, answer: ServerListing) -> None:
        deliver = self._waiting.pop(number, None)
        if deliver is not None:
            deliver(answer)


_answers: _Answers | None = None


def _in_background(listing: Callable[[], ServerListing], deliver: Callable[[ServerListing], None]) -> None:
    global _answers
    if _answers is None:
        _answers = _Answers()
    _answers.run(listing, deliver)


class RemoteServers(QObject):
    """The saved servers and their listings.

    Signals:
        serversChanged(): a server was added or removed.
        listingStarted(): servers are being listed (`listing_count` says how many).
        listed(ServerListing): one server's models were listed, or its listing failed.
        checked(int, ServerListing): the answer to `check(server)`, by the number it returned.
    """

    serversChanged = Signal()
    listingStarted = Signal()
    listed = Signal(object)
    checked = Signal(int, object)

    def __init__(self, settings: Settings, parent: QObject | None = None):
        super().__init__(parent)
        self._settings = settings
        self._listings: dict[str, ServerListing] = {}  # by address: the newest answer of each
        self._requests: dict[str, NewestWins] = {}  # by address: the listing under way
        self._checks = itertools.count(1)

    # --- what is known -------------------------------------------------------------------------

    def servers(self) -> list[ServerConfig]:
        """The saved servers, in the order they were added (without their keys)."""
        return self._settings.servers

    def listings(self) -> list[ServerListing]:
        """The newest listing of each saved server that has answered, in the servers' order."""
        return [self._listings[server.base_url] for server in self.servers() if server.base_url in self._listings]

    @property
    def listing_count(self) -> int:
        """How many servers are being listed now."""
        return sum(requests.current is not None for requests in self._requests.values())

    def source(self, server: ServerConfig, model_id: str) -> RemoteModel:
        """The model to load: `server`'s model `model_id`, with the server's key from the keyring."""
        return RemoteModel(_with_key(server), model_id)

    # --- listing -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """List every saved server again, each on a thread of its own."""
        servers = self.servers()
        for server in servers:
            self._list(server)
        if servers:
            self.listingStarted.emit()

    def _list(self, server: ServerConfig) -> None:
        ticket = self._requests.setdefault(server.base_url, NewestWins()).begin()
        self._in_background(lambda: list_server(server, key_from_keyring=True), ticket)

    def check(self, server: ServerConfig) -> int:
        """List a server that is not saved yet (the Add server dialog's Test connection), with
        the key it carries; `checked(number, listing)` answers, with the number returned here."""
        number = next(self._checks)
        self._in_background(lambda: list_server(server), number)
        return number

    def _in_background(self, listing: Callable[[], ServerListing], request: Ticket | int) -> None:
        """Run `listing` on a thread of its own; its answer comes back on the GUI thread."""
        _in_background(listing, lambda answer: self._on_answered(request, answer)
                       if shiboken6.isValid(self) else None)

    def _on_answered(self, request: Ticket | int, listing: ServerListing) -> None:
        if isinstance(request, int):
            self.checked.emit(request, listing)
            return
        requests = self._requests.get(listing.server.base_url)
        if requests is None or not requests.finish(request):
            return  # removed meanwhile, or listed again since
        self._listings[listing.server.base_url] = listing
        self.listed.emit(listing)

    # --- adding and removing -------------------------------------------------------------------

    def add(self, server: ServerConfig) -> KeySaved | None:
        """Save the server (replacing one at the same address) with its key in the keyring (no
        key: any old one is forgotten), and list it. Returns where the key went, None without one."""
        saved = [known for known in self.servers() if known.base_url != server.base_url]
        existing = next((i for i, known in enumerate(self.servers()) if known.base_url == server.base_url), None)
        saved.insert(len(saved) if existing is None else existing, _public(server))
        self._settings.servers = saved
        if server.api_key:
            kept = server_keys.save_key(server.base_url, server.api_key)
        else:
            server_keys.forget_key(server.base_url)
            kept = None
        self._listings.pop(server.base_url, None)
        self.serversChanged.emit()
        self._list(_public(server))
        self.listingStarted.emit()
        return kept

    def remove(self, base_url: str) -> None:
        """Forget the server, its key and its listing (a model of it that is loaded stays loaded)."""
        self._settings.servers = [known for known in self.servers() if known.base_url != base_url]
        server_keys.forget_key(base_url)
        self._listings.pop(base_url, None)
        requests = self._requests.pop(base_url, None)
        if requests is not None:
            requests.cancel()
        self.serversChanged.emit()
