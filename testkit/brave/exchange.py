"""One request on its way through the fake: what came in, whose key it is, and the builders of Brave's replies.

Routes answer through an ``Exchange`` so every reply carries the right rate-limit headers, gzip and error shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ErrorIds
from .plan import KeyState, Terms, limit_meta, rate_headers
from .reply import RecordedRequest, Reply, json_reply

Headers = list[tuple[str, str]]


@dataclass
class Exchange:
    """The request, its key's counters (None before or without a valid token) and the reply builders."""

    request: RecordedRequest
    terms: Terms
    ids: ErrorIds
    gzip_ok: bool
    key: KeyState | None = None

    def rate_headers(self, *, remaining_second: int | None = None) -> Headers:
        """Brave's X-RateLimit-* headers for this key."""
        return rate_headers(self.terms, self.key, remaining_second=remaining_second)

    def json(self, status: int, obj: Any, *, headers: Headers | None = None, gzip: bool | None = None) -> Reply:
        """``obj`` as JSON with this key's rate headers (or ``headers``), gzip when accepted (or ``gzip``)."""
        chosen = self.rate_headers() if headers is None else headers
        return json_reply(status, obj, chosen, self.gzip_ok if gzip is None else gzip)

    def error(
        self,
        status: int,
        code: str,
        detail: str,
        meta: dict[str, Any],
        *,
        headers: Headers | None = None,
        gzip: bool | None = None,
    ) -> Reply:
        """Brave's ``ErrorResponse`` with ``code`` and ``detail``."""
        return self.json(status, self.ids.body(status, code, detail, meta), headers=headers, gzip=gzip)

    def validation(
        self, errors: list[dict[str, Any]], *, headers: Headers | None = None, gzip: bool | None = None
    ) -> Reply:
        """422 VALIDATION listing every field error at once."""
        detail = "Unable to validate request parameter(s)"
        return self.error(422, "VALIDATION", detail, {"errors": errors}, headers=headers, gzip=gzip)

    def limit(self, code: str, *, headers: Headers | None = None) -> Reply:
        """429 RATE_LIMITED (the second's window is full) or QUOTA_LIMITED (the month's)."""
        detail = (
            "Request rate limit exceeded for plan."
            if code == "RATE_LIMITED"
            else "Request quota limit exceeded for plan."
        )
        if headers is None:
            headers = self.rate_headers(remaining_second=0 if code == "RATE_LIMITED" else None)
        return self.error(429, code, detail, limit_meta(self.terms, self.key), headers=headers)

    def not_in_plan(self, feature: str, plan: str, *, headers: Headers | None = None) -> Reply | None:
        """400 OPTION_NOT_IN_PLAN (naming the cheapest ``plan`` with it) when the key lacks ``feature``, else None."""
        if feature not in self.terms.plan_lacks:
            return None
        meta = {"component": "authentication", "plan": plan}
        return self.error(400, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan.", meta, headers=headers)

    def only_get(self) -> Reply | None:
        """405 for anything but GET, else None."""
        return None if self.request.method == "GET" else self.error(405, "METHOD_NOT_ALLOWED", "Method Not Allowed", {})

    def plain(self, status: int, content_type: str, body: bytes, *, rate: bool = True) -> Reply:
        """A non-JSON answer (a proxy's page, a cut body), with this key's rate headers when ``rate``."""
        headers = [("Content-Type", content_type), *(self.rate_headers() if rate else [])]
        return Reply(status, headers, body)

    def bill(self) -> None:
        """Count a successful request against the key's monthly quota."""
        if self.key is not None:
            self.key.used_month += 1
