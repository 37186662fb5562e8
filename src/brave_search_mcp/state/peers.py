"""How many processes share a store, so that one which loses the store paces at its share of the plan meanwhile.

While the store answers, its ledger paces every process together. While it is down each process decides alone on
its own memory: at the full plan, N processes would send N times what the upstream allows (3 replicas on one key,
Redis gone for 2 s: Brave refused a dozen requests). So a process that reserves starts notes itself in the store
now and then (``BEAT_SECONDS``, on a reservation the store answered: no task, no work at rest) and reads how many
did so within ``ALIVE_SECONDS``; during an outage it grants its share of the plan's window (``share``). The plan
it keeps for the outage stays the full one: it seeds a store that comes back empty, and it is in force again, for
everyone, as soon as the store answers.
"""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import replace
from typing import Protocol

from brave_search_mcp.clock import Clock
from brave_search_mcp.ratelimit.plan import PENALTY_FLOOR_RATE, PlanState

logger = logging.getLogger(__name__)

BEAT_SECONDS = 2.0  # a process notes itself in the store at most this often...
FIRST_BEAT_SECONDS = 0.25  # ...once it has run a while: a new one beats again after this, then twice as long each
# time (a fleet started together learns its size within a second, before a store lost early leaves each alone)
ALIVE_SECONDS = 30.0  # a process not heard of for this long no longer counts (it stopped, or it sits idle)
HOLD_SECONDS = 3 * BEAT_SECONDS  # a lower count is believed once every count read for this long was lower: a
# store restarted empty counts one process, then each other as it beats again
MAX_PEERS = 1000  # a count beyond this is not a fleet: the store's answer is not used


class Heartbeat(Protocol):
    """A store's set of the processes that reserve starts in it (Redis: a sorted set; ``redis_peers``)."""

    async def beat(self, member: str, now: float, alive: float) -> int:
        """Note ``member`` as alive at ``now``, forget the members not heard of for ``alive`` seconds; how many are
        left (``member`` included)."""
        ...

    async def leave(self, member: str) -> None:
        """Forget ``member`` (its process ends)."""
        ...


class Peers:
    """This process's beat in its store and how many processes it last found there (1 until it has read a count, and
    without a heartbeat)."""

    def __init__(self, heartbeat: Heartbeat | None, *, clock: Clock) -> None:
        self._heartbeat = heartbeat
        self._clock = clock
        self.member = uuid.uuid4().hex  # this process (this backend) in the set: made afresh by each run
        self.count = 1
        self._due = -math.inf  # the next beat, on the first reservation the store answers at or after it
        self._period = FIRST_BEAT_SECONDS  # until the beat after the next
        self._low_since: float | None = None  # since when every count read was below ``count``

    async def beat(self) -> None:
        """Note this process in the store and read the count, if the last beat is old enough. Any failure
        keeps the last count: the beat never fails a reservation (the next store call finds an outage itself)."""
        now = self._clock()
        if self._heartbeat is None or now < self._due:
            return
        self._due = now + self._period
        self._period = min(self._period * 2, BEAT_SECONDS)
        try:
            n = await self._heartbeat.beat(self.member, now, ALIVE_SECONDS)
        except Exception as exc:  # a store failing just now, or an answer this version cannot read
            logger.debug("state: heartbeat failed (%s: %s); the last count of peers stays", type(exc).__name__, exc)
            return
        sound = isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_PEERS
        n = n if sound else 1
        if n < self.count and self._low_since is None:
            self._low_since = now
        if n >= self.count or (self._low_since is not None and now - self._low_since >= HOLD_SECONDS):
            self.count, self._low_since = n, None

    async def leave(self) -> None:
        """The process ends: its peers need not wait ``ALIVE_SECONDS`` to count without it."""
        if self._heartbeat is None or self._due == -math.inf:
            return
        try:
            await self._heartbeat.leave(self.member)
        except Exception as exc:  # down: its beat expires by itself
            logger.debug("state: heartbeat not removed (%s)", type(exc).__name__)


def share(plan: PlanState, peers: int) -> PlanState:
    """``plan`` as one of ``peers`` processes deciding alone may use it: burst and rate divided (``share_limits``),
    a penalty's rate as the plan's. A plan no rule makes is left as it is, for the rule to drop."""
    if peers <= 1 or plan.plan_rate is None:
        return plan
    try:
        plan.check()
    except ValueError:
        return plan
    rate, burst = share_limits((plan.plan_rate, plan.plan_burst), peers)
    penalty = None if plan.penalty_rate is None else _share_rate(plan.penalty_rate, rate / plan.plan_rate)
    return replace(plan, plan_rate=rate, plan_burst=burst, penalty_rate=penalty)


def share_limits(limits: tuple[float, int], peers: int) -> tuple[float, int]:
    """(rate, burst) of one of ``peers`` processes: the burst divided, rounded down (at least 1), and the rate as
    the burst, so the window keeps its length and its margin (50/s in bursts of 50 among 3: 16/s in bursts of 16,
    not 16.7/s, whose 0.96 s window left Brave's 1 s window 42 ms of margin), never more than its share of the
    rate; never below ``PENALTY_FLOOR_RATE`` unless the plan is, never above the plan."""
    rate, burst = limits
    if peers <= 1:
        return limits
    part = max(1, burst // peers)
    return _share_rate(rate, min(part / burst, 1 / peers)), part


def unshared(decided: PlanState, plan: PlanState) -> PlanState:
    """A plan decided on the share, with ``plan``'s own numbers back: what is kept is always the full plan."""
    return replace(decided, plan_rate=plan.plan_rate, plan_burst=plan.plan_burst, penalty_rate=plan.penalty_rate)


def _share_rate(rate: float, part: float) -> float:
    return max(min(PENALTY_FLOOR_RATE, rate), rate * part)
