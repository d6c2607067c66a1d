"""CORS: which web pages a browser lets call the server. Off unless the user lists origins.

A browser sends a page's cross-site request only after a preflight (`OPTIONS` with `Origin` and
`Access-Control-Request-Method`) that the server answers with `Access-Control-Allow-Origin`, and
lets the page read a reply only when it carries that header too. Without origins the app has no
CORS layer at all: a preflight is a 405 like any OPTIONS, and no reply carries a CORS header, so
no page on any site can read a reply through a visitor's browser.

With origins (`hearth serve --cors-origin ORIGIN`, repeatable, or the window's Serve dialog;
checked by serve/origins.py), each is matched exactly as the browser sends it,
`scheme://host[:port]`; `*` lets every page of every site call the server and
is only ever that when given as `*` itself. Origins are not patterns: a page elsewhere gets no
CORS header, its preflight a 403. `null` (what file:// pages and sandboxed frames send) is
refused as an origin: any site can make its page send it.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response

from .errors import ApiError
from .origins import ANY

METHODS = ("GET", "POST")


def cors_middleware(origins: Sequence[str]) -> list[Middleware]:
    """The app's CORS layer for `origins` (checked by origins.check_origins): none without any.

    Any request header is allowed (clients send their own, such as the OpenAI SDKs'
    x-stainless-*), and so is a private-network preflight: a listed page that is public
    (https://app.example) calling this machine's loopback is what the user listed it for.
    No credentials: the API key travels in Authorization, never in cookies."""
    if not origins:
        return []
    return [Middleware(ListedOrigins, allow_origins=list(origins), allow_methods=METHODS, allow_headers=[ANY],
                       allow_private_network=True)]


class ListedOrigins(CORSMiddleware):
    """Starlette's CORSMiddleware, except for a preflight from an origin not listed: Starlette
    answers it 400 with the allowed methods and max-age, CORS headers a page elsewhere has no
    business getting; here it gets a 403 in OpenAI's error shape and no CORS header at all."""

    def preflight_response(self, request_headers: Headers) -> Response:
        origin = request_headers["origin"]
        if self.is_allowed_origin(origin):
            return super().preflight_response(request_headers)
        refused = ApiError(403, f"Web pages from {origin!r} may not call this server: its CORS origins "
                                "do not list it.", code="origin_not_allowed", headers={"Vary": "Origin"})
        return refused.response()
