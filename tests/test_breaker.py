"""The circuit breaker: opens after N failed calls, lets exactly one trial through after the cool-down."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from brave_search_mcp.providers.breaker import CircuitBreaker
from testkit.clock import FakeClock

WALL = 1_700_000_000.0


def make(clock: FakeClock, threshold: int = 3, cooldown: float = 60.0) -> CircuitBreaker:
    return CircuitBreaker("brave", threshold=threshold, cooldown=cooldown, clock=clock, wall_clock=lambda: WALL)


def state(breaker: CircuitBreaker) -> str:
    """Read through a function so each assertion re-reads the (clock-dependent) state."""
    return breaker.state.value


def test_stays_closed_below_the_threshold_and_opens_at_it(clock: FakeClock) -> None:
    breaker = make(clock)
    for _ in range(2):
        assert breaker.allow()
        breaker.record_failure("TIMEOUT: slow")
    assert state(breaker) == "closed" and breaker.allow()
    breaker.record_failure("TIMEOUT: slow")
    assert state(breaker) == "open"
    assert breaker.allow() is False
    assert breaker.retry_in() == 60.0


def test_a_success_resets_the_consecutive_count(clock: FakeClock) -> None:
    breaker = make(clock)
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    breaker.record_failure()
    assert state(breaker) == "closed"
    assert breaker.failures == 2


def test_open_refuses_until_the_cooldown_then_half_open_lets_exactly_one_trial(clock: FakeClock) -> None:
    breaker = make(clock)
    for _ in range(3):
        breaker.record_failure()
    clock.now += 59.9
    assert breaker.allow() is False
    clock.now += 0.1
    assert state(breaker) == "half_open"
    assert breaker.allow() is True  # the trial
    assert breaker.allow() is False  # concurrent callers are refused while it runs
    assert breaker.allow() is False
    assert state(breaker) == "half_open"


def test_trial_success_closes(clock: FakeClock) -> None:
    breaker = make(clock)
    for _ in range(3):
        breaker.record_failure()
    clock.now += 60
    assert breaker.allow()
    breaker.record_success()
    assert state(breaker) == "closed"
    assert breaker.failures == 0
    assert all(breaker.allow() for _ in range(5))


def test_trial_failure_reopens_for_a_full_cooldown(clock: FakeClock) -> None:
    breaker = make(clock)
    for _ in range(3):
        breaker.record_failure()
    clock.now += 61
    assert breaker.allow()
    breaker.record_failure("UPSTREAM_ERROR: 503")
    assert state(breaker) == "open"
    assert breaker.retry_in() == 60.0
    assert breaker.allow() is False
    assert breaker.failures == 4


def test_released_trial_frees_the_slot_for_another_trial(clock: FakeClock) -> None:
    breaker = make(clock)
    for _ in range(3):
        breaker.record_failure()
    clock.now += 60
    assert breaker.allow()
    breaker.release()  # e.g. cancelled: says nothing about the provider
    assert breaker.allow() is True
    assert breaker.allow() is False


def test_threshold_one_opens_on_the_first_failure(clock: FakeClock) -> None:
    breaker = make(clock, threshold=1, cooldown=5)
    breaker.record_failure()
    assert state(breaker) == "open"


def test_snapshot_for_the_status_tool(clock: FakeClock) -> None:
    breaker = make(clock)
    assert breaker.snapshot() == {"state": "closed", "failures": 0, "threshold": 3, "cooldown_seconds": 60.0}
    for _ in range(3):
        breaker.record_failure("TIMEOUT: SearXNG did not answer")
    clock.now += 15
    snap = breaker.snapshot()
    assert snap["state"] == "open"
    assert snap["failures"] == 3
    assert snap["retry_in_seconds"] == 45.0
    assert snap["retry_at"] == datetime.fromtimestamp(WALL + 45, UTC).isoformat(timespec="seconds")
    assert snap["last_error"] == "TIMEOUT: SearXNG did not answer"
    clock.now += 45
    assert breaker.snapshot()["state"] == "half_open"
    assert breaker.snapshot()["retry_in_seconds"] == 0.0


@pytest.mark.parametrize(("threshold", "cooldown"), [(0, 60.0), (3, -1.0)])
def test_nonsense_settings_are_refused(threshold: int, cooldown: float) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker("x", threshold=threshold, cooldown=cooldown)


def test_a_misconfiguration_is_noted_never_counted_and_travels_to_other_processes(clock: FakeClock) -> None:
    breaker = make(clock, threshold=1)
    assert breaker.allow()
    breaker.record_misconfigured("PROVIDER_MISCONFIGURED: JSON output is off")
    assert (state(breaker), breaker.failures, breaker.allow()) == ("closed", 0, True)
    other = make(clock)
    other.adopt(breaker.export())
    assert other.snapshot()["misconfigured"] == "PROVIDER_MISCONFIGURED: JSON output is off"
    assert other.pristine is False
    other.record_success()  # it answered: the setting was fixed
    assert "misconfigured" not in other.snapshot() and other.pristine
