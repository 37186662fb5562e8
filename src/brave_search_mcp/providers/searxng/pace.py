"""The pace a SearXNG instance's bot limiter allows, learned from its 429s (pure), so searches slow down instead
of failing.

A stock instance with ``server.limiter: true`` lets one client make 15 requests in any 20 s and 150 in any
600 s (``BURST_MAX``/``BURST_WINDOW`` and ``LONG_MAX``/``LONG_WINDOW`` of ``searx/botdetection/ip_limit.py``),
counts every request, refused ones too, and answers 429 with no Retry-After. Private instances usually run
without it, so the provider starts at its own faster pace (``SearxngConfig.rate``) and each 429 moves it one
step down: the burst window (15 in 20 s), then a pace that keeps both windows (5 in 20 s: 150 in 600 s). Each
window has a second of slack for the clocks at both ends. After any 429 nothing is sent for a window's length,
so the instance's count has drained whatever our own record of earlier requests missed; an instance stricter
than stock gets that hold again at each 429, never a slower plan (a plan is kept in the state backend for every
process of the user, and a stuck-slow pace would outlive a passing storm of 429s).
"""

from __future__ import annotations

from brave_search_mcp.ratelimit.plan import PlanState
from brave_search_mcp.render.text import seconds_text

__all__ = ["HOLD_SECONDS", "MAX_LIMITED_TRIES", "STEPS", "WAIT_WORTH_SAYING_SECONDS", "pace_text", "slower"]

# (requests, seconds): the stock limiter's 20 s windows, fastest first, with a second of slack each (our clock
# starts a request a network delay before the instance's counts it); 5 in 21 s also keeps 150 in 600 s
STEPS: tuple[tuple[int, float], ...] = ((15, 21.0), (5, 21.0))
HOLD_SECONDS = 21.0  # after a 429: the stock burst window and its slack
MAX_LIMITED_TRIES = 3  # 429s one call sits out (each at a slower pace) before it reports RATE_LIMITED
# A call that waited this long for the pace says so in a warning (agents often give a tool call 30 s in all).
WAIT_WORTH_SAYING_SECONDS = 3.0


def pace_text(limits: tuple[float, int] | None) -> str:
    """A pace as a reader takes it in: "2 requests a second", "15 requests per 21 s"."""
    if limits is None:
        return "a pace not yet known"
    rate, burst = limits
    window = burst / rate
    if abs(window - 1.0) < 1e-6:
        return f"{burst} request{'s' if burst != 1 else ''} a second"
    return f"{burst} request{'s' if burst != 1 else ''} per {seconds_text(window)}"


def slower(plan: PlanState, now: float, retry_after: float | None = None) -> PlanState:
    """The plan after a 429 at ``now``: the next step below the pace in force (if any is left), and no start before
    the window has passed (or the Retry-After a proxy may send, if longer)."""
    limits = plan.in_force(now)
    rate = limits[0] if limits is not None else float("inf")
    step = next(((count / seconds, count) for count, seconds in STEPS if count / seconds < rate - 1e-9), None)
    adopted = plan.learned_as(*step) if step is not None else plan
    return adopted.blocked(now + max(HOLD_SECONDS, retry_after or 0.0))
