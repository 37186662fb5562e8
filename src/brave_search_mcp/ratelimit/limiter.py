"""The one queue every upstream's requests wait in, over the numbers a state backend stores.

A ``Limiter`` is one upstream family's queue in this process: callers wait first come first served, and
only the head asks the backend (``SlotStore.reserve``) for a start, so the backend decides with the one
rule set (``plan.decide``) against every process's recent starts. The head sleeps exactly until the time
the backend named (woken early when this process learns something that changes it), and a caller whose
start would fall after its deadline is refused at once with ``SlotUnavailable`` instead of sitting on it.

A plan learned from answers is in force in full from the answer that states it. A process that finds one stored
that no answer has stated to it (an earlier run's, or one another process learned before this one first looked:
at its start, ``look``, or at its first reservation) sends
its first request alone and adopts what that answer states (``heard``): a plan that shrank since costs at most
one refused request, and a plan still true costs one round trip, once per process.
"""

from __future__ import annotations

import bisect
import logging
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import anyio

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.logs import OnceEach
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.plan import PROBE, QUOTA, Ask, Decision, PlanState, horizon, plan_ready

logger = logging.getLogger(__name__)

PROBE_POLL_SECONDS = 0.05  # while another process's probe is out, look again this often
MIN_SLEEP_SECONDS = 0.0005
SHARED_JITTER_SECONDS = 0.002  # processes woken for the same slot do not all hit the store at once
# A request that leaves within this of its booking is counted from its booking (no store call): well inside the
# window rule's margin (85 ms on Brave's second), which is for lags that differ between two starts.
LATE_SECONDS = 0.01
OWN_STARTS_KEPT, OWN_STARTS_SECONDS = 4096, 60.0  # this process's own starts kept for estimates: at most, and how long


class SlotUnavailable(errors.RefusedBeforeSending):
    """The limiter cannot start this call before its deadline: fail now with the wait instead of sitting on it."""

    def __init__(self, retry_after: float, upstream: str) -> None:
        wait = max(0.0, retry_after)
        super().__init__(
            f"The {upstream} rate limit is fully booked until after this call's deadline; nothing was sent. "
            f"Retry in {wait:.2f} s.",
            status=429,
            brave_code="RATE_LIMITED",
            retry_after=round(wait, 3),
            details={"client_side": True},
        )
        self.details["retry_after_ms"] = max(1, math.ceil(wait * 1000))
        self.retry_after = wait


class GateClosed(Exception):
    """The quota gate is closed: the month is spent and this is not the moment for the next trial request."""

    def __init__(self, wait: float, plan: PlanState) -> None:
        super().__init__(f"quota gate closed for {wait:.0f} s")
        self.wait = wait
        self.plan = plan


@dataclass(frozen=True)
class Grant:
    """A start ``Limiter.acquire`` won: how long its caller waited, and whether it filled the key's window as the
    store counts starts (``Decision.full``: a spent window its answer reports is then ours, see ``Admission``);
    when it was booked (on the limiter's clock) and its store's name for it, so ``Limiter.retime`` can move it."""

    waited: float
    full: bool = False
    at: float = math.nan
    token: str = ""


