"""What can go wrong talking to Hugging Face, in words for the person using Hearth.

huggingface_hub and httpx2 raise a dozen exception types whose messages are written for
developers (URLs, request ids, "make sure you specified the correct repo_type"). Everything
in `app.library` raises a `HubError` subclass instead, whose `str()` is one or two plain
sentences the GUI can show as is and the CLI prints on one line. `hub_errors()` is the one
place that translates: every exception the HTTP client or huggingface_hub can raise (a
redirect loop, a body that does not decode, a URL it refuses), and, where an answer is being
read, every sign that the answer is not what Hugging Face sends.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx2
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

_log = logging.getLogger(__name__)
_DETAIL_CHARS = 160  # of an exception's own text quoted in a message

OFFLINE_MESSAGE = (
    "Hearth is in offline mode (HF_HUB_OFFLINE is set), so it cannot reach Hugging Face. "
    "Unset HF_HUB_OFFLINE to search and download models."
)


class HubError(Exception):
    """Base of every error in app.library; the message is written for the user."""


class HubUnavailable(HubError):
    """Hugging Face cannot be reached: offline mode, no network, or a server error."""


class HubTimeout(HubUnavailable):
    """The server accepted the request and then stopped sending."""


class RepoNotFound(HubError):
    """No such repository, revision or file, or no GGUF model in it."""


class GatedRepo(HubError):
    """The repository is gated or private; an access token may open it."""

    def __init__(self, message: str, repo_id: str):
        super().__init__(message)
        self.repo_id = repo_id


class IntegrityError(HubError):
    """A downloaded file does not match the checksum Hugging Face publishes for it."""

    def __init__(self, message: str, quarantined: Path):
        super().__init__(message)
        self.quarantined = quarantined


class DownloadCancelled(HubError):
    """The user cancelled the download."""

    def __init__(self, message: str, kept_partial: bool):
        super().__init__(message)
        self.kept_partial = kept_partial


class WrongContent(HubError):
    """The server answered a download with something else than the file (a web page, say)."""


class NotEnoughSpace(HubError):
    """The target folder's disk cannot hold the model."""


# What reading an answer of the wrong shape raises: bad JSON or text encoding, a list where
# an object belongs, a missing or mistyped field, a date that is not one.
_MALFORMED_ANSWER = (ValueError, TypeError, KeyError, AttributeError)


@contextmanager
def hub_errors(action: str, repo_id: str | None = None, *, reading_answer: bool = False) -> Iterator[None]:
    """Turn huggingface_hub and httpx2 exceptions raised inside into HubErrors.

    `action` completes "Could not ...", e.g. "search Hugging Face" or "download X".
    `reading_answer` is for blocks that parse what the server sent (search results, a
    repository's listing): there a malformed answer is the server's fault, not a bug, so the
    exceptions parsing raises are translated too (and logged, in case they were a bug).
    """
    try:
        yield
    except HubError:
        raise
    except OfflineModeIsEnabled:
        raise HubUnavailable(OFFLINE_MESSAGE) from None
    except HFValidationError:
        raise RepoNotFound(f"{repo_id!r} is not a Hugging Face repository name; write it as OWNER/NAME.") from None
    except HfHubHTTPError as exc:
        raise _http_error(exc, action, repo_id) from None
    except httpx2.TimeoutException as exc:
        raise HubTimeout(f"Could not {action}: {_timeout_reason(exc)}") from None
    except httpx2.TooManyRedirects:
        raise HubUnavailable(
            f"Could not {action}: the server kept redirecting the request in a loop. "
            "Check HF_ENDPOINT and any proxy, or try again later."
        ) from None
    except httpx2.TransportError as exc:
        raise HubUnavailable(
            f"Could not {action}: Hugging Face cannot be reached ({one_line(exc)}). "
            "Check the network connection."
        ) from None
    except (httpx2.HTTPError, httpx2.InvalidURL, httpx2.StreamError) as exc:
        raise HubUnavailable(f"Could not {action}: the answer could not be read ({one_line(exc)}).") from None
    except _MALFORMED_ANSWER as exc:
        if not reading_answer:
            raise
        _log.info("unexpected answer while trying to %s", action, exc_info=exc)
        raise HubUnavailable(
            f"Could not {action}: the answer did not come from Hugging Face (a network login page?)."
        ) from None


def one_line(exc: BaseException) -> str:
    """An exception's text for a message: its first line, shortened, or else its type."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS - 1] + "…"


def _timeout_reason(exc: httpx2.TimeoutException) -> str:
    if isinstance(exc, httpx2.ConnectTimeout):
        return "Hugging Face did not accept the connection in time. Check the network connection."
    return "Hugging Face stopped sending data and the request timed out. Try again later."


def _http_error(exc: HfHubHTTPError, action: str, repo_id: str | None) -> HubError:
    status = exc.response.status_code if exc.response is not None else None
    name = repo_id or "this repository"
    token_hint = "If you have access, enter a Hugging Face access token and try again."
    if isinstance(exc, GatedRepoError):
        if status == 403:
            return GatedRepo(
                f"{name} is gated and your access token is not on its list of approved users. "
                f"Request access at huggingface.co/{name}, then try again.",
                name,
            )
        return GatedRepo(
            f"{name} is gated: Hugging Face asks you to accept its licence and sign in. "
            f"Accept the terms at huggingface.co/{name}, then enter an access token.",
            name,
        )
    if isinstance(exc, RepositoryNotFoundError) or status == 401:
        return GatedRepo(
            f"Could not {action}: {name} does not exist, or it is private or gated. {token_hint}", name
        )
    if status == 403:
        return GatedRepo(f"Could not {action}: access to {name} is denied. {token_hint}", name)
    if isinstance(exc, (RevisionNotFoundError, RemoteEntryNotFoundError)) or status == 404:
        return RepoNotFound(f"Could not {action}: Hugging Face has no such file or revision in {name}.")
    if status is not None and status >= 500:
        return HubUnavailable(
            f"Could not {action}: Hugging Face answered with a server error (HTTP {status}). Try again later."
        )
    return HubError(f"Could not {action}: Hugging Face answered with HTTP {status}.")
