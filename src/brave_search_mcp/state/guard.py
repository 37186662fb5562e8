"""Whether a shared store works now: after a failure calls use per-process memory, and one call at a time tries again.

Any exception inside a store operation counts as a failure, not only the ones a backend names: a store that answers
something this version cannot read, or a bug on the way, degrades the call to memory instead of failing it. While the
store is down, one call at a time tries it again (the others go on on memory, so a store that hangs costs one call
its timeout, not every call): the first try 0.25 s after the failure, then every 0.5 s for the first 5 s of the
outage (a Redis restarted in 2 s is used again within half a second of its return: meanwhile every replica runs
on its own memory and its own cache), then each next try twice as long after the last, up to ``retry_interval``
(one down for long is asked rarely); the first that succeeds brings every call back to the store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from brave_search_mcp.clock import Clock
from brave_search_mcp.state.base import StoreUnavailable

logger = logging.getLogger(__name__)
T = TypeVar("T")

FIRST_PROBE_SECONDS = 0.25  # after a failure, the first try of the store; each failed try doubles the wait...
EARLY_PROBE_SECONDS = 0.5  # ...but early in an outage tries are never further apart than this (one call each)...
EARLY_SECONDS = 5.0  # ...for this long after it began


class Guard:
    """Tracks whether the store works; after a failure, callers use memory until the retry time, then one tries."""

    def __init__(
        self,
        name: str,
        *,
        clock: Clock,
        retry_interval: float,
        down: str | None = None,
        first_probe: float = FIRST_PROBE_SECONDS,
    ) -> None:
        self._name = name  # what fails and comes back: "sqlite state", "sqlite cache", "redis state"
        self._clock = clock
        self._retry_interval = retry_interval
        self._first_probe = min(first_probe, retry_interval)
        self._early_probe = max(self._first_probe, min(EARLY_PROBE_SECONDS, retry_interval))
        self._wait = self._first_probe  # before the next try; doubled by each failed one, up to the interval
        self._retry_at = float("-inf")
        self._back_at = float("-inf")  # when the store last came back
        self._down_at = float("-inf")  # when the outage began
        self._trying = False  # one call is trying the store again
        self.warning: str | None = None
        self.outages = 0  # how many times the store went down (each logged once)
        if down is not None:  # the store could not be opened: down from the start, tried again after the interval
            self._down(down)

    @property
    def degraded(self) -> bool:
        """True while the store is considered down."""
        return self.warning is not None

    @property
    def back_at(self) -> float:
        """When the store last came back after an outage (minus infinity: never)."""
        return self._back_at

    @property
    def ready(self) -> bool:
        """Whether the next call would be sent to the store (it is up, or due for a try that nobody is making)."""
        return self.warning is None or (not self._trying and self._clock() >= self._retry_at)

    def _down(self, reason: str) -> None:
        now = self._clock()
        if self.warning is None:
            self._down_at = now
        self._retry_at = now + self._wait
        early = now - self._down_at < EARLY_SECONDS
        self._wait = min(self._wait * 2, self._early_probe if early else self._retry_interval)
        if self.warning is None:
            self.outages += 1
            self.warning = f"{self._name} unavailable ({reason}); using per-process memory until it returns"
            # A store that fails again soon after it came back (a full disk still reads) flaps with every quick try:
            # warned of once, each return and relapse within the interval after that only at INFO.
            again = self._clock() - self._back_at < self._retry_interval
            logger.log(logging.INFO if again else logging.WARNING, "%s", self.warning)

    async def call(self, op: Callable[[], Awaitable[T]]) -> T:
        """Run ``op`` on the store; StoreUnavailable (at once while the store is down) means: use memory."""
        trying = False
        if self.warning is not None:
            if self._trying or self._clock() < self._retry_at:
                raise StoreUnavailable(self.warning)
            self._trying = trying = True
        try:
            result = await op()
        except StoreUnavailable as exc:
            self._down(str(exc))
            raise
        except Exception as exc:  # not a named store failure: a bug or an answer this version cannot read
            if self.warning is None:
                logger.error("%s: unexpected failure, calls use per-process memory", self._name, exc_info=True)
            self._down(f"{type(exc).__name__}: {exc}"[:300])
            raise StoreUnavailable(str(exc)) from exc
        finally:
            if trying:
                self._trying = False
        if self.warning is not None:
            logger.info("%s is back; shared again", self._name)
            self.warning = None
            self._back_at = self._clock()
            self._wait = self._first_probe
        return result
