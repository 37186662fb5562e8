"""How the limiter's plans travel to and from Redis: the hash a plan is stored as, the reservation's arguments,
and the move between the Redis server's clock (the scripts' ``TIME``) and a replica's own."""

from __future__ import annotations

import json
from dataclasses import replace

from brave_search_mcp.ratelimit.plan import (
    CLOCK_SKEW_SECONDS,
    KEEP_STARTS_SECONDS,
    MAX_BURST,
    MAX_RATE,
    MIN_RATE,
    NEVER,
    PROBE_HOLD_SECONDS,
    QUOTA_TRIAL_SECONDS,
    RECOVERY_FACTOR,
    RECOVERY_PERIOD_SECONDS,
    SPREAD_SECONDS,
    Ask,
    PlanState,
)
from brave_search_mcp.state.redis_once import ONCE_KEPT_MS
from brave_search_mcp.upstream.retry import MAX_SERVER_WAIT_SECONDS, MONTH_SECONDS

TIME_FIELDS = ("penalty_at", "strike_at", "blocked_until", "probe_until", "quota_until", "quota_trial_at")
# The bounds of a sound plan, as the reservation script reads them after its own arguments.
BOUNDS = (
    MIN_RATE,
    MAX_RATE,
    MAX_BURST,
    CLOCK_SKEW_SECONDS,
    MONTH_SECONDS,
    MAX_SERVER_WAIT_SECONDS,
    QUOTA_TRIAL_SECONDS,
)


def text_of(value: bytes | str) -> str:
    """A script's reply as text (redis-py hands bytes unless told to decode)."""
    return value.decode() if isinstance(value, bytes) else value


def fields_of(plan: PlanState) -> dict[str, str]:
    """A plan as the hash the script reads: PlanState's set fields, numbers in full precision."""
    return {name: repr(value) for name, value in plan.to_json().items() if value is not None}


def plan_of(flat: list[bytes | str]) -> PlanState:
    """A plan from the hash's field/value pairs."""
    items = [text_of(x) for x in flat]
    return PlanState.from_json({items[i]: float(items[i + 1]) for i in range(0, len(items), 2)})


def shifted(plan: PlanState, by: float) -> PlanState:
    """The plan with its times moved by ``by`` seconds (from one clock to another)."""
    if by == 0:
        return plan
    moved = {name: getattr(plan, name) + by for name in TIME_FIELDS if getattr(plan, name) != NEVER}
    return replace(plan, **moved) if moved else plan


def reserve_args(ask: Ask, now: float, token: str, *, server_clock: bool) -> list[str | float]:
    """The reservation script's arguments, in its order (``redis_scripts.RESERVE``); ``server_clock``: decide on the
    server's ``TIME`` (production), else on ``now`` (a test's clock)."""
    pinned = ("", "") if ask.pinned is None else (repr(float(ask.pinned[0])), str(int(ask.pinned[1])))
    return [
        repr(float(now)),
        json.dumps(ask.init.to_json()),
        token,
        repr(ask.margin[0]),
        repr(ask.margin[1]),
        repr(KEEP_STARTS_SECONDS),
        repr(RECOVERY_FACTOR),
        repr(RECOVERY_PERIOD_SECONDS),
        repr(PROBE_HOLD_SECONDS),
        *pinned,
        repr(SPREAD_SECONDS),
        *(repr(float(bound)) for bound in BOUNDS),
        "1" if server_clock else "",
        ONCE_KEPT_MS,
    ]
