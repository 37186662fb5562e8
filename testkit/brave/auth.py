"""The token check: the key travels in ``X-Subscription-Token`` (or as a bearer token where a route takes one)."""

from __future__ import annotations

from .exchange import Exchange
from .plan import KeyRing
from .reply import Reply

VALID_KEY = "test-key-not-real"


def take_token(headers: dict[str, str], *, bearer: bool) -> str | None:
    """Remove the key from ``headers`` (lower-case names) and return it, so no record keeps its value."""
    token = headers.pop("x-subscription-token", None)
    if token is None and bearer:
        scheme, _, value = headers.pop("authorization", "").partition(" ")
        token = (value.strip() or None) if scheme.lower() == "bearer" else None
    return token


def refuse(ex: Exchange, token: str | None, keys: KeyRing) -> Reply | None:
    """Brave's answer to a missing (422 on the header) or unknown (422 SUBSCRIPTION_TOKEN_INVALID) token."""
    if token is None:
        missing = {"type": "missing", "loc": ["header", "x-subscription-token"], "msg": "Field required", "input": None}
        return ex.validation([missing])
    if keys.get(token) is None:
        detail = "The provided subscription token is invalid."
        return ex.error(422, "SUBSCRIPTION_TOKEN_INVALID", detail, {"component": "authentication"})
    return None
