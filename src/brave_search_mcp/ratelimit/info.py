"""What an upstream's rate-limit headers said, in terms the limiter and the envelopes share."""

from __future__ import annotations

from dataclasses import dataclass

from brave_search_mcp.models.envelopes import RateLimitMeta


@dataclass(frozen=True)
class RateLimitInfo:
    """Figures parsed from X-RateLimit-* headers of one answer (first window = per second, second = month)."""

    per_second: float | None = None
    remaining_second: int | None = None
    limit_month: int | None = None  # 0 means unlimited (pay as you go)
    remaining_month: int | None = None
    reset_seconds: float | None = None
    reset_month_seconds: float | None = None
    observed_at: float = 0.0  # client clock: when the request these figures answer was sent (counted upstream)
    ignored: tuple[str, ...] = ()  # header values left out: unreadable, or outside any plan's range (warned once)


def rate_limit_meta(info: RateLimitInfo | None) -> RateLimitMeta | None:
    """The figures worth showing an agent, from the client's observation of Brave's headers."""
    if info is None:
        return None
    return RateLimitMeta(**{name: getattr(info, name) for name in RateLimitMeta.model_fields})
