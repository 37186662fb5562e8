"""Whether a request may go out now: the monthly quota, Brave's demanded pauses, and a queue longer than the call.

Every refusal here sends nothing and answers at once with the typed error an agent can act on
(``QUOTA_EXCEEDED`` with the reset time; ``RATE_LIMITED`` with ``retry_after_ms``) instead of letting
the call sit until its deadline. It also turns what Brave's headers say into throttle changes.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from brave_search_mcp.clock import Clock
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.ratelimit.throttle import Throttle
from brave_search_mcp.upstream.retry import MAX_SERVER_WAIT_SECONDS

# A call must be able to start this long before its deadline to be worth queueing (the request itself takes time).
START_MARGIN_SECONDS = 0.25
# Without a reset figure, a used-up quota is re-checked after this long.
DEFAULT_QUOTA_PAUSE_SECONDS = 60.0


def _when(seconds: float) -> str:
    """Wall-clock ISO time ``seconds`` from now, for a reader."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _rate_limited(message: str, wait: float) -> errors.RefusedBeforeSending:
    error = errors.RefusedBeforeSending(message, status=429, brave_code="RATE_LIMITED", retry_after=round(wait, 3))
    error.details["retry_after_ms"] = max(1, math.ceil(wait * 1000))
    return error


class Admission:
    """Gatekeeper in front of one upstream's throttle."""

    def __init__(self, throttle: Throttle, *, clock: Clock, adaptive: bool, cap: int | None) -> None:
        self._throttle = throttle
        self._clock = clock
        self._adaptive = adaptive
        self._burst_cap = cap
        self._quota_until = -math.inf

    # -- before a request -----------------------------------------------------------------------

    def check(self, deadline: float | None) -> None:
        """Refuse at once what cannot succeed in time; call before each attempt (nothing is sent on refusal)."""
        now = self._clock()
        if now < self._quota_until:
            wait = self._quota_until - now
            error = errors.QuotaExceeded(
                f"This key's monthly Brave quota is used up; it resets in about {_duration(wait)} "
                f"(at {_when(wait)}). Cached results are still served.",
                status=429,
                brave_code="QUOTA_LIMITED",
                retry_after=round(wait, 3),
            )
            error.details.update(resets_at=_when(wait), reset_seconds=round(wait))
            raise error
        if deadline is None:
            return
        pause = self._throttle.blocked_until - now
        if pause > 0 and now + pause > deadline:
            raise _rate_limited(
                f"Brave asked this key to pause for {pause:.1f} s, longer than this call may wait; retry after that.",
                pause,
            )
        start = self._throttle.earliest_start()
        margin = min(START_MARGIN_SECONDS, max(0.0, deadline - now) / 10)
        if start > now and start > deadline - margin:
            wait = start - now
            raise _rate_limited(
                f"{self._throttle.waiting} calls are queued for this key's rate of {self._throttle.rate:g}/s; this "
                f"call could not start for {wait:.1f} s, past its deadline. Retry after that, or send fewer at once.",
                wait,
            )

    # -- after an answer ------------------------------------------------------------------------

    def observe(self, info: RateLimitInfo) -> None:
        """Learn the plan's ceiling, honour an exhausted per-second window, and note a used-up month."""
        if self._adaptive and info.per_second is not None and info.per_second > 0:
            ceiling = max(1, int(info.per_second))
            self._throttle.learn(info.per_second, min(self._burst_cap or ceiling, ceiling))
        month_done = bool(info.limit_month) and info.remaining_month == 0
        if month_done:
            reset = info.reset_month_seconds
            self.quota_used_up(reset if reset is not None else DEFAULT_QUOTA_PAUSE_SECONDS, info.observed_at)
        elif info.remaining_second == 0 and info.reset_seconds is not None:
            self._throttle.block_until(info.observed_at + min(info.reset_seconds, MAX_SERVER_WAIT_SECONDS))

    def succeeded(self) -> None:
        """A clean answer: the throttle may grow towards the plan."""
        self._throttle.record_success()

    def refused(self, error: errors.BraveSearchError) -> None:
        """Brave said no: a 429 pauses every start and lowers the rate; a used-up quota closes the gate."""
        if isinstance(error, errors.QuotaExceeded):
            wait = error.retry_after if error.retry_after is not None else DEFAULT_QUOTA_PAUSE_SECONDS
            self.quota_used_up(wait, self._clock())
            if error.retry_after is not None:
                error.details.setdefault("resets_at", _when(wait))
        elif isinstance(error, errors.RateLimited):
            pause = error.retry_after if error.retry_after is not None else 1.0
            self._throttle.block_until(self._clock() + min(pause, MAX_SERVER_WAIT_SECONDS))
            if self._adaptive:
                self._throttle.penalize()

    def quota_used_up(self, seconds: float, observed_at: float) -> None:
        """No request goes out until ``seconds`` after ``observed_at``."""
        self._quota_until = max(self._quota_until, observed_at + max(0.0, seconds))

    def snapshot(self) -> dict[str, Any]:
        """What the status tool shows: the rate in force, the plan's ceiling, pauses and the quota gate."""
        now = self._clock()
        report: dict[str, Any] = {
            "rate_in_force_per_second": round(self._throttle.rate, 3),
            "plan_per_second": round(self._throttle.ceiling, 3),
            "burst": self._throttle.burst,
            "queued": self._throttle.waiting,
        }
        if self._throttle.blocked_until > now:
            report["paused_for_seconds"] = round(self._throttle.blocked_until - now, 1)
        if self._quota_until > now:
            wait = self._quota_until - now
            report["quota_exhausted"] = {"resets_in_seconds": round(wait), "resets_at": _when(wait)}
        return report


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
