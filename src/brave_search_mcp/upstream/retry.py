"""The one retry rule for every upstream: what a later try can fix, and how long an upstream asked us to wait.

``retrying.Retrier`` runs it (on tenacity); this module stays pure, so the error mapping can share the rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from brave_search_mcp.models import errors

RETRY_STATUSES: frozenset[int] = frozenset({500, 502, 503, 504})


# The longest month: no wait or reset an upstream names lies further ahead (a Retry-After beyond it is a broken
# proxy's, and ignored: issue 36).
MONTH_SECONDS = 31 * 86400.0


def parse_retry_after(value: str | None, date_header: str | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (seconds or HTTP-date, measured against ``Date`` if sent); None
    when absent, unreadable, negative or more than a month away."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        when = _http_date(text)
        if when is None:
            return None
        reference = _http_date(date_header) if date_header else None
        if reference is None:
            reference = datetime.now(UTC)
        seconds = max(0.0, (when - reference).total_seconds())
    return seconds if math.isfinite(seconds) and 0 <= seconds <= MONTH_SECONDS else None


def _http_date(text: str) -> datetime | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def is_retryable(exc: BaseException) -> bool:
    """Whether a later try can succeed: the one rule the retry policy and the envelope's flag share."""
    if isinstance(exc, errors.RateLimited):
        return True
    if isinstance(exc, errors.UpstreamError):
        return exc.status in RETRY_STATUSES
    if isinstance(exc, errors.UpstreamTimeout | errors.NetworkError):
        return exc.retryable
    return False


# A wait an upstream demands longer than this is not worth holding a tool call for.
MAX_SERVER_WAIT_SECONDS = 60.0
# A try must be able to start this long before the call's deadline to be worth waiting for (the request itself
# takes time); a short call keeps a tenth of what is left instead.
START_MARGIN_SECONDS = 0.25


def start_margin(remaining: float) -> float:
    """How long before the deadline the last worthwhile start is, given the seconds left."""
    return min(START_MARGIN_SECONDS, max(0.0, remaining) / 10)


def server_wait(exc: BaseException | None) -> float | None:
    """The wait an upstream asked for with its refusal (Retry-After, or a rate-limit reset), if it named one."""
    if isinstance(exc, errors.UpstreamStatusError):
        return exc.retry_after
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How many more tries and how long between them: the one policy every upstream client runs."""

    retries: int
    base_seconds: float = 0.25
    max_seconds: float = 5.0
    max_server_wait: float = MAX_SERVER_WAIT_SECONDS
    # False for an upstream whose 429 is a bot limiter counting every try (SearXNG): retrying only digs deeper
    retry_rate_limited: bool = True
    # True for a request that must not be sent twice unless the upstream refused it before doing (or billing)
    # anything: only its 429 is retried (Brave's streamed POST)
    rate_limited_only: bool = False

    def should_retry(self, exc: BaseException, *, now: float, deadline: float | None) -> bool:
        """Only what a later try can fix, and only when the wait the upstream demands fits before the deadline."""
        if not is_retryable(exc) or isinstance(exc, errors.RefusedBeforeSending):  # a refusal here ends the call
            return False
        if isinstance(exc, errors.RateLimited) and not self.retry_rate_limited:
            return False
        if self.rate_limited_only and not isinstance(exc, errors.RateLimited):
            return False
        if deadline is not None and now >= deadline:
            return False  # no try starts once the call's time is up
        wait = server_wait(exc)
        return wait is None or (wait <= self.max_server_wait and self.fits(wait, now=now, deadline=deadline))

    def fits(self, wait: float, *, now: float, deadline: float | None) -> bool:
        """Whether a try that starts after ``wait`` seconds still has time before the deadline (``start_margin``)."""
        if deadline is None:
            return True
        left = deadline - now
        return wait <= left - start_margin(left)

    def wait(self, attempt: int, exc: BaseException | None, rng: Callable[[], float]) -> float:
        """The upstream's own wait when it gave one, else capped exponential backoff with jitter (x0.8-1.2)."""
        demanded = server_wait(exc)
        if demanded is not None:
            return demanded
        exponent = min(max(attempt - 1, 0), 30)
        delay = self.base_seconds * (2.0**exponent) * (0.8 + 0.4 * rng())
        return min(self.max_seconds, delay)
