"""The one retry rule for every upstream: what a later try can fix, and how long an upstream asked us to wait."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from brave_search_mcp.models import errors

RETRY_STATUSES: frozenset[int] = frozenset({500, 502, 503, 504})


def parse_retry_after(value: str | None, date_header: str | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (seconds or HTTP-date, measured against ``Date`` if sent)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    when = _http_date(text)
    if when is None:
        return None
    reference = _http_date(date_header) if date_header else None
    if reference is None:
        reference = datetime.now(UTC)
    return max(0.0, (when - reference).total_seconds())


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
