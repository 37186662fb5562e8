"""Whether a request may go out now: the quota gate, the spending cap, demanded pauses, the queue and its deadline.

Every upstream request passes one ``Admission`` before it is sent (``admit``) and reports how it ended
(``observe``, ``succeeded``, ``refused``, ``failed``), which turns what the upstream said into plan changes
in the shared state. Every refusal here sends nothing and answers at once with the typed error an agent can
act on (``QUOTA_EXCEEDED`` naming the reset or the cap; ``RATE_LIMITED`` with ``retry_after_ms``) instead
of letting the call sit until its deadline. A call is refused for the queue's length only when the plan's
rate is known: while it is being learned, calls wait for the probe's answer instead of a guess. An unexpected
failure inside admission (a bug, a value nothing validated) never fails the call: it goes out without it, one
warning is logged and the status tool names it (``degrades``).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio

from brave_search_mcp.clock import Clock, moved
from brave_search_mcp.logs import OnceEach
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.ratelimit.limiter import GateClosed, Grant, Limiter
from brave_search_mcp.ratelimit.plan import PENALTY_WINDOW_SECONDS, QUOTA_TRIAL_SECONDS, PlanState, horizon
from brave_search_mcp.render.text import seconds_text
from brave_search_mcp.upstream.retry import MAX_SERVER_WAIT_SECONDS, start_margin

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

# Without a reset figure, a used-up quota is re-checked after this long.
DEFAULT_QUOTA_PAUSE_SECONDS = 60.0
CAP_SETTING = "BRAVE_SEARCH_MONTHLY_REQUESTS"
TRIAL_SETTING = "BRAVE_SEARCH_QUOTA_RETRY_SECONDS"
COUNTER_DAYS = 40  # a month's counter outlives its month
# A request that left up to this after another may arrive first (the network's jitter): a spent window counts both.
ARRIVAL_SLACK_SECONDS = 0.01


def when(seconds: float) -> str:
    """Wall-clock ISO time ``seconds`` from now, for a reader."""
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def utc_month() -> str:
    """The calendar month of UTC now, e.g. ``2026-11`` (read on every booking: formatted without strftime)."""
    now = datetime.now(UTC)
    return f"{now.year:04d}-{now.month:02d}"


def _pause(plan: PlanState, now: float, demanded: float) -> float:
    """How long every start waits after a 429: what the upstream demanded, except that a 429 forgiven as jitter
    (``PlanState.contradicted``) waits one slot of the plan in force when the demand is the per-second window's
    own reset (Brave rounds it up to 1 s): the window rule holds the rest, and a whole second would cost a burst
    at 20/s twenty starts for each such 429. A longer demand (``Retry-After: 30``) is obeyed in full."""
    limits = plan.in_force(now)
    if limits is None or demanded > PENALTY_WINDOW_SECONDS or not plan.forgiven(now):
        return demanded
    return min(demanded, 1.0 / limits[0])


def _rate_limited(message: str, wait: float) -> errors.RefusedBeforeSending:
    error = errors.RefusedBeforeSending(message, status=429, brave_code="RATE_LIMITED", retry_after=round(wait, 3))
    error.details.update(retry_after_ms=max(1, math.ceil(wait * 1000)), client_side=True)
    return error


class Budget:
    """The spending cap: requests the upstream answered this calendar month (UTC), per key, in the shared state.

    A request is booked before it is sent (so parallel calls and other processes cannot overshoot the cap)
    and given back when the upstream did not answer it with success: Brave bills only what it answered.
    """

    def __init__(self, limiter: Limiter, cap: int | None, *, month: Callable[[], str] = utc_month) -> None:
        self._limiter = limiter
        self.cap = cap
        self._month = month

    def _counter(self) -> str:
        return f"{self._limiter.ask.upstream}:month:{self._month()}"

    async def book(self) -> None:
        """Count one request, or raise ``QUOTA_EXCEEDED`` naming the cap and its setting."""
        now = self._limiter.clock()
        slots = self._limiter.slots
        booked, used = await slots.book(self._counter(), self.cap, now + COUNTER_DAYS * 86400.0, now)
        if booked:
            return
        month = self._month()
        error = errors.QuotaExceeded(
            f"The spending cap of {self.cap} requests per month ({CAP_SETTING}) is reached: {used} used in "
            f"{month} (UTC). Nothing was sent; cached results are still served. Raise {CAP_SETTING}, or wait for "
            "the next month.",
            status=429,
            details={"cap": self.cap, "used": used, "month": month, "setting": CAP_SETTING, "client_side": True},
        )
        raise error

    async def unbook(self) -> None:
        """Give a booked request back (not answered, not billed); never cancelled half-way."""
        with anyio.CancelScope(shield=True):
            await self._limiter.slots.unbook(self._counter())

    async def snapshot(self) -> dict[str, Any]:
        """Requests used this month and the cap."""
        used = await self._limiter.slots.count(self._counter(), self._limiter.clock())
        return {"month": self._month(), "requests": used, "cap": self.cap}


@dataclass(frozen=True)
class Ticket:
    """What ``Admission.admit`` let out, for ``settle``: whether the spending cap counted it, whether it was queued;
    the start its queue granted (None: not queued), which ``left`` moves to when the request left and whose
    ``full`` tells ``observe`` whether a spent window is ours (``Decision.full``)."""

    booked: bool
    queued: bool
    grant: Grant | None = None


def degrades(
    default: R,
) -> Callable[[Callable[Concatenate[Admission, P], Awaitable[R]]], Callable[Concatenate[Admission, P], Awaitable[R]]]:
    """An Admission step that returns ``default`` instead of raising anything but a typed refusal (or cancellation):
    the call goes on without admission's help, and ``Admission.fault`` says why until the same step works again."""

    def wrap(
        step: Callable[Concatenate[Admission, P], Awaitable[R]],
    ) -> Callable[Concatenate[Admission, P], Awaitable[R]]:
        async def run(self: Admission, /, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                result = await step(self, *args, **kwargs)
            except errors.BraveSearchError:
                self.recovered(step.__name__)  # a typed refusal: the step did its work
                raise
            except Exception as exc:
                self.faulted(step.__name__, exc)
                return default
            self.recovered(step.__name__)
            return result

        functools.update_wrapper(run, step)
        return run

    return wrap


class Admission:
    """The gatekeeper in front of one upstream family's queue."""

    def __init__(
        self,
        limiter: Limiter,
        *,
        clock: Clock,
        adaptive: bool,
        burst_cap: int | None = None,
        budget: Budget | None = None,
        quota_trial_seconds: float = QUOTA_TRIAL_SECONDS,
    ) -> None:
        self.limiter = limiter
        self._clock = clock  # the caller's clock (deadlines, observed_at); the limiter may run on another
        self._adaptive = adaptive  # headers set the plan, a contradicting 429 lowers it (not under an explicit setting)
        self._burst_cap = burst_cap
        self.budget = budget
        self._trial_every = quota_trial_seconds
        self._warnings = OnceEach(logger)
        self._faults: dict[str, str] = {}  # per step, its last unexpected failure while it lasts (``degrades``)

    @property
    def fault(self) -> str | None:
        """The latest unexpected failure of a step that has not worked since, for the status tool (None: none)."""
        return next(reversed(self._faults.values()), None)

    def faulted(self, step: str, exc: Exception) -> None:
        """An unexpected failure in ``step``: logged (the first of each step with its trace), named in the status
        tool until the step works again."""
        label = self.limiter.label
        message = "%s admission failed in %s; calls go on without it"
        self._warnings.warn(f"fault:{step}", message, label, step, exc_info=exc)
        self._faults.pop(step, None)  # the latest last
        self._faults[step] = f"{label} {step}: {type(exc).__name__}: {exc}"[:300]

    def recovered(self, step: str) -> None:
        """``step`` worked: a failure it had is over, and status stops naming it."""
        if self._faults:
            self._faults.pop(step, None)

    def _there(self, t: float) -> float:
        """A time on the caller's clock, on the limiter's."""
        return moved(t, self._clock, self.limiter.clock)

    # -- before a request -----------------------------------------------------------------------

    def check(self, deadline: float | None, *, queue: bool = True) -> None:
        """Refuse at once, by the plan last seen, what cannot go out in time (nothing is sent on refusal)."""
        now = self.limiter.clock()
        plan = self.limiter.plan
        if plan.gate_closed(now):
            raise self._quota_error(min(plan.quota_until, plan.quota_trial_at) - now, plan)
        if deadline is None:
            return
        end = self._there(deadline)
        margin = start_margin(end - now)
        pause = plan.blocked_until - now
        if pause > 0 and now + pause > end - margin:
            raise _rate_limited(
                f"The {self.limiter.label} API asked this key to pause for {pause:.1f} s, longer than this call may "
                "wait; nothing was sent. Retry after that.",
                pause,
            )
        start = self.limiter.estimate() if queue else None
        if start is not None and start > now and start > end - margin:
            rate = self.limiter.in_force()
            wait = start - now
            raise _rate_limited(
                f"{self.limiter.waiting} calls are queued for this key's rate of {rate[0] if rate else 0:g}/s; this "
                f"call could not start for {wait:.1f} s, past its deadline, so nothing was sent. Retry after that, "
                "or send fewer at once.",
                wait,
            )

    @degrades(Ticket(booked=False, queued=False))
    async def admit(self, deadline: float | None, *, queue: bool = True) -> Ticket:
        """Check, book the spending cap, then wait in the queue; the ticket goes to ``settle`` once the request
        ended, however it ended."""
        self.check(deadline, queue=queue)
        booked = False
        if self.budget is not None:
            await self.budget.book()
            booked = True
        grant = None
        try:
            if queue:
                end = None if deadline is None else self._there(deadline)
                grant = await self.limiter.acquire(deadline=end, answers=True)
        except GateClosed as closed:
            if booked:
                await self.budget.unbook()  # type: ignore[union-attr]
            raise self._quota_error(closed.wait, closed.plan) from None
        except BaseException:
            if booked:
                await self.budget.unbook()  # type: ignore[union-attr]
            raise
        return Ticket(booked, queue, grant)

    @degrades(None)
    async def left(self, ticket: Ticket, at: float) -> None:
        """The request ``ticket`` let out has left (``at``, on the caller's clock: its bytes are written): a start it
        left late for is counted from then (``Limiter.retime``), as the upstream counts it."""
        if ticket.grant is not None:
            await self.limiter.retime(ticket.grant, self._there(at))

    @degrades(None)
    async def settle(self, ticket: Ticket, *, answered: bool) -> None:
        """After the request: the queue learns it is out no more; a booked one the upstream did not answer with
        success is given back."""
        if ticket.queued:
            self.limiter.answered()
        if ticket.booked and not answered and self.budget is not None:
            await self.budget.unbook()

    def _quota_error(self, wait: float, plan: PlanState) -> errors.QuotaExceeded:
        now = self.limiter.clock()
        reset = max(0.0, plan.quota_until - now)
        error = errors.QuotaExceeded(
            f"This key's monthly {self.limiter.label} quota is used up; it resets in about {seconds_text(reset)} (at "
            f"{when(reset)}). Nothing was sent; cached results are still served. One request is let through every "
            f"{seconds_text(plan.quota_every)} ({TRIAL_SETTING}) to notice a plan upgrade or an early reset.",
            status=429,
            brave_code="QUOTA_LIMITED",
            retry_after=round(reset, 3),  # when a retry surely helps; the trial may find the quota back sooner
        )
        error.details.update(
            resets_at=when(reset),
            reset_seconds=round(reset),
            next_trial_seconds=round(max(0.0, wait)),
            client_side=True,
        )
        return error

    # -- after an answer ------------------------------------------------------------------------

    async def _change(self, change: Callable[[PlanState], PlanState]) -> None:
        """A plan transition, written only when it changes the plan as last seen (most answers change nothing)."""
        if change(self.limiter.plan) == self.limiter.plan:
            return
        await self.limiter.change(change)

    @degrades(None)
    async def observe(self, info: RateLimitInfo, *, limited: bool = False, ticket: Ticket | None = None) -> None:
        """Learn the plan from the headers, honour a spent per-second window, and open or close the quota gate.
        Values the headers held outside any plan's range were left out when they were read: one warning says so.
        ``limited``: the answer is a 429, whose spent window says nothing more than the refusal (``refused``
        decides its pause). ``ticket``: what ``admit`` let out for this request (None: not known)."""
        if info.ignored:
            self._warnings.warn(
                "headers",
                "The %s API sent rate-limit figures no plan has (%s); they were ignored (logged once).",
                self.limiter.label,
                "; ".join(info.ignored),
            )
        if self._adaptive and info.per_second is not None and info.per_second > 0:
            burst = max(1, int(info.per_second))
            burst = min(self._burst_cap or burst, burst)
            rate = info.per_second
            await self._change(lambda p: p.learned_as(rate, burst))
        now = self.limiter.clock()
        if info.limit_month and info.remaining_month == 0:
            reset = info.reset_month_seconds if info.reset_month_seconds is not None else DEFAULT_QUOTA_PAUSE_SECONDS
            until = self._there(info.observed_at) + max(0.0, reset)
            await self._change(lambda p: p.quota_closed(until, now, self._trial_every) if until > p.quota_until else p)
        elif info.remaining_month is not None:
            await self._change(lambda p: p.quota_opened())
        # A spent window our recorded starts do not explain (another program used the key) frees its next slot
        # within the reset of when the request was sent (Brave counts it on arrival; counted from its answer, each
        # answer's latency would be added to every window: issue 36), with the window rule's margin (Brave rounds
        # the reset up to whole seconds). One they explain (``_ours``) pauses nothing: the window rule already holds
        # the next start until the window's oldest start ages out, up to a whole window before that reset.
        if (
            info.remaining_second == 0
            and info.reset_seconds is not None
            and not limited
            and not await self._ours(info, ticket)
        ):
            factor, extra = self.limiter.ask.margin
            wait = min(info.reset_seconds * factor + extra, MAX_SERVER_WAIT_SECONDS)
            until = self._there(info.observed_at) + wait
            await self._change(lambda p: p.blocked(until))
        if not limited:  # what it stated is stored: this process's held starts go (a 429: once ``refused`` paused)
            self.limiter.heard()

    async def _ours(self, info: RateLimitInfo, ticket: Ticket | None) -> bool:
        """Whether the window an answer reports spent is full of this key's recorded starts: the request's start
        filled it as it was booked (``Decision.full``), or the starts recorded up to when it left do (requests booked
        after it may arrive first, and Brave counted them). Starts are when requests left (``left``), so the rule and
        Brave count the same window; an answer without the plan is read by the plan in force."""
        grant = ticket.grant if ticket is not None else None
        if grant is None or grant.full:
            return grant is not None
        per_second = info.per_second
        limits = self.limiter.in_force() if per_second is None else (per_second, max(1, int(per_second)))
        if limits is None:
            return False
        sent, now = self._there(info.observed_at), self.limiter.clock()
        since = sent - horizon(*limits, self.limiter.ask.margin)
        return await self.limiter.slots.started(self.limiter.ask, since, sent + ARRIVAL_SLACK_SECONDS, now) >= limits[1]

    @degrades(None)
    async def succeeded(self) -> None:
        """A clean answer: the plan stored is this process's now (``Limiter.heard``); a probe without headers frees
        the next one."""
        await self._change(lambda p: p.probe_released())
        self.limiter.heard()

    @degrades(None)
    async def failed(self) -> None:
        """No answer worth learning from (a network error, a 5xx without headers): a pending probe is freed."""
        await self._change(lambda p: p.probe_released())

    @degrades(None)
    async def refused(self, error: errors.BraveSearchError) -> None:
        """The upstream said no: a spent month closes the gate; a 429 pauses every start and lowers the rate."""
        now = self.limiter.clock()
        if isinstance(error, errors.QuotaExceeded):
            wait = error.retry_after if error.retry_after is not None else DEFAULT_QUOTA_PAUSE_SECONDS
            await self.limiter.change(lambda p: p.quota_closed(now + wait, now, self._trial_every).probe_released())
            error.details.setdefault("resets_at", when(wait))
        elif isinstance(error, errors.RateLimited):
            demanded = min(error.retry_after if error.retry_after is not None else 1.0, MAX_SERVER_WAIT_SECONDS)
            adaptive = self._adaptive

            def refused(plan: PlanState) -> PlanState:
                plan = plan.contradicted(now).probe_released() if adaptive else plan.probe_released()
                return plan.blocked(now + _pause(plan, now, demanded))

            await self.limiter.change(refused)
            self.limiter.heard()
        else:
            await self.failed()

    @degrades(None)
    async def look(self) -> None:
        """At the process's start: whether a plan is stored yet (``Limiter.look``), so one the other processes
        learn from now on is in force here in full too."""
        await self.limiter.look()

    # -- status ---------------------------------------------------------------------------------

    async def snapshot(self) -> dict[str, Any]:
        """The rate in force, the plan, pauses, the quota gate and the month's requests, for the status tool."""
        plan = await self.limiter.snapshot()
        now = self.limiter.clock()
        report: dict[str, Any] = {
            "rate_in_force_per_second": plan["rate"],
            "plan_per_second": plan["plan_rate"],
            "burst": plan["burst"],
            "at_once": plan["at_once"],
            "plan_stated": plan["stated"],
            "queued": plan["waiting"],
            "backend": plan["backend"],
        }
        if plan["blocked_until"] is not None:
            report["paused_for_seconds"] = round(plan["blocked_until"] - now, 1)
            report["paused_until"] = when(plan["blocked_until"] - now)
        if "quota_closed_until" in plan:
            wait = plan["quota_closed_until"] - now
            report["quota_exhausted"] = {
                "resets_in_seconds": round(wait),
                "resets_at": when(wait),
                "next_trial_in_seconds": round(max(0.0, plan["quota_next_trial_at"] - now)),
            }
        if self.budget is not None:
            report["month"] = await self.budget.snapshot()
        if self.fault is not None:
            report["fault"] = self.fault
        return report
