"""What went wrong talking to a remote server, sorted by cause, in words a user can act on.

Every failure of a remote model, whether it stops a request from starting or cuts a reply
short, becomes one `RemoteError` whose `failure` says which cause it was (the GUI can react to
a rate limit differently from a wrong key) and whose message says what to do. httpx reports
transport failures as a few broad exceptions; the cause (refused, no such host, a certificate)
is in the OSError or SSLError underneath, so it is read from there.

A server's own words (error bodies, model ids) are foreign text: they are quoted through
`text.shorten`, one line and short, never as they came.
"""

from __future__ import annotations

import email.utils
import json
import socket
import ssl
import time
from enum import Enum
from typing import TYPE_CHECKING

from ...common.text import shorten

if TYPE_CHECKING:  # httpx is imported where a request is made, not where this error is caught
    import httpx

MAX_QUOTE = 200  # characters of a server's error message quoted to the user


class RemoteFailure(str, Enum):
    """Why a request to a server failed, in the order a connection meets them."""

    DNS = "dns"  # the host name does not resolve
    REFUSED = "refused"  # nothing listens at that address and port
    CONNECT_TIMEOUT = "connect_timeout"  # the host does not answer
    TLS = "tls"  # the secure connection failed (a certificate, or https to an http server)
    NETWORK = "network"  # another transport failure (reset, proxy)
    AUTH = "auth"  # 401/403: a missing or wrong API key
    NOT_FOUND = "not_found"  # 404 on the address itself: the base URL is wrong
    UNKNOWN_MODEL = "unknown_model"  # 404 for the model, or a model the server does not list
    RATE_LIMITED = "rate_limited"  # 429, with the server's Retry-After when it sends one
    REJECTED = "rejected"  # another 4xx: the server refused the request, and says why
    SERVER_ERROR = "server_error"  # 5xx
    STALLED = "stalled"  # the server stopped sending for longer than the read timeout
    CUT = "cut"  # the stream ended before the reply did
    BAD_RESPONSE = "bad_response"  # not the OpenAI shape (not JSON, not server-sent events)


class RemoteError(Exception):
    """A request to a server failed; str() is the message for the user."""

    def __init__(
        self,
        failure: RemoteFailure,
        message: str,
        status: int | None = None,
        retry_after_s: float | None = None,
        server_message: str | None = None,
    ):
        super().__init__(message)
        self.failure = failure
        self.status = status  # the HTTP status, where the server answered
        self.retry_after_s = retry_after_s  # a rate limit's wait, when the server said
        self.server_message = server_message  # the server's own words, already shortened


def transport_error(exc: httpx.HTTPError, where: str) -> RemoteError:
    """The RemoteError for a request that got no HTTP answer (a failure below HTTP, mostly):
    `where` names the server ("Lab box (http://gpu:8000/v1)")."""
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return RemoteError(RemoteFailure.CONNECT_TIMEOUT, f"{where} did not answer: the connection timed out. "
                           "Check the address, and that the machine is on and reachable.")
    if isinstance(exc, httpx.ReadTimeout):
        return stalled(where)
    if isinstance(exc, httpx.TimeoutException):
        return RemoteError(RemoteFailure.STALLED, f"{where} timed out: {shorten(str(exc) or type(exc).__name__)}.")
    causes = _chain(exc)
    if cause := _first(causes, socket.gaierror):
        return RemoteError(RemoteFailure.DNS, f"Could not find {where}: the host name does not resolve. "
                           "Check the address, or your network connection.")
    if cause := _first(causes, ConnectionRefusedError):
        return RemoteError(RemoteFailure.REFUSED, f"{where} refused the connection: no server is listening "
                           "at that address and port. Is the server running?")
    if cause := _first(causes, ssl.SSLCertVerificationError):
        return RemoteError(RemoteFailure.TLS, f"{where}'s certificate is not trusted "
                           f"({shorten(cause.verify_message or str(cause))}).")
    if cause := _first(causes, ssl.SSLError):
        return RemoteError(RemoteFailure.TLS, f"The secure connection to {where} failed ({shorten(str(cause))}). "
                           "If the server does not use TLS, its address starts with http://, not https://.")
    if isinstance(exc, httpx.RemoteProtocolError):
        return cut(where, before_reply=True)
    return RemoteError(RemoteFailure.NETWORK, f"The connection to {where} failed: {shorten(str(exc) or type(exc).__name__)}.")


