"""The one rate rule set (ratelimit/plan.py); tests/test_rate_contract.py holds the stores to its decisions."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from brave_search_mcp.ratelimit.plan import (
    NEVER,
    PAUSED,
    PENALTY_FLOOR_RATE,
    PROBE,
    PROBE_HOLD_SECONDS,
    QUOTA,
    STRIKE_MEMORY_SECONDS,
    WINDOW,
    Ask,
    PlanState,
    decide,
    horizon,
)

NOW = 1_764_000_000.123456  # wall-clock sized, so precision is exercised as in production


def test_a_key_never_seen_sends_one_request_alone_then_runs_at_the_reported_rate() -> None:
    ask = Ask("k", "search")
    first = decide(ask, PlanState.unknown(), [], NOW)
    assert first.granted and first.plan.probe_until == NOW + PROBE_HOLD_SECONDS
    second = decide(ask, first.plan, [NOW], NOW + 0.01)
    assert (second.granted, second.reason, second.ready) == (False, PROBE, NOW + PROBE_HOLD_SECONDS)
    assert decide(ask, first.plan, [NOW], NOW + PROBE_HOLD_SECONDS).granted  # a probe whose process died
    assert decide(ask, first.plan.probe_released(), [NOW], NOW + 0.01).granted  # one that failed without headers
    learned = first.plan.learned_as(20, 20)
    assert learned.probe_until == NEVER and learned.at_once(NOW) == (20.0, 20)  # issue 44: the whole plan at once
    assert decide(ask, learned, [NOW] * 19, NOW).granted
    assert decide(ask, learned, [NOW] * 20, NOW).ready == NOW + horizon(20, 20)  # then the window (with its margin)


def test_the_plan_an_answer_states_is_in_force_in_full_whatever_it_replaces() -> None:
    """Issue 44: no ramp. A plan stated by headers is trusted as stated, higher or lower than the one before, and a
    later answer stating another replaces it: no spread, no count of clean answers to wait for."""
    plan = PlanState.unknown().learned_as(20, 20)
    assert plan.spread(NOW) is None and plan.at_once(NOW) == (20.0, 20)
    assert plan.learned_as(20, 20) is plan  # every answer repeats the plan: nothing changes
    assert plan.learned_as(10, 10).at_once(NOW) == (10.0, 10)
    assert plan.learned_as(50, 50).at_once(NOW) == (50.0, 50)
    assert plan.learned_as(50, 50).learned_as(1, 1).at_once(NOW) == (1.0, 1)  # the later statement wins
    assert PlanState.unknown().learned_as(1000, 1000).at_once(NOW) == (1000.0, 1000)
    ask = Ask("k")
    assert decide(ask, plan.learned_as(50, 50), [NOW] * 49, NOW).granted
    assert decide(ask, plan.learned_as(50, 50).learned_as(1, 1), [NOW], NOW + 0.5).ready == NOW + horizon(1, 1)


def test_a_contradicting_429_halves_once_per_second_to_a_floor_and_recovers_slowly() -> None:
    plan = PlanState.known(20, 20)
    once = plan.penalized(NOW)
    assert once.at_once(NOW) == (10.0, 1) and once.in_force(NOW) == (10.0, 20)
    assert once.penalized(NOW + 0.5) is once  # the same overload counts once
    assert once.penalized(NOW + 1.0).at_once(NOW + 1.0) == (5.0, 1)
    assert once.at_once(NOW + 61) == (10.0 * 1.1, 1)
    assert once.at_once(NOW + 60 * 8) == (20.0, 20)  # back at the plan: whole bursts again
    low = PlanState.known(1, 1)
    for n in range(6):
        low = low.penalized(NOW + 2 * n)
    assert low.at_once(NOW + 12) == (PENALTY_FLOOR_RATE, 1)


def test_pauses_the_quota_gate_and_an_explicit_setting() -> None:
    ask = Ask("k")
    plan = PlanState.known(5, 5).blocked(NOW + 2)
    assert (decide(ask, plan, [], NOW).reason, decide(ask, plan, [], NOW).ready) == (PAUSED, NOW + 2)
    closed = PlanState.known(5, 5).quota_closed(NOW + 86400, NOW, 600)
    refused = decide(ask, closed, [], NOW + 1)
    assert (refused.granted, refused.reason, refused.ready) == (False, QUOTA, NOW + 600)
    trial = decide(ask, closed, [], NOW + 600)
    assert trial.granted and trial.plan.quota_trial_at == NOW + 1200  # one request, then the next in 10 min
    assert decide(ask, trial.plan, [], NOW + 601).reason == QUOTA
    assert closed.quota_opened().quota_until == NEVER
    pinned = replace(ask, pinned=(2.0, 1))
    assert decide(pinned, PlanState.unknown(), [NOW], NOW + 0.1).ready == NOW + horizon(2, 1)  # no probe, no plan


def test_an_answers_request_also_fits_the_keys_one_window() -> None:
    ask = Ask("k", "answers", PlanState.known(2, 2), primary="search")
    search = PlanState.known(1, 1)
    blocked = decide(ask, ask.init, [], NOW, shared=search, shared_starts=[NOW - 0.5])
    assert (blocked.reason, blocked.ready) == (WINDOW, NOW - 0.5 + horizon(1, 1))
    assert decide(ask, ask.init, [], NOW, shared=None, shared_starts=[NOW]).granted  # no search plan: own only
    assert decide(ask, ask.init, [], NOW, shared=PlanState.unknown(), shared_starts=[NOW]).granted
    assert ask.own == "k|answers" and ask.shared == "k|search"
    assert Ask("k", "search", primary="search").shared is None


def test_plan_state_round_trips_through_json() -> None:
    plan = PlanState.known(20, 20).penalized(100.0).blocked(150.0).quota_closed(9e9, 160.0, 600)
    assert PlanState.from_json(plan.to_json()) == plan
    assert PlanState.from_json(PlanState.unknown().to_json()) == PlanState.unknown()
    forgiven = PlanState.known(20, 20).contradicted(100.0)
    assert PlanState.from_json(json.loads(json.dumps(forgiven.to_json()))) == forgiven
    for bad in ((0, 1), (10_001, 1), (20, 0), (20, 10_001)):
        with pytest.raises(ValueError):
            PlanState.known(*bad)


# Stored plans no rule could have made: what an older version stored from a header of ``1e308``, a damaged file.
POISONED: list[dict[str, object]] = [
    {"plan_rate": 1e308, "plan_burst": 10**308},  # issue 36: the learned ``plan 1e+308/s``
    {"plan_rate": float("inf")},
    {"plan_rate": float("nan")},
    {"plan_rate": 20.0, "plan_burst": 2.5},
    {"plan_rate": 20.0, "plan_burst": -1},
    {"plan_rate": 20.0, "penalty_rate": 1e-9},
    {"plan_rate": 20.0, "quota_every": 0.0},
    {"plan_rate": "20"},
    {"plan_rate": True},
]
# Times further ahead than any rule sets one: each would hold every call for good.
FROM_THE_FUTURE: list[dict[str, object]] = [
    {"blocked_until": NOW + 1e9},
    {"quota_until": NOW + 1e12, "quota_trial_at": NOW + 1e12},
    {"probe_until": NOW + 3600},
    {"penalty_at": NOW + 1e6, "penalty_rate": 0.5},
    {"strike_at": NOW + 1e6},
]


@pytest.mark.parametrize("stored", POISONED, ids=[str(i) for i in range(len(POISONED))])
def test_a_stored_plan_no_rule_could_make_is_refused_on_reading(stored: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="stored plan"):
        PlanState.from_json(stored)


@pytest.mark.parametrize("times", FROM_THE_FUTURE, ids=[next(iter(t)) for t in FROM_THE_FUTURE])
def test_a_plan_holding_a_time_from_the_future_is_rebuilt_not_obeyed(times: dict[str, object]) -> None:
    """Issue 36: a pause or a closed quota gate far ahead is a broken record; the reservation rebuilds the plan from
    the family's initial one (here: unknown, so this request probes) and says it did, instead of waiting for it."""
    ask = Ask("k", "search")
    stored = replace(PlanState.known(20, 20), **times)  # type: ignore[arg-type]
    assert not stored.trusted(NOW) and PlanState.known(20, 20).trusted(NOW)
    decision = decide(ask, stored, [], NOW)
    assert (decision.granted, decision.dropped) == (True, True)
    assert decision.plan == replace(PlanState.unknown(), probe_until=NOW + PROBE_HOLD_SECONDS)
    # another family's shared window from the future is ignored, not obeyed (its own family rebuilds it)
    answers = Ask("k", "answers", PlanState.known(2, 2), primary="search")
    shared = decide(answers, answers.init, [], NOW, shared=stored, shared_starts=[NOW] * 20)
    assert (shared.granted, shared.dropped) == (True, False)
    # times a rule does set, however far, are kept: a pause Brave demanded, a month spent for four weeks
    fine = PlanState.known(20, 20).blocked(NOW + 60).quota_closed(NOW + 28 * 86400, NOW, 86400)
    assert fine.trusted(NOW) and not decide(ask, fine, [], NOW).dropped


