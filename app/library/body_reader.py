"""Reading one GET's body on a thread of its own, and giving up on a server that trickles.

Why a module of its own: this is the part of a download that faces the network's timing —
a response read where a stuck server cannot block Pause, Cancel or progress, and a watch on
the bytes per window that ends a download too slow to finish. The download loop
(`downloads`) decides what to do with the chunks; this module only delivers them on time.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import httpx2
from huggingface_hub.utils import get_session, hf_raise_for_status

from app.common.units import byte_size
from app.library.errors import HubTimeout
from app.library.quants import RemoteFile

# The longest the download loop waits for bytes before it looks at Pause and Cancel again,
# reports progress and checks the pace.
TICK_S = 0.25
_READ_AHEAD = 32  # chunks the reading thread may get ahead of the writing one


@dataclass(frozen=True)
class Head:
    """What a GET's answer says before its body."""

    status: int
    content_type: str


END = object()  # the body is complete


class BodyReader:
    """One GET, read on a thread of its own and handed over a chunk at a time.

    Why a thread: a read blocks until bytes come or the read timeout ends it, and a server
    that trickles a byte every few seconds never lets the timeout end it. The download loop
    instead waits for the next chunk at most TICK_S, so it obeys Pause and Cancel, reports
    progress and measures the pace every tick, whatever the server does. The response
    belongs to this thread alone; once the loop stops listening (`stop`), the thread closes
    it at its next chunk, or when the read timeout ends its wait.
    """

    def __init__(self, url: str, headers: dict[str, str], timeout: httpx2.Timeout):
        self._items: queue.Queue = queue.Queue(maxsize=_READ_AHEAD)
        self._stopped = threading.Event()
        threading.Thread(target=self._read, args=(url, headers, timeout), name="hearth-download-read",
                         daemon=True).start()

    def next(self, wait: float):
        """A Head, then bytes, then END; None if nothing came within `wait` seconds.
        Raises what the request raised."""
        try:
            item = self._items.get(timeout=wait)
        except queue.Empty:
            return None
        if isinstance(item, BaseException):
            raise item
        return item

    def stop(self) -> None:
        self._stopped.set()

    def _read(self, url: str, headers: dict[str, str], timeout: httpx2.Timeout) -> None:
        try:
            with get_session().stream("GET", url, headers=headers, timeout=timeout,
                                      follow_redirects=True) as response:
                hf_raise_for_status(response)
                if not self._hand_over(Head(response.status_code, response.headers.get("content-type", ""))):
                    return
                for chunk in response.iter_bytes():  # whatever each read brought, however little
                    if not self._hand_over(chunk):
                        return
            self._hand_over(END)
        except Exception as exc:  # raised again on the download loop's thread
            self._hand_over(exc)

    def _hand_over(self, item) -> bool:
        """Queue `item` for the download loop; False once it stopped listening."""
        while not self._stopped.is_set():
            try:
                self._items.put(item, timeout=TICK_S)
                return True
            except queue.Full:
                pass
        return False


class Pace:
    """Ends a download that receives too little for too long (Timeouts.slow_window).

    Counted in whole windows across reconnections, so a server that sends a byte and drops
    the connection, again and again, is caught too; time spent paused does not count.
    """

    def __init__(self, part: RemoteFile, window: float, least_bytes: int):
        self._part = part
        self._window = window
        self._least_bytes = least_bytes
        self.restart()

    def restart(self) -> None:
        self._since = time.monotonic()
        self._received = 0

    def add(self, nbytes: int) -> None:
        self._received += nbytes

    def check(self) -> None:
        elapsed = time.monotonic() - self._since
        if elapsed < self._window:
            return
        if self._received < self._least_bytes:
            seconds = f"{elapsed:.0f}" if elapsed >= 10 else f"{elapsed:.1f}"
            raise HubTimeout(
                f"Could not download {self._part.name}: the server sent only {byte_size(self._received, decimals=1)} "
                f"in the last {seconds} seconds, too slow to finish. What was downloaded is kept; "
                "try again later."
            )
        self.restart()
