"""The router: path → route, and the checks every Brave request passes first (method, token, rate, quota).

Brave's search endpoints refuse a wrong method before looking at the token; its newer endpoints (routes with
``methods = None``) check the plan and the method themselves, after the token and the rate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from .auth import refuse
from .exchange import Exchange
from .plan import KeyRing, admit
from .reply import Reply


class Route(Protocol):
    """One endpoint family: the paths it serves and how it answers a request that passed the checks."""

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths this route answers."""

    @property
    def methods(self) -> frozenset[str] | None:
        """Methods allowed before the token is looked at (None: the route checks the method itself)."""

    @property
    def bearer(self) -> bool:
        """Whether the key may come as ``Authorization: Bearer``."""

    def answer(self, ex: Exchange) -> Reply:
        """The reply to a request with a valid key inside the plan's rate and quota."""


class Router:
    """Sends each request through the shared checks to the route of its path."""

    def __init__(self, routes: Iterable[Route], keys: KeyRing, clock: Callable[[], float]) -> None:
        self.table: dict[str, Route] = {path: route for route in routes for path in route.paths}
        self.keys = keys
        self.clock = clock

    def takes_bearer(self, path: str) -> bool:
        """Whether the route of ``path`` accepts a bearer token."""
        route = self.table.get(path)
        return route is not None and route.bearer

    def answer(self, ex: Exchange, token: str | None) -> Reply:
        """Brave's answer to ``ex.request`` sent with ``token``."""
        route = self.table.get(ex.request.path)
        if route is None:
            return ex.error(404, "NOT_FOUND", "The requested resource was not found.", {})
        if route.methods is not None and ex.request.method not in route.methods:
            return ex.error(405, "METHOD_NOT_ALLOWED", "Method Not Allowed", {})
        refused = refuse(ex, token, self.keys)
        if refused is not None:
            return refused
        ex.key = self.keys.get(token)
        assert ex.key is not None
        code = admit(ex.terms, ex.key, self.clock())
        if code is not None:
            if code == "RATE_LIMITED":
                self.keys.rate_limited += 1
            return ex.limit(code)
        return route.answer(ex)