def test_a_first_429_at_the_full_plan_is_forgiven_and_a_second_soon_after_halves() -> None:
    """Issue 36: one 429 whose headers restate the plan is jitter at the window's edge: the rate stays, the overload
    (all 429s within a second) is forgiven; another overload within three seconds halves the rate; one later than
    that is forgiven again. On a penalised plan a 429 halves again (once per second)."""
    plan = PlanState.known(20, 20)
    first = plan.contradicted(NOW)
    assert first.in_force(NOW) == (20.0, 20) and first.forgiven(NOW) and first.at_once(NOW) == (20.0, 20)
    same = first.contradicted(NOW + 0.5)
    assert same is first and same.forgiven(NOW + 0.5)  # requests already in flight in that overload
    again = first.contradicted(NOW + 2.0)
    assert again.in_force(NOW + 2.0) == (10.0, 20) and not again.forgiven(NOW + 2.0)
    assert again.contradicted(NOW + 2.5) is again  # the same overload counts once
    later = first.contradicted(NOW + STRIKE_MEMORY_SECONDS + 0.1)
    assert later.in_force(NOW + 4) == (20.0, 20) and later.forgiven(NOW + STRIKE_MEMORY_SECONDS + 0.1)
    fresh = PlanState.unknown().learned_as(20, 20)  # issue 44: a plan just stated is the plan, forgiven alike
    assert fresh.contradicted(NOW).in_force(NOW) == (20.0, 20)
    assert again.contradicted(NOW + 3.1).in_force(NOW + 3.1) == (5.0, 20)
    assert PlanState.unknown().contradicted(NOW) == PlanState.unknown()  # no plan: nothing to contradict