def stalled(where: str, mid_reply: bool = False) -> RemoteError:
    outcome = "the reply is cut short" if mid_reply else "the request was abandoned"
    return RemoteError(RemoteFailure.STALLED, f"{where} stopped responding: nothing arrived within the "
                       f"time Hearth waits, so {outcome}.")


def cut(where: str, before_reply: bool = False) -> RemoteError:
    if before_reply:
        return RemoteError(RemoteFailure.CUT, f"{where} closed the connection without answering.")
    return RemoteError(RemoteFailure.CUT, f"{where} closed the stream before the reply ended: "
                       "the reply is cut short.")


def bad_response(where: str, what: str) -> RemoteError:
    return RemoteError(RemoteFailure.BAD_RESPONSE, f"{where} sent something that is not an OpenAI-compatible "
                       f"answer ({what}).")


def status_error(response: httpx.Response, where: str, body: str, model_id: str | None = None) -> RemoteError:
    """The RemoteError for an HTTP error status, `body` the start of its body. `model_id`: the
    model the request named (a 404 then means that model), None for a request about the server
    itself."""
    status = response.status_code
    said = server_message(body, response.headers.get("content-type", ""))
    quoted = f" The server said: {said}" if said else ""
    if status in (401, 403):
        return RemoteError(RemoteFailure.AUTH, f"{where} refused the API key ({status}): the key is missing, "
                           f"wrong, or not allowed to do this.{quoted}", status, server_message=said)
    if status == 404 and model_id is not None:
        return RemoteError(RemoteFailure.UNKNOWN_MODEL, f"{where} has no model “{shorten(model_id)}” (404)."
                           f"{quoted}", status, server_message=said)
    if status == 404:
        return RemoteError(RemoteFailure.NOT_FOUND, f"{where} has nothing at {shorten(str(response.url.path))} "
                           "(404): check the address (OpenAI-compatible servers usually end it in /v1).",
                           status, server_message=said)
    if status == 429:
        wait = retry_after(response.headers.get("retry-after"))
        when = f"try again in {_seconds(wait)}" if wait is not None else "try again later"
        return RemoteError(RemoteFailure.RATE_LIMITED, f"{where} is limiting requests (429): {when}.{quoted}",
                           status, retry_after_s=wait, server_message=said)
    if 300 <= status < 400:
        target = shorten(response.headers.get("location", ""), 120) or "another address"
        return RemoteError(RemoteFailure.NOT_FOUND, f"{where} redirects to {target} ({status}): use that "
                           "address instead.", status)
    if status >= 500:
        return RemoteError(RemoteFailure.SERVER_ERROR, f"{where} failed with an internal error ({status}).{quoted}",
                           status, server_message=said)
    return RemoteError(RemoteFailure.REJECTED, f"{where} refused the request ({status}).{quoted}",
                       status, server_message=said)


def server_message(text: str, content_type: str = "") -> str | None:
    """The server's explanation in an error body: OpenAI's {"error": {"message"}} shape,
    FastAPI's {"detail"}, or plain text (not an HTML page); shortened, as foreign text."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    said = error_text(data) if data is not None else None
    if said is None and text.strip() and "html" not in content_type and not text.lstrip().startswith("<"):
        said = text
    return shorten(said, MAX_QUOTE) if said and said.strip() else None


def error_text(data) -> str | None:
    """The message in an OpenAI-style error object (also how servers report a failure inside
    a stream), or None if `data` is not one."""
    if not isinstance(data, dict):
        return None
    error = data.get("error", data.get("detail"))
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, list) and error and isinstance(error[0], dict):  # FastAPI's validation errors
        error = error[0].get("msg")
    return error if isinstance(error, str) else None


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if seconds == seconds and seconds < 1e9 else None


def _seconds(wait: float) -> str:
    if wait < 90:
        return f"{wait:.0f} s"
    return f"{wait / 60:.0f} min"


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and those it was raised from: httpx wraps httpcore's, which wraps the
    OSError or SSLError that names the cause."""
    chain: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def _first(chain: list[BaseException], kind: type[BaseException]):
    return next((exc for exc in chain if isinstance(exc, kind)), None)
