"""The one adaptive-rate rule set, as pure values: what every backend stores and every request is admitted by.

A plan is what an upstream allows (``rate`` requests per second, ``burst`` inside one window). For Brave it
is learned from the answers' headers: a key never seen has no plan, so its first request goes alone (the
*probe*) and the answer's headers set the plan; the plan an answer states is in force from that answer, in every
process that reads it, whole bursts at once: no slow start, no ramp. A stored plan this process has not heard
stated yet (learned by an earlier run, perhaps since shrunk) is checked by one request sent alone
(``limiter.Limiter``), not by spreading every start. Starts keep a margin below the plan
(``WINDOW_MARGIN_FACTOR``): Brave counts arrivals in a sliding 1-second window, and requests that leave evenly
arrive bunched. A 429 the plan did not predict is, for the first time in a while, that jitter at the window's
edge: it costs a short pause, the rate stays (``contradicted``). Another one soon after halves the rate in force
(once per second), never below ``PENALTY_FLOOR_RATE``; while penalised, starts are spread evenly at the lowered
rate, and the rate recovers by 10 % per clean minute.

``decide`` is the reservation rule: given a plan, the recent starts and the time, may a request start now,
and if not, when to ask again. The Redis backend runs the same rule as a Lua script; the contract test
``tests/test_rate_contract.py`` feeds both the same inputs and demands the same decisions. A stored plan is checked
before any rule reads it (``from_json``: finite numbers in range; ``trusted``: no time further ahead than a rule
sets one): a record that fails is rebuilt from the family's initial plan, never obeyed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from brave_search_mcp.upstream.retry import MAX_SERVER_WAIT_SECONDS, MONTH_SECONDS

NEVER = -math.inf
# A start must be this much older than the window before its slot is used again: 8 % of Brave's 1-second window
# (80 ms) absorbs the bunching of requests that left evenly (a busy event loop, the network), at 5 % more
# throughput cost than the 3 % it replaced; a 429 that still slips through costs a short pause (``contradicted``).
WINDOW_MARGIN_FACTOR = 1.08
WINDOW_MARGIN_SECONDS = 0.005  # ...plus this
EXACT = (1.0, 0.0)  # margins of an upstream that counts exactly (SearXNG's own limiter settings)
PENALTY_FLOOR_RATE = 0.5  # a contradicting 429 never pushes the rate below this (unless the plan is lower)
PENALTY_WINDOW_SECONDS = 1.0  # 429s within one of Brave's 1-second windows are one overload: counted once
STRIKE_MEMORY_SECONDS = 3.0  # a second overload this soon after a first (forgiven) one halves the rate
RECOVERY_FACTOR = 1.1  # per clean minute after a penalty, up to the plan rate
RECOVERY_PERIOD_SECONDS = 60.0
PROBE_HOLD_SECONDS = 10.0  # a probe whose answer never came (its process died) frees the next one after this
QUOTA_TRIAL_SECONDS = 600.0  # default: while the month is spent, one request goes through this often
KEEP_STARTS_SECONDS = 10.0  # backends forget starts older than this (and than the window)
SPREAD_SECONDS = 0.05  # a penalised plan starts at most this long's share of its rate at once
# What a stored plan may hold (a record outside these is rebuilt): rates from the slowest setting to beyond any
# plan Brave sells, whole bursts, times no further ahead of ``now`` than a rule ever sets one.
MIN_RATE, MAX_RATE = 0.01, 10_000.0
MAX_BURST = 10_000
MAX_MONTH_REQUESTS = int(MAX_RATE * MONTH_SECONDS)  # the most a month can count, at the fastest plan
CLOCK_SKEW_SECONDS = 300.0  # another process's clock may run this far ahead of this one's
WHOLE_FIELDS = ("plan_burst",)

OK, WINDOW, PAUSED, PROBE, QUOTA = "ok", "window", "paused", "probe", "quota"


@dataclass(frozen=True)
class PlanState:
    """What is known of one upstream family's plan; pure and JSON-able, stored as is by every backend."""

    plan_rate: float | None = None  # None: never learned; the next request goes alone (the probe)
    plan_burst: int = 1
    penalty_rate: float | None = None
    penalty_at: float = NEVER
    strike_at: float = NEVER  # the last 429 forgiven as jitter (``contradicted``)
    blocked_until: float = NEVER  # the upstream demanded a pause (a spent per-second window, a 429)
    probe_until: float = NEVER  # a probe is in flight until its answer (or this time)
    quota_until: float = NEVER  # the month is spent until then (the quota gate is closed)...
    quota_trial_at: float = NEVER  # ...except for one request at or after this time
    quota_every: float = QUOTA_TRIAL_SECONDS

    @staticmethod
    def unknown() -> PlanState:
        """A plan nobody has learned yet: the first request is the probe."""
        return PlanState()

    @staticmethod
    def known(rate: float, burst: int) -> PlanState:
        """A plan given, not learned (a setting, Brave's published Answers rate, SearXNG's window): trusted."""
        check_limits(rate, burst)
        return PlanState(float(rate), int(burst))

    def gate_closed(self, now: float) -> bool:
        """Whether a spent month holds every request at ``now`` (closed, and not yet time for the next trial)."""
        return self.quota_until > now and now < self.quota_trial_at

    @property
    def learned(self) -> bool:
        """Whether the plan's rate is known."""
        return self.plan_rate is not None

    def in_force(self, now: float) -> tuple[float, int] | None:
        """(rate, burst) of the window in force at ``now`` (the plan's, at the penalised rate while a penalty
        lasts); None while no plan is known."""
        if self.plan_rate is None:
            return None
        rate = self.plan_rate
        if self.penalty_rate is not None:
            minutes = min(max(0.0, math.floor((now - self.penalty_at) / RECOVERY_PERIOD_SECONDS)), 200.0)
            rate = min(rate, self.penalty_rate * RECOVERY_FACTOR**minutes)
        return rate, self.plan_burst

    def spread(self, now: float) -> tuple[float, int] | None:
        """The second, exact window of a penalised plan: at the lowered rate, ``SPREAD_SECONDS`` of it at once (at
        least one): the 429s say the window is fuller than the plan predicts; None: not penalised."""
        limits = self.in_force(now)
        if limits is None or self.plan_rate is None or limits[0] >= self.plan_rate:
            return None
        rate, burst = limits
        return rate, max(1, min(burst, math.floor(rate * SPREAD_SECONDS)))

    def at_once(self, now: float) -> tuple[float, int] | None:
        """(rate, how many may start together now): the spread while penalised, else the window in force."""
        return self.spread(now) or self.in_force(now)

    def pinned(self, limits: tuple[float, int] | None) -> PlanState:
        """This plan with an explicit setting's rate and burst in force (pauses and the quota gate still apply)."""
        if limits is None:
            return self
        rate, burst = limits
        return replace(self, plan_rate=float(rate), plan_burst=int(burst), penalty_rate=None)

    # -- transitions ------------------------------------------------------------------------------

    def learned_as(self, rate: float, burst: int) -> PlanState:
        """The plan as an answer's headers state it, in force at once and in full, higher or lower: the upstream
        knows its plan; a later answer stating another replaces it."""
        check_limits(rate, burst)
        rate, burst = float(rate), int(burst)
        if self.plan_rate == rate and self.plan_burst == burst:
            return self if self.probe_until == NEVER else replace(self, probe_until=NEVER)
        return replace(self, plan_rate=rate, plan_burst=burst, probe_until=NEVER)

    def contradicted(self, now: float) -> PlanState:
        """A 429 the plan did not predict. At the full plan, the first in ``STRIKE_MEMORY_SECONDS`` is jitter at
        the window's edge (the margin was not enough this once): remembered, the rate stays; the caller pauses
        briefly. Another one soon after, or one on a penalised plan, is a plan that does not hold: halve.
        429s within one second of the last counted one are the same overload (requests already in flight)."""
        limits = self.in_force(now)
        if limits is None or now - max(self.strike_at, self.penalty_at) < PENALTY_WINDOW_SECONDS:
            return self
        full = self.plan_rate is not None and limits[0] >= self.plan_rate
        if full and now - self.strike_at >= STRIKE_MEMORY_SECONDS:
            return replace(self, strike_at=now)
        return self.penalized(now)

    def forgiven(self, now: float) -> bool:
        """Whether the overload a 429 at ``now`` belongs to was forgiven as jitter (``contradicted`` kept the rate):
        then it costs a short pause, not the whole window."""
        return now - self.strike_at < PENALTY_WINDOW_SECONDS and self.strike_at > self.penalty_at

    def penalized(self, now: float) -> PlanState:
        """Halve the rate in force, once per second, down to the floor."""
        limits = self.in_force(now)
        if limits is None or now - self.penalty_at < PENALTY_WINDOW_SECONDS:
            return self
        rate = limits[0]
        reduced = max(min(PENALTY_FLOOR_RATE, rate), rate / 2.0)
        return replace(self, penalty_rate=reduced, penalty_at=now)

    def blocked(self, until: float) -> PlanState:
        """No start before ``until``."""
        return self if until <= self.blocked_until else replace(self, blocked_until=float(until))

    def probe_released(self) -> PlanState:
        """The probe ended without teaching the plan (an error without headers): the next request probes."""
        return self if self.probe_until == NEVER else replace(self, probe_until=NEVER)

    def quota_closed(self, until: float, now: float, every: float) -> PlanState:
        """The month is spent until ``until``; one request may try again ``every`` seconds from now."""
        return replace(self, quota_until=max(self.quota_until, until), quota_trial_at=now + every, quota_every=every)

    def quota_opened(self) -> PlanState:
        """The upstream answered with months left (an upgrade, an early reset): the gate opens."""
        if self.quota_until == NEVER and self.quota_trial_at == NEVER:
            return self
        return replace(self, quota_until=NEVER, quota_trial_at=NEVER)

    # -- storage ----------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict: unset times (minus infinity) become None."""
        return {f.name: (None if getattr(self, f.name) == NEVER else getattr(self, f.name)) for f in fields(self)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> PlanState:
        """Inverse of ``to_json``; absent fields take their defaults (older stored plans still load). A field that
        is not a finite number in its range raises ``ValueError``: the store drops the record and rebuilds it."""
        values: dict[str, Any] = {}
        for f in fields(PlanState):
            raw = data.get(f.name)
            if raw is None:
                continue
            if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(_float(raw)):
                raise ValueError(f"stored plan: {f.name} is not a finite number")
            if f.name in WHOLE_FIELDS:
                if raw != int(raw):
                    raise ValueError(f"stored plan: {f.name} is not a whole number")
                values[f.name] = int(raw)
            else:
                values[f.name] = float(raw)
        plan = PlanState(**values)
        plan.check()
        return plan

    def check(self) -> None:
        """Refuse a plan no rule could have made: rates and bursts outside what any plan allows (a header of
        ``1e308`` stored by an older version), a negative count, a trial period longer than a month."""
        for rate in (self.plan_rate, self.penalty_rate):
            if rate is not None and not MIN_RATE <= rate <= MAX_RATE:  # (False for NaN)
                raise ValueError(f"stored plan: a rate of {rate!r}/s is outside {MIN_RATE:g}–{MAX_RATE:g}")
        whole = math.isfinite(_float(self.plan_burst)) and self.plan_burst == int(self.plan_burst)
        if not (whole and 1 <= self.plan_burst <= MAX_BURST):
            raise ValueError("stored plan: burst out of range")
        if not 0 < self.quota_every <= MONTH_SECONDS:
            raise ValueError("stored plan: quota trial period out of range")

    def trusted(self, now: float) -> bool:
        """Whether the plan is one a rule could have made (``check``) and no time in it lies further ahead of
        ``now`` than a rule ever sets one (another process's clock may run ``CLOCK_SKEW_SECONDS`` ahead): a pause
        of a year is a broken record, not a pause."""
        try:
            self.check()
        except ValueError:
            return False
        ahead = now + CLOCK_SKEW_SECONDS
        return (
            max(self.penalty_at, self.strike_at) <= ahead
            and self.blocked_until <= ahead + MAX_SERVER_WAIT_SECONDS
            and self.probe_until <= ahead + PROBE_HOLD_SECONDS
            and self.quota_until <= ahead + MONTH_SECONDS
            and self.quota_trial_at <= ahead + self.quota_every
        )

    def snapshot(self, now: float) -> dict[str, Any]:
        """What the status tool shows: the rate in force, the learned plan, pauses and the quota gate."""
        limits, at_once = self.in_force(now), self.at_once(now)
        out: dict[str, Any] = {
            "plan_rate": self.plan_rate,
            "plan_burst": self.plan_burst if self.plan_rate is not None else None,
            "rate": None if limits is None else round(limits[0], 3),
            "burst": None if limits is None else limits[1],
            "at_once": None if at_once is None else at_once[1],
            "penalized": limits is not None and self.plan_rate is not None and limits[0] < self.plan_rate,
            "blocked_until": self.blocked_until if self.blocked_until > now else None,
        }
        if self.quota_until > now:
            out["quota_closed_until"] = self.quota_until
            out["quota_next_trial_at"] = self.quota_trial_at
        return out


@dataclass(frozen=True)
class Ask:
    """Which window a request asks a start in: an upstream, its family, the plan to assume if none is stored.

    ``primary`` names the family whose plan governs the upstream's one window over every family's starts
    (Brave meters a key's requests in one window); a request of another family must fit its own family's
    window as well as that one. ``pinned`` is an explicit setting, which wins over any stored plan.
    """

    upstream: str
    family: str = ""
    init: PlanState = PlanState()
    primary: str | None = None
    pinned: tuple[float, int] | None = None
    margin: tuple[float, float] = (WINDOW_MARGIN_FACTOR, WINDOW_MARGIN_SECONDS)  # EXACT for an exact counter

    @property
    def own(self) -> str:
        """Storage name of this family's plan and starts."""
        return f"{self.upstream}|{self.family}"

    @property
    def shared(self) -> str | None:
        """Storage name of the upstream's one window (the primary family's), when it is another family's."""
        if self.primary is None or self.primary == self.family:
            return None
        return f"{self.upstream}|{self.primary}"


@dataclass(frozen=True)
class Decision:
    """The answer to one reservation: granted now, or when to ask again and why; the plan after it; whether the
    stored plan was dropped (not ``trusted``) and rebuilt from the family's initial one; whether a granted start
    fills the key's window as the recorded starts count it (``fills``): then a spent window its answer reports is
    ours, and the window rule already holds the next start until the window's oldest start ages out; ``token``:
    the granted start's name in a store that names its starts (Redis), for ``retime``."""

    granted: bool
    ready: float
    reason: str
    plan: PlanState
    dropped: bool = False
    full: bool = False
    token: str = ""


def horizon(
    rate: float, burst: int, margin: tuple[float, float] = (WINDOW_MARGIN_FACTOR, WINDOW_MARGIN_SECONDS)
) -> float:
    """How old a start must be before its slot is free again (the window plus the safety margin)."""
    return burst / rate * margin[0] + margin[1]


def window_ready(starts: Sequence[float], limits: tuple[float, int], margin: tuple[float, float]) -> float:
    """When the window lets one more start in, given the recent starts (ascending); minus infinity: now."""
    rate, burst = limits
    if len(starts) < burst:
        return NEVER
    return starts[-burst] + horizon(rate, burst, margin)


def fills(starts: Sequence[float], limits: tuple[float, int] | None, now: float, margin: tuple[float, float]) -> bool:
    """Whether a start at ``now`` fills the window ``limits`` describes: with it, ``burst`` starts are younger than
    the window's horizon. Reads one position from the end (the stores hand lazy sequences); False: no plan known."""
    if limits is None:
        return False
    rate, burst = limits
    if burst <= 1:
        return True
    return len(starts) >= burst - 1 and starts[-(burst - 1)] > now - horizon(rate, burst, margin)


def plan_ready(plan: PlanState, starts: Sequence[float], now: float, margin: tuple[float, float]) -> float | None:
    """When the plan's window, and its spread while penalised, let one more start in; None: no plan known."""
    limits = plan.in_force(now)
    if limits is None:
        return None
    at = window_ready(starts, limits, margin)
    spread = plan.spread(now)
    return at if spread is None else max(at, window_ready(starts, spread, EXACT))


def decide(
    ask: Ask,
    own: PlanState,
    own_starts: Sequence[float],
    now: float,
    *,
    shared: PlanState | None = None,
    shared_starts: Sequence[float] = (),
) -> Decision:
    """May a request start at ``now``? The quota gate, pauses, the probe, then the window(s). A stored plan that
    is not ``trusted`` is rebuilt from ``ask.init`` (own) or ignored (the shared one: its family rebuilds it)."""
    dropped = not own.trusted(now)
    if dropped:
        own = ask.init
    if shared is not None and not shared.trusted(now):
        shared = None
    if own.gate_closed(now):
        return Decision(False, min(own.quota_until, own.quota_trial_at), QUOTA, own, dropped)
    ready, reason = now, OK
    pauses = [own.blocked_until, shared.blocked_until if shared is not None else NEVER]
    if max(pauses) > ready:
        ready, reason = max(pauses), PAUSED
    own_at = plan_ready(own.pinned(ask.pinned), own_starts, now, ask.margin)
    if own_at is None:
        if own.probe_until > ready:
            ready, reason = own.probe_until, PROBE
    elif own_at > ready:
        ready, reason = own_at, WINDOW
    shared_at = plan_ready(shared, shared_starts, now, ask.margin) if shared is not None else None
    if shared_at is not None and shared_at > ready:
        ready, reason = shared_at, WINDOW
    if ready > now:
        return Decision(False, ready, reason, own, dropped)
    plan = own
    if own_at is None:
        plan = replace(plan, probe_until=now + PROBE_HOLD_SECONDS)
    if own.quota_until > now:
        plan = replace(plan, quota_trial_at=now + own.quota_every)
    # The key's one window, as the upstream's headers describe it: the primary family's when this is another one.
    if ask.shared is not None:
        full = fills(shared_starts, shared.in_force(now) if shared is not None else None, now, ask.margin)
    else:
        full = fills(own_starts, own.pinned(ask.pinned).in_force(now), now, ask.margin)
    return Decision(True, now, OK, plan, dropped, full)


def matters_after(now: float, limits: tuple[float, int], margin: tuple[float, float]) -> float:
    """Starts at or before this time cannot delay a start at ``now``: the window in force and the spread (never
    longer) both end before then, a millisecond spare for rounding, so a store need not read them."""
    rate, burst = limits
    return now - max(horizon(rate, burst, margin), burst / rate) - 0.001


def keep_after(now: float, limits: tuple[float, int] | None, margin: tuple[float, float]) -> float:
    """Starts at or before this time can be forgotten."""
    window = horizon(*limits, margin) if limits is not None else 0.0
    return now - max(window, KEEP_STARTS_SECONDS)


def _float(number: float) -> float:
    """``number`` as a float; an integer too large for one is infinite (JSON holds any integer)."""
    try:
        return float(number)
    except OverflowError:
        return math.inf


def check_limits(rate: float, burst: int) -> None:
    """Refuse limits no limiter can honour (zero, negative, NaN, beyond any plan, fractional burst)."""
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not math.isfinite(rate) or rate <= 0:
        raise ValueError(f"rate must be a positive number of requests per second, got {rate!r}")
    if rate > MAX_RATE:
        raise ValueError(f"rate must be at most {MAX_RATE:g} requests per second, got {rate!r}")
    if isinstance(burst, bool) or not isinstance(burst, int) or not 1 <= burst <= MAX_BURST:
        raise ValueError(f"burst must be a whole number from 1 to {MAX_BURST}, got {burst!r}")
