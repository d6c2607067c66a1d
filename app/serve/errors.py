"""OpenAI's error shape, `{"error": {"message", "type", "param", "code"}}`, and its statuses.

Clients written for OpenAI (its own SDKs, editors, agents) read `error.message` to tell their
user what went wrong and branch on the status, so every refusal the server makes is one
`ApiError`: the status it is sent with and the four fields, named as OpenAI names them.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

INVALID = "invalid_request_error"


class ApiError(Exception):
    """A request the server refuses; `response()` is what the client gets."""

    def __init__(self, status: int, message: str, kind: str = INVALID, param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def bad_request(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    """400: malformed JSON, a missing or mistyped field, a value out of range, a template that fails."""
    return ApiError(400, message, param=param, code=code)


def missing_key() -> ApiError:
    return ApiError(401, "This server needs an API key: send it as 'Authorization: Bearer KEY'.",
                    code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})


def wrong_key() -> ApiError:
    return ApiError(401, "Incorrect API key provided.", code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})


def unknown_model(model: str, served: str) -> ApiError:
    return ApiError(404, f"The model {model!r} does not exist here; this server serves {served!r}.",
                    param="model", code="model_not_found")


def not_found(path: str) -> ApiError:
    return ApiError(404, f"There is nothing at {path!r}. The endpoints are /v1/models, "
                         "/v1/chat/completions, /v1/completions and /v1/responses.", code="not_found")


def method_not_allowed(method: str, path: str) -> ApiError:
    return ApiError(405, f"{path} does not take {method} requests.", code="method_not_allowed")


def too_large(limit: int) -> ApiError:
    return ApiError(413, f"The request body is larger than this server accepts ({limit // 2**20} MiB).",
                    code="request_too_large")


def queue_full(waiting: int) -> ApiError:
    """429, as OpenAI names a rate limit. Retry-After: a reply takes seconds, so try again soon."""
    return ApiError(429, f"The model is busy: {waiting} request{'s' if waiting != 1 else ''} already "
                         "waiting, which is as many as this server queues. Try again shortly.",
                    kind="requests", code="rate_limit_exceeded", headers={"Retry-After": "1"})


def unavailable(message: str) -> ApiError:
    return ApiError(503, message, kind="server_error", code="unavailable")


def server_error(message: str) -> ApiError:
    return ApiError(500, message, kind="server_error")