def test_a_granted_start_says_whether_it_fills_the_keys_window() -> None:
    """Issue 44's fleet: Brave reports the per-second window spent after the start that filled it. When the starts
    recorded fill it too, the window rule holds the next start until the oldest ages out (``Decision.full``: no
    pause is needed); when they leave room, Brave counted requests they do not hold (another program on the key)."""
    ask, plan, h = Ask("k"), PlanState.known(20, 20), horizon(20, 20)
    recent = [NOW - 0.1] * 18
    assert decide(ask, plan, [NOW - 0.5, *recent], NOW).full  # the 20th start within the horizon
    assert not decide(ask, plan, recent, NOW).full  # one short
    assert not decide(ask, plan, [NOW - h, *recent], NOW).full  # the oldest is exactly a horizon old: aged out
    assert decide(ask, plan, [NOW - h + 0.001, *recent], NOW).full
    assert decide(ask, plan, [NOW - 9, NOW - 5, NOW - 0.5, *recent], NOW).full  # only the newest ones count
    assert decide(ask, PlanState.known(1, 1), [], NOW).full  # a window of one: every start fills it
    refused = decide(ask, plan, [NOW - 0.5, NOW - 0.2, *recent], NOW)
    assert (refused.granted, refused.full) == (False, False)  # no start, nothing filled
    probe = decide(ask, PlanState.unknown(), [], NOW)
    assert probe.granted and not probe.full  # no plan known: a spent window is news
    # The plan in force, as the window rule reads it: a pinned setting's, a penalised rate's longer horizon.
    assert decide(replace(ask, pinned=(2.0, 2)), plan, [NOW - 0.5], NOW).full
    assert not decide(ask, plan, [NOW - 0.5], NOW).full
    assert decide(ask, plan.penalized(NOW - 1), [NOW - 1.5] * 19, NOW).full  # 10/s: 2.165 s
    assert not decide(ask, plan, [NOW - 1.5] * 19, NOW).full


def test_an_answers_start_fills_the_keys_window_not_its_own() -> None:
    """Brave's headers describe the key's one window: an answers request fills it when the search family's starts
    (every family's) do, whatever its own window of 2 holds."""
    ask, search = Ask("k", "answers", PlanState.known(2, 2), primary="search"), PlanState.known(20, 20)
    full = [NOW - 0.2] * 19
    assert decide(ask, ask.init, [], NOW, shared=search, shared_starts=full).full
    assert not decide(ask, ask.init, [NOW - 0.5], NOW, shared=search, shared_starts=full[1:]).full
    assert not decide(ask, ask.init, [NOW - 0.5], NOW, shared=None, shared_starts=full).full  # no search plan known
