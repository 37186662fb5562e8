"""The one adaptive-rate rule set: the plan learned from headers, the halving after a contradicting 429, recovery."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

# Same safety margin as the in-process throttle: a start must be this much older than the window.
WINDOW_MARGIN_FACTOR = 1.03


WINDOW_MARGIN_SECONDS = 0.005


PENALTY_FLOOR_RATE = 0.5  # a contradicting 429 never pushes the rate below this (unless the plan is lower)


RECOVERY_FACTOR = 1.1  # per clean minute after a penalty, up to the learned plan rate


RECOVERY_PERIOD_SECONDS = 60.0


RAMP_PERIOD_SECONDS = 1.0  # slow start: after a higher plan is learned, the rate in force doubles this often


@dataclass(frozen=True)
class PlanState:
    """What the limiter knows about one upstream's plan: pure, JSON-able, stored by every shared backend."""

    plan_rate: float
    plan_burst: int
    penalty_rate: float | None = None
    penalty_at: float = -math.inf
    blocked_until: float = -math.inf
    ramp_rate: float | None = None  # slow start towards a newly learned plan: from this rate...
    ramp_at: float = -math.inf  # ...doubling every RAMP_PERIOD_SECONDS since this time

    @staticmethod
    def initial(rate: float, burst: int) -> PlanState:
        """A plan nobody has learned yet: the configured start values."""
        check_limits(rate, burst)
        return PlanState(float(rate), int(burst))

    def in_force(self, now: float) -> tuple[float, int]:
        """The (rate, burst) allowed at ``now``: the plan, capped by slow start and by a penalty recovering 10 %/min."""
        rate = self.plan_rate
        if self.ramp_rate is not None:
            periods = max(0.0, math.floor((now - self.ramp_at) / RAMP_PERIOD_SECONDS))
            rate = min(rate, self.ramp_rate * 2.0 ** min(periods, 60.0))
        if self.penalty_rate is not None:
            minutes = max(0.0, math.floor((now - self.penalty_at) / RECOVERY_PERIOD_SECONDS))
            rate = min(rate, self.penalty_rate * RECOVERY_FACTOR ** min(minutes, 200.0))
        if rate >= self.plan_rate:
            return self.plan_rate, self.plan_burst
        return rate, max(1, min(self.plan_burst, math.floor(rate)))

    def window(self, now: float) -> float:
        """Seconds of the sliding window in force (burst / rate)."""
        rate, burst = self.in_force(now)
        return burst / rate

    def learned(self, rate: float, burst: int, now: float) -> PlanState:
        """The plan as Brave's headers state it; a higher plan is approached by slow start (headers can lie)."""
        check_limits(rate, burst)
        if float(rate) == self.plan_rate and int(burst) == self.plan_burst:
            return self
        in_force, _ = self.in_force(now)
        ramp = (in_force, now) if rate > in_force else (None, -math.inf)
        return replace(self, plan_rate=float(rate), plan_burst=int(burst), ramp_rate=ramp[0], ramp_at=ramp[1])

    def penalized(self, now: float) -> PlanState:
        """A 429 the plan did not predict: halve the rate in force, once per window."""
        if now - self.penalty_at < self.window(now):
            return self
        rate, _ = self.in_force(now)
        reduced = max(min(PENALTY_FLOOR_RATE, rate), rate / 2.0)
        return replace(self, penalty_rate=reduced, penalty_at=now, ramp_rate=None, ramp_at=-math.inf)

    def blocked(self, t: float) -> PlanState:
        """No start before ``t`` (Brave said the window is used up, maybe by another process)."""
        return self if t <= self.blocked_until else replace(self, blocked_until=float(t))

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (infinities become None)."""
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in asdict(self).items()}

    @staticmethod
    def from_json(data: dict[str, Any]) -> PlanState:
        """Inverse of ``to_json``."""
        return PlanState(
            plan_rate=float(data["plan_rate"]),
            plan_burst=int(data["plan_burst"]),
            penalty_rate=None if data.get("penalty_rate") is None else float(data["penalty_rate"]),
            penalty_at=-math.inf if data.get("penalty_at") is None else float(data["penalty_at"]),
            blocked_until=-math.inf if data.get("blocked_until") is None else float(data["blocked_until"]),
            ramp_rate=None if data.get("ramp_rate") is None else float(data["ramp_rate"]),
            ramp_at=-math.inf if data.get("ramp_at") is None else float(data["ramp_at"]),
        )

    def snapshot(self, now: float, backend: str) -> dict[str, Any]:
        """What the status tool shows: rate in force, learned plan, pause, backend."""
        rate, burst = self.in_force(now)
        return {
            "backend": backend,
            "rate": rate,
            "burst": burst,
            "plan_rate": self.plan_rate,
            "plan_burst": self.plan_burst,
            "penalized": rate < self.plan_rate,
            "blocked_until": self.blocked_until if self.blocked_until > now else None,
        }


def check_limits(rate: float, burst: int) -> None:
    """Refuse limits no limiter can honour (zero, negative, NaN, fractional burst)."""
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"rate must be a positive number of requests per second, got {rate!r}")
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
        raise ValueError(f"burst must be a whole number of at least 1, got {burst!r}")


def horizon(rate: float, burst: int) -> float:
    """How old a start must be before its slot is free again (window plus safety margin)."""
    return burst / rate * WINDOW_MARGIN_FACTOR + WINDOW_MARGIN_SECONDS


def ready_at(starts: list[float], now: float, rate: float, burst: int, blocked_until: float) -> float:
    """Earliest time a new start fits, given the recent starts (sorted ascending) of every process."""
    ready = max(now, blocked_until)
    live = [t for t in starts if t + horizon(rate, burst) > now]
    if len(live) >= burst:
        ready = max(ready, live[-burst] + horizon(rate, burst))
    return ready
