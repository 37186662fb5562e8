"""What the key's plan allows: a 1-second sliding rate window and a monthly quota per key, Brave's rate headers.

The fake itself holds the plan's terms (``rate_per_second``, ``monthly_limit``, ``advertised_rate_per_second``,
``plan_lacks``) as plain attributes tests change; this module reads them through ``Terms``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

MONTH_WINDOW = 2592000  # seconds: the monthly window Brave's X-RateLimit-Policy names


class Terms(Protocol):
    """The plan the fake sells: its rates, its quota and the features a key lacks."""

    rate_per_second: int
    monthly_limit: int  # successful requests per month; 0 = unlimited
    advertised_rate_per_second: int | None  # a plan header that lies: advertise this, enforce rate_per_second
    plan_lacks: set[str]  # features ("local", "answers", "llm_context") answered 400 OPTION_NOT_IN_PLAN


@dataclass
class KeyState:
    """One key's counters: start times in the last second, successful requests this month."""

    window: deque[float] = field(default_factory=deque)
    used_month: int = 0


class KeyRing:
    """The keys the fake accepts, each with its own rate window and monthly count."""

    def __init__(self, names: tuple[str, ...]) -> None:
        if not names:
            raise ValueError("FakeBrave needs at least one API key")
        self.names = names
        self.states: dict[str, KeyState] = {}
        self.rate_limited = 0  # requests refused with 429 RATE_LIMITED (the window's or an injected one)
        self.reset()

    def reset(self) -> None:
        """Fresh counters for every key."""
        self.states = {name: KeyState() for name in self.names}
        self.rate_limited = 0

    def get(self, token: str | None) -> KeyState | None:
        """The counters of ``token``, or None when it is missing or unknown."""
        return None if token is None else self.states.get(token)


def admit(terms: Terms, key: KeyState, now: float) -> str | None:
    """Take a place in the rate window; the Brave error code when the window or the monthly quota is full."""
    while key.window and key.window[0] <= now - 1.0:
        key.window.popleft()
    if len(key.window) >= terms.rate_per_second:
        return "RATE_LIMITED"
    key.window.append(now)
    if terms.monthly_limit and key.used_month >= terms.monthly_limit:
        return "QUOTA_LIMITED"
    return None


def seconds_to_month_end() -> int:
    """Seconds until the first of next month (UTC): the monthly window's reset."""
    now = datetime.now(UTC)
    nxt = (
        datetime(now.year + 1, 1, 1, tzinfo=UTC)
        if now.month == 12
        else datetime(now.year, now.month + 1, 1, tzinfo=UTC)
    )
    return max(1, int((nxt - now).total_seconds()))


def rate_headers(terms: Terms, key: KeyState | None, *, remaining_second: int | None = None) -> list[tuple[str, str]]:
    """The four X-RateLimit-* headers Brave sends, per second and per month."""
    rps, monthly = terms.advertised_rate_per_second or terms.rate_per_second, terms.monthly_limit
    if remaining_second is None:
        remaining_second = rps - len(key.window) if key is not None else rps
    used = key.used_month if key is not None else 0
    left_month = max(0, monthly - used) if monthly else 0
    return [
        ("X-RateLimit-Limit", f"{rps}, {monthly}"),
        ("X-RateLimit-Policy", f"{rps};w=1, {monthly};w={MONTH_WINDOW}"),
        ("X-RateLimit-Remaining", f"{max(0, remaining_second)}, {left_month}"),
        ("X-RateLimit-Reset", f"1, {seconds_to_month_end()}"),
    ]


def quota_headers(terms: Terms, month_reset: str) -> list[tuple[str, str]]:
    """The headers of a monthly-quota 429 as Brave sends it: the monthly window reads 0 left."""
    rps, monthly = terms.rate_per_second, terms.monthly_limit
    return [
        ("X-RateLimit-Limit", f"{rps}, {monthly}"),
        ("X-RateLimit-Policy", f"{rps};w=1, {monthly};w={MONTH_WINDOW}"),
        ("X-RateLimit-Remaining", f"{rps}, 0"),
        ("X-RateLimit-Reset", f"1, {month_reset}"),
    ]


def limit_meta(terms: Terms, key: KeyState | None) -> dict[str, Any]:
    """The ``meta`` of Brave's 429 bodies: the plan's limits and the key's current use."""
    return {
        "plan": "Free",
        "rate_limit": terms.rate_per_second,
        "rate_current": len(key.window) if key is not None else terms.rate_per_second,
        "quota_limit": terms.monthly_limit,
        "quota_current": key.used_month if key is not None else 0,
        "org_rate_limit": None,
        "org_rate_current": 0,
        "component": "rate_limiter",
    }
