"""A per-provider circuit breaker, so a dead upstream costs one fast skip instead of a timeout per call.

Written here (about 60 lines of logic) rather than taken from a library, after looking at the two
maintained-looking async ones: ``purgatory`` reads ``time.time()`` inside its state objects (no
injectable clock, so tests would sleep on real time) and lets *every* caller through while half-open;
``aiobreaker`` (last release 2021) reads ``datetime.now()`` and is asyncio-only, while this project runs
on anyio. The rules we need — exactly one half-open trial, failures counted per call after retries,
a status snapshot with the retry time — are small enough to own and test.

States: closed → (``threshold`` consecutive failures) → open → (``cooldown`` seconds) → half-open,
where exactly one trial call goes through and concurrent callers are refused; the trial's success
closes the breaker, its failure re-opens it for another cool-down. A provider that cannot work as configured
is not paused (waiting does not fix a setting) but remembered as ``misconfigured`` until it answers again, so the
status tool can name the cause in every process.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from brave_search_mcp.clock import Clock

__all__ = ["BreakerState", "CircuitBreaker"]

# What a breaker record shared by another process may hold (``adopt``): anything else is not one of ours.
MAX_FAILURES = 1_000_000
RECORD_AGE_SECONDS = 86_400.0  # records live a day (providers.chain)
CLOCK_SKEW_SECONDS = 300.0  # another host's wall clock may run this far ahead
MAX_ERROR_CHARS = 1_000


def _code(reason: str | None) -> str | None:
    """The error code a failure reason starts with (``"TIMEOUT: …"``)."""
    return None if reason is None else reason.partition(":")[0]


class BreakerState(StrEnum):
    """The three classic states, spelled as the status tool shows them."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Counts consecutive call failures of one provider and stops calling it for a while when they pile up."""

    def __init__(
        self,
        name: str,
        *,
        threshold: int = 3,
        cooldown: float = 60.0,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
    ) -> None:
        if threshold < 1:
            raise ValueError("threshold must be at least 1")
        if cooldown < 0:
            raise ValueError("cooldown must not be negative")
        self.name = name
        self.threshold = threshold
        self.cooldown = cooldown
        self._clock = clock
        self._wall_clock = wall_clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False
        self._repeats = 0  # of the consecutive failures, how many in a row ended like the last one (its code)
        self.last_error: str | None = None
        self.misconfigured: str | None = None  # why the provider cannot work as configured, until it answers

    @property
    def state(self) -> BreakerState:
        """The state now: an open breaker whose cool-down has passed reads as half-open."""
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._trial_in_flight or self._clock() >= self._opened_at + self.cooldown:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    @property
    def failures(self) -> int:
        """Consecutive failed calls so far (reset by a success)."""
        return self._failures

    @property
    def repeats(self) -> int:
        """How many of the consecutive failures ended like the last one: a pause is told as "timed out 3 times",
        which tells an agent whether waiting helps, not only as "failed 3 times"."""
        return self._repeats

    def retry_in(self) -> float:
        """Seconds until an open breaker lets its trial through (0 when calls may go now)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._opened_at + self.cooldown - self._clock())

    def allow(self) -> bool:
        """Ask to make one call: True means go (and report the outcome), False means skip this provider."""
        state = self.state
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.OPEN or self._trial_in_flight:
            return False
        self._trial_in_flight = True  # the one half-open trial; everyone else is refused until it reports
        return True

    def record_success(self) -> None:
        """The call worked (or the provider answered sensibly): close and forget past failures."""
        self._failures = 0
        self._repeats = 0
        self._opened_at = None
        self._trial_in_flight = False
        self.last_error = None
        self.misconfigured = None

    @property
    def pristine(self) -> bool:
        """Nothing to report: closed, no failure counted, no misconfiguration noted."""
        return self._opened_at is None and self._failures == 0 and self.misconfigured is None

    def record_misconfigured(self, reason: str) -> None:
        """The call failed on a setting: remember why, without counting it (only fixing the setting helps)."""
        self.misconfigured = reason
        self._trial_in_flight = False

    def record_configured(self) -> None:
        """A probe found the provider working as configured: the setting was fixed (failures are the calls' to
        count)."""
        self.misconfigured = None

    def record_failure(self, reason: str | None = None) -> None:
        """The call failed after its retries: count it, open at the threshold, re-open after a failed trial.
        ``reason`` is ``"CODE: message"``: failures in a row with one code are told as such ("timed out 3 times")."""
        same = self._failures > 0 and _code(reason) == _code(self.last_error)
        self._repeats = min(self._repeats + 1, self._failures + 1) if same else 1
        self._failures += 1
        self.last_error = reason
        if self._trial_in_flight or self._opened_at is not None or self._failures >= self.threshold:
            self._opened_at = self._clock()
        self._trial_in_flight = False

    def release(self) -> None:
        """The call ended without saying anything about the provider's health (cancelled, bad input)."""
        self._trial_in_flight = False

    def export(self) -> dict[str, Any]:
        """The state other processes adopt (times on the wall clock, which they share)."""
        opened = None if self._opened_at is None else self._wall_clock() - (self._clock() - self._opened_at)
        return {
            "failures": self._failures,
            "repeats": self._repeats,
            "opened_wall": opened,
            "last_error": self.last_error,
            "misconfigured": self.misconfigured,
        }

    def adopt(self, record: dict[str, Any]) -> None:
        """Take over what another process learned about this provider (its own half-open trial stays its own).

        ValueError (nothing adopted) for a record no process of this project wrote: a failure count that is not a
        whole number up to ``MAX_FAILURES``, an opening time that is not a finite wall time within a day of now, an
        error or a misconfiguration that is not short text."""
        failures = record.get("failures", self._failures)
        repeats = record.get("repeats", min(1, failures) if isinstance(failures, int) else 0)
        opened, error, setting = record.get("opened_wall"), record.get("last_error"), record.get("misconfigured")
        if isinstance(failures, bool) or not isinstance(failures, int) or not 0 <= failures <= MAX_FAILURES:
            raise ValueError(f"failures {str(failures)[:40]!r} is not a count up to {MAX_FAILURES}")
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 0 <= repeats <= failures:
            raise ValueError(f"repeats {str(repeats)[:40]!r} is not a count up to the failures")
        now = self._wall_clock()
        if opened is not None and (
            isinstance(opened, bool)
            or not isinstance(opened, int | float)
            or not math.isfinite(opened)
            or not now - RECORD_AGE_SECONDS <= opened <= now + CLOCK_SKEW_SECONDS
        ):
            raise ValueError(f"opened_wall {str(opened)[:40]!r} is not a time within a day of now")
        for name, text in (("last_error", error), ("misconfigured", setting)):
            if text is not None and (not isinstance(text, str) or len(text) > MAX_ERROR_CHARS):
                raise ValueError(f"{name} is not text of at most {MAX_ERROR_CHARS} characters")
        self._failures, self._repeats = failures, repeats
        self._opened_at = None if opened is None else self._clock() - (now - float(opened))
        self.last_error, self.misconfigured = error, setting

    def snapshot(self) -> dict[str, Any]:
        """What the status tool shows: state, failure count and, when open, when it will be tried again."""
        state = self.state
        data: dict[str, Any] = {
            "state": state.value,
            "failures": self._failures,
            "threshold": self.threshold,
            "cooldown_seconds": self.cooldown,
        }
        if self._opened_at is not None:
            wait = self.retry_in()
            data["retry_in_seconds"] = round(wait, 3)
            data["retry_at"] = datetime.fromtimestamp(self._wall_clock() + wait, UTC).isoformat(timespec="seconds")
        if self.last_error:
            data["last_error"] = self.last_error
        if self.misconfigured:
            data["misconfigured"] = self.misconfigured
        return data