class SlotNumbers(Protocol):
    """The rate limiter's numbers a store keeps: plans, recent starts, monthly counters (each call atomic)."""

    async def reserve(self, ask: Ask, now: float) -> Decision:
        """Run ``plan.decide`` on the stored plan(s) and starts; record the start when granted."""
        ...

    async def modify(self, ask: Ask, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Apply ``change`` to the stored plan of ``ask``'s family atomically and return the result."""
        ...

    async def retime(self, ask: Ask, at: float, token: str, sent: float, now: float) -> None:
        """The start ``reserve`` granted at ``at`` (named ``token`` where the store names starts) left at ``sent``:
        the window counts it from then (once; a start no longer kept is left alone). ``now``: the caller's clock."""
        ...

    async def started(self, ask: Ask, since: float, until: float, now: float) -> int:
        """How many starts the key's window (``ask``'s primary family's) holds within ``(since, until]``."""
        ...

    async def book(self, counter: str, cap: int | None, expires: float, now: float) -> tuple[bool, int]:
        """Count one request if ``cap`` allows it; (booked, count after). ``expires``: when the counter goes."""
        ...

    async def unbook(self, counter: str) -> None:
        """Give one booked request back (it was not answered, so it is not billed)."""
        ...

    async def count(self, counter: str, now: float) -> int:
        """Requests counted so far."""
        ...


@runtime_checkable
class SlotStore(SlotNumbers, Protocol):
    """What a state backend hands the limiter: the numbers, its name, and whether they are shared and healthy."""

    name: str
    shared: bool  # other processes use the same numbers (poll with jitter; the plan may change elsewhere)

    @property
    def degraded(self) -> bool:
        """A shared store is down and this process runs on its own memory meanwhile."""
        ...

    def note_dropped(self, what: str, why: str) -> None:
        """A stored ``what`` the limiter refused and replaced (its warning is logged already): the status tool names
        it for a while (``state.base.DropLog``)."""
        ...


class _Arrived:
    """The turn of a caller who found the queue empty: it never waits for it, so it needs no event."""

    def set(self) -> None:
        """Nothing waits on it."""


class Limiter:
    """One upstream family's FIFO queue in this process; the head reserves starts in the backend."""

    def __init__(self, slots: SlotStore, ask: Ask, *, clock: Clock, sleep: Sleep, label: str = "upstream") -> None:
        self.slots = slots
        self.ask = ask
        self.clock = clock
        self._sleep = sleep
        self.label = label
        self.plan = ask.init  # as last seen in the backend
        self._queue: deque[anyio.Event | _Arrived] = deque()
        self._wake: anyio.CancelScope | None = None
        self._head_ready = -math.inf
        self._recent: list[float] = []  # this process's own starts (ascending), for estimates
        self._out = 0  # requests ``acquire(answers=True)`` let out that have not ended yet
        self._held = False  # the head waits for one of them to end
        # Whether the plan stored is one this process heard stated: a given plan needs no statement; a learned one
        # is heard in an answer here, or seen learned after this process saw none stored (stated meanwhile).
        self._stated = ask.init.learned
        self._saw_unknown = False
        self._warnings = OnceEach(logger)

    @property
    def waiting(self) -> int:
        """Callers queued here now."""
        return len(self._queue)

    def in_force(self) -> tuple[float, int] | None:
        """(rate, burst) in force by the plan last seen; None while unknown (the probe is pending)."""
        return self.plan.pinned(self.ask.pinned).in_force(self.clock())

    def at_once(self) -> tuple[float, int] | None:
        """(rate, how many may start together) by the plan last seen: the spread while it is penalised."""
        return self.plan.pinned(self.ask.pinned).at_once(self.clock())

    async def acquire(self, *, deadline: float | None = None, answers: bool = False) -> Grant:
        """Wait for a start in arrival order; the grant says the seconds waited and whether the start filled the window.

        ``SlotUnavailable`` at once when the backend's next start falls after ``deadline``; ``GateClosed`` when
        the quota gate refuses. Cancellation leaves the queue at once and hands the turn on. ``answers``: the
        caller reports the request's end (``answered``) and what the upstream said (``heard``), so while the plan
        stored has not been stated to this process its first request goes alone (``out_cap``).
        """
        started = self.clock()
        turn = anyio.Event() if self._queue else _Arrived()
        self._queue.append(turn)
        try:
            if not isinstance(turn, _Arrived):  # someone is ahead: wait until they hand the turn on
                await turn.wait()
            while True:
                now = self.clock()
                if answers and self._out >= self.out_cap():
                    wait = PROBE_POLL_SECONDS  # an answer wakes the head (``answered``); meanwhile it looks again
                    if deadline is not None and now + wait > deadline:
                        raise SlotUnavailable(wait, self.label)
                    self._held = True
                    try:
                        await self._nap(wait)
                    finally:
                        self._held = False
                    continue
                decision = await self.slots.reserve(self.ask, now)
                self._saw(decision.plan)
                if decision.dropped:
                    self._dropped()
                if decision.granted:
                    self._started(now)
                    self._out += answers
                    return Grant(max(0.0, now - started), decision.full, now, decision.token)
                self._head_ready = decision.ready
                if decision.reason == QUOTA:
                    raise GateClosed(decision.ready - now, decision.plan)
                wait = decision.ready - now
                if decision.reason == PROBE:
                    wait = min(wait, PROBE_POLL_SECONDS)  # the probe's answer frees it, in whichever process
                if deadline is not None and now + wait > deadline:  # the slot, or a probe, outlasts the deadline
                    raise SlotUnavailable(wait, self.label)
                if self.slots.shared:
                    wait += random.uniform(0, SHARED_JITTER_SECONDS)
                await self._nap(wait)
        finally:
            self._leave(turn)

    async def _nap(self, wait: float) -> None:
        """The head sleeps ``wait`` seconds, or until ``wake``."""
        with anyio.CancelScope() as wake:
            self._wake = wake
            try:
                await self._sleep(max(MIN_SLEEP_SECONDS, wait))
            finally:
                self._wake = None

    def out_cap(self) -> float:
        """How many of this process's requests may be out unanswered: one while the plan stored has not been
        stated to this process (its answer says whether it still holds), else no bound."""
        return math.inf if self.stated else 1

    @property
    def stated(self) -> bool:
        """Whether the plan in force is one this process heard stated (or was given: a setting, a known plan)."""
        return self._stated or self.ask.pinned is not None or not self.plan.learned

    def heard(self) -> None:
        """The upstream answered (what its headers stated, if anything, is adopted already): the plan stored is now
        this process's, and every start may go at its full rate."""
        if not self._stated:
            self._stated = True
            if self._held:
                self.wake()

    async def retime(self, grant: Grant, sent: float) -> None:
        """The request ``grant`` let out left at ``sent`` (this limiter's clock). One that left more than
        ``LATE_SECONDS`` after its booking is counted from then in the store every process reads: the upstream
        counts it on arrival, and a window that took it at its booking would free its slot that much too soon."""
        if sent - grant.at > LATE_SECONDS:  # not for a grant without a booking (NaN)
            await self.slots.retime(self.ask, grant.at, grant.token, sent, self.clock())

    def answered(self) -> None:
        """One request ``acquire(answers=True)`` let out has ended (answered, refused or failed)."""
        self._out = max(0, self._out - 1)
        if self._held:
            self.wake()

    def _started(self, now: float) -> None:
        self._head_ready = -math.inf
        recent = self._recent
        recent.append(now)
        if len(recent) > OWN_STARTS_KEPT or recent[0] < now - OWN_STARTS_SECONDS:
            cut = max(bisect.bisect_left(recent, now - OWN_STARTS_SECONDS), len(recent) - OWN_STARTS_KEPT)
            del recent[: min(cut, len(recent) - 1)]

    def _leave(self, turn: anyio.Event | _Arrived) -> None:
        if self._queue and self._queue[0] is turn:
            self._queue.popleft()
            self._head_ready = -math.inf
            if self._queue:
                self._queue[0].set()
        elif turn in self._queue:
            self._queue.remove(turn)

    def wake(self) -> None:
        """The plan changed here: let the head look again at once."""
        if self._wake is not None:
            self._wake.cancel()

    def estimate(self) -> float | None:
        """When a caller joining now could start if every caller ahead takes the next free slot of the plan in
        force; None while the plan is unknown (then no caller is refused for the queue's length)."""
        now = self.clock()
        effective = self.plan.pinned(self.ask.pinned)
        limits = effective.in_force(now)
        if limits is None:
            return None
        h = horizon(*limits, self.ask.margin)
        recent = self._recent  # only the newest ``burst`` starts still in the window matter to the rule
        starts = recent[max(bisect.bisect_right(recent, now - h), len(recent) - limits[1]) :]
        floor = max(now, self.plan.blocked_until, self._head_ready if self._queue else now)
        at = floor
        for _ in range(len(self._queue) + 1):
            ready = plan_ready(effective, starts, now, self.ask.margin)
            assert ready is not None  # the plan is in force
            at = max(floor, ready)
            starts.append(at)
        return at

    # -- plan changes, written through to the backend --------------------------------------------

    def _dropped(self) -> None:
        self._warnings.warn(
            "plan",
            "The stored rate-limit plan of %s held values no upstream sends (a broken header or record); it was "
            "dropped and is learned again from the next answer.",
            self.label,
        )

    def _checked(self, change: Callable[[PlanState], PlanState]) -> Callable[[PlanState], PlanState]:
        """``change`` applied to the stored plan, or to the family's initial one when the stored one is not
        ``trusted`` now (a pause of a year obeyed by ``check`` would refuse every call before any reservation)."""
        now = self.clock()
        noted: list[bool] = []  # memory and the store may each run it: one stored plan, one note

        def checked(plan: PlanState) -> PlanState:
            if not plan.trusted(now):
                if not noted:
                    noted.append(True)
                    self._dropped()
                    self.slots.note_dropped("rate-limit plan", "not a plan any rule makes")
                plan = self.ask.init
            return change(plan)

        return checked

    async def change(self, change: Callable[[PlanState], PlanState]) -> PlanState:
        """Apply a plan transition in the backend (every process sees it) and wake the head."""
        self.plan = await self.slots.modify(self.ask, self._checked(change))
        self.wake()
        return self.plan

    async def look(self) -> PlanState:
        """Read the plan stored now. A process that looks before any plan is stored (at its start, on a key never
        seen) counts one learned after that as stated to it: another process heard it meanwhile, so this one's first
        requests need not go alone (a fleet of replicas on a new key runs at the full plan from the first answer)."""
        plan = await self.slots.modify(self.ask, self._checked(lambda p: p))
        self._saw(plan)
        return plan

    def _saw(self, plan: PlanState) -> None:
        """The plan as the store holds it now: none yet (memory standing in for a store knows nothing of it), or
        one learned since this process saw none, so stated to it too (another process heard it meanwhile)."""
        self.plan = plan
        if not plan.learned:
            self._saw_unknown = self._saw_unknown or not self.slots.degraded
        elif self._saw_unknown:
            self._stated = True

    async def snapshot(self) -> dict[str, Any]:
        """The plan as stored now, how many wait here, and the backend's name."""
        plan = await self.look()
        out = plan.pinned(self.ask.pinned).snapshot(self.clock())
        return {
            **out,
            "backend": self.slots.name,
            "degraded": self.slots.degraded,
            "waiting": self.waiting,
            "pinned": self.ask.pinned is not None,
            "stated": self.stated,
        }
