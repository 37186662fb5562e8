"""The one rate rule set (ratelimit/plan.py), and the SQLite and Redis (Lua) stores held to the same decisions."""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from brave_search_mcp.ratelimit.plan import (
    CLOCK_SKEW_SECONDS,
    EXACT,
    KEEP_STARTS_SECONDS,
    NEVER,
    PAUSED,
    PENALTY_FLOOR_RATE,
    PROBE,
    PROBE_HOLD_SECONDS,
    QUOTA,
    STRIKE_MEMORY_SECONDS,
    WINDOW,
    Ask,
    Decision,
    PlanState,
    decide,
    horizon,
    matters_after,
)
from testkit.programs import require
from testkit.redis_server import RedisServer

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
    assert learned.probe_until == NEVER and learned.at_once(NOW) == (20.0, 1)  # its rate, one start at a time
    assert decide(ask, learned, [NOW], NOW + 0.049).granted is False
    assert decide(ask, learned, [NOW], NOW + 0.05).granted is True  # exactly 1/rate later: no margin on the spread


def test_an_unconfirmed_plan_starts_together_as_many_as_came_back_clean_and_spreads_the_rest() -> None:
    """A second process reuses what the first one proved: five clean answers, five at once; the sixth waits for
    the spread (five starts per 5/20 s), and the plan's own 1 s window (with its margin) bounds them all."""
    ask = Ask("k", "search")
    plan = PlanState.unknown().learned_as(20, 20)
    for _ in range(5):
        plan = plan.confirmed(NOW)
    assert plan.at_once(NOW) == (20.0, 5) and plan.in_force(NOW) == (20.0, 20)
    assert decide(ask, plan, [NOW] * 4, NOW).granted
    sixth = decide(ask, plan, [NOW] * 5, NOW)
    assert (sixth.granted, sixth.reason, sixth.ready) == (False, WINDOW, NOW + 0.25)
    for _ in range(14):
        plan = plan.confirmed(NOW)
    assert plan.at_once(NOW) == (20.0, 19)
    spread_out = [NOW + 0.05 * n for n in range(19)]  # nineteen starts spread over 0.9 s
    late = decide(ask, plan, spread_out, NOW + 0.95)
    assert late.granted  # the twentieth fits the plan's window
    assert decide(ask, plan, [NOW] * 19, NOW + 0.95).ready == NOW + 19 / 20  # the spread: 19 per 0.95 s
    full = [NOW + 0.01 * n for n in range(20)]  # twenty in 0.2 s: the 1 s window is spent, margin included
    assert decide(ask, plan.confirmed(NOW), full, NOW + 0.5).ready == NOW + horizon(20, 20)


def test_whole_bursts_only_once_the_plan_is_confirmed_by_clean_answers() -> None:
    plan = PlanState.unknown().learned_as(20, 20)
    assert plan.at_once(NOW) == (20.0, 1)
    for _ in range(19):
        plan = plan.confirmed(NOW)
    assert plan.spread(NOW) == (20.0, 19)
    plan = plan.confirmed(NOW)
    assert plan.spread(NOW) is None and plan.at_once(NOW) == (20.0, 20)
    assert plan.learned_as(20, 20) is plan  # every answer repeats the plan: nothing changes
    assert plan.learned_as(10, 10).at_once(NOW) == (10.0, 10)  # a lower plan needs no confirmation
    assert plan.learned_as(50, 50).at_once(NOW) == (50.0, 2)  # a higher one does: spread, 1/20 s of it at once
    assert PlanState.unknown().learned_as(1000, 1000).at_once(NOW) == (1000.0, 50)
    ask = Ask("k")
    assert decide(ask, plan, [NOW] * 19, NOW).granted
    assert decide(ask, plan, [NOW] * 20, NOW).ready == NOW + horizon(20, 20)


def test_a_contradicting_429_halves_once_per_second_to_a_floor_and_recovers_slowly() -> None:
    plan = PlanState.known(20, 20)
    once = plan.penalized(NOW)
    assert once.at_once(NOW) == (10.0, 1) and once.in_force(NOW) == (10.0, 20)
    assert once.penalized(NOW + 0.5) is once  # the same overload counts once
    assert once.penalized(NOW + 1.0).at_once(NOW + 1.0) == (5.0, 1)
    assert once.at_once(NOW + 61) == (10.0 * 1.1, 1)
    assert once.at_once(NOW + 60 * 8) == (20.0, 1)  # back at the plan, re-confirmed before bursts
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
    {"plan_rate": 1e308, "plan_burst": 10**308, "clean": 10**308},  # issue 36: the learned ``plan 1e+308/s``
    {"plan_rate": float("inf")},
    {"plan_rate": float("nan")},
    {"plan_rate": 20.0, "plan_burst": 2.5},
    {"plan_rate": 20.0, "plan_burst": 20, "clean": -1},
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


def test_only_a_freshly_learned_plan_bounds_the_requests_out_unanswered() -> None:
    """Issue 36: while a learned plan is unconfirmed, a process has no more requests out than may start together
    (a stored plan that shrank then costs one 429); a penalised plan's rate already fell and is not bounded so (it
    would be one request at a time for minutes), nor a confirmed, given or unknown one."""
    fresh = PlanState.unknown().learned_as(50, 50)
    assert fresh.unproven(NOW) == 2 and fresh.confirmed(NOW).confirmed(NOW).confirmed(NOW).unproven(NOW) == 3
    assert fresh.penalized(NOW).unproven(NOW) is None
    assert PlanState.known(50, 50).unproven(NOW) is None and PlanState.unknown().unproven(NOW) is None


def test_a_lower_plan_is_in_force_at_once_even_over_an_unconfirmed_one() -> None:
    """Issue 36: a key whose stored plan says 50/s (one clean answer so far) now answers with 1/s headers: the 1/s
    plan is trusted as it stands (whole windows, no spread), the old confirmation is moot."""
    stored = PlanState.unknown().learned_as(50, 50).confirmed(NOW)
    assert stored.at_once(NOW) == (50.0, 2)
    shrunk = stored.learned_as(1, 1)
    assert shrunk.at_once(NOW) == (1.0, 1) and shrunk.spread(NOW) is None
    assert shrunk.learned_as(5, 5).at_once(NOW) == (5.0, 1)  # a higher one is spread until confirmed, as before


def test_a_first_429_on_a_confirmed_plan_is_forgiven_and_a_second_soon_after_halves() -> None:
    """Issue 36: one 429 whose headers restate a confirmed plan is jitter at the window's edge: the rate stays, the
    overload (all 429s within a second) is forgiven; another overload within three seconds halves the rate; one
    later than that is forgiven again. On an unconfirmed plan a 429 halves at once, as before."""
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
    unconfirmed = PlanState.unknown().learned_as(20, 20)
    assert unconfirmed.contradicted(NOW).in_force(NOW) == (10.0, 20)
    assert PlanState.unknown().contradicted(NOW) == PlanState.unknown()  # no plan: nothing to contradict


# ---------------------------------------------------------------------- Lua against Python


# Numbers only: what a Redis hash or a JSON record can hold (a word is refused on reading, above).
BROKEN = [f for f in POISONED if all(type(v) in (int, float) for v in f.values())] + FROM_THE_FUTURE


def _random_plan(rng: random.Random, *, broken: bool = True) -> PlanState:
    if broken and rng.random() < 0.06:
        return replace(PlanState.known(20, 20), **rng.choice(BROKEN))  # type: ignore[arg-type]
    if rng.random() < 0.2:
        plan = PlanState.unknown()
        if rng.random() < 0.5:
            plan = replace(plan, probe_until=NOW + rng.uniform(-1, 1))
        return plan
    rate = rng.choice([0.5, 1.0, 2.0, 5.0, 20.0, 50.0, 1000.0, rng.uniform(0.3, 60)])
    burst = max(1, min(int(rate), rng.choice([1, 2, 5, 20, 50])))
    plan = PlanState.known(rate, burst)
    if rng.random() < 0.4:
        plan = replace(plan, clean=rng.randrange(0, burst + 1))
    if rng.random() < 0.3:
        plan = plan.penalized(NOW - rng.uniform(0, 900))
    if rng.random() < 0.3:
        plan = plan.blocked(NOW + rng.uniform(-2, 2))
    if rng.random() < 0.2:
        plan = plan.quota_closed(NOW + rng.uniform(-100, 100), NOW - rng.uniform(0, 700), rng.choice([60.0, 600.0]))
    return plan


def _random_starts(rng: random.Random, n: int) -> list[float]:
    starts = [NOW - rng.uniform(0, 3) for _ in range(n)]
    if rng.random() < 0.05:
        starts.append(rng.choice([NOW + 1e9, math.inf]))  # a start no clock made: the stores drop it
    return sorted(starts)


def _made(starts: list[float], now: float) -> list[float]:
    """The starts a store hands the rule: none from beyond every process's clock."""
    return [t for t in starts if t <= now + CLOCK_SKEW_SECONDS]


def _case(rng: random.Random) -> tuple[Ask, PlanState | None, list[float], PlanState | None, list[float], float]:
    shared = rng.random() < 0.4
    ask = Ask(
        f"u{rng.randrange(10**9)}",
        "answers" if shared else "search",
        _random_plan(rng, broken=False),  # a family's initial plan comes from the code, never from a store
        primary="search" if shared else rng.choice([None, "search"]),
        pinned=(rng.choice([1.0, 2.0, 10.0]), rng.choice([1, 2])) if rng.random() < 0.15 else None,
        margin=EXACT if rng.random() < 0.2 else Ask("x").margin,
    )
    stored = _random_plan(rng) if rng.random() < 0.8 else None
    shared_plan = _random_plan(rng) if shared and rng.random() < 0.8 else None
    now = NOW + rng.choice([0.0, rng.uniform(-0.5, 0.5)])
    return (
        ask,
        stored,
        _random_starts(rng, rng.randrange(0, 60)),
        shared_plan,
        _random_starts(rng, rng.randrange(60)),
        now,
    )


def _same_decision(
    got: Decision,
    ask: Ask,
    own: PlanState,
    own_starts: list[float],
    shared_plan: PlanState | None,
    shared_starts: list[float],
    now: float,
    by: float = 0.0,
) -> Decision:
    """Assert a store's reservation is the Python rule's on the full lists of starts; returns the rule's. ``by``:
    the store decided on a clock that far ahead of the caller's (``now`` and the inputs are on it) and handed the
    times back on the caller's (``redis.shifted``)."""
    from brave_search_mcp.state.redis import shifted

    shared = shared_plan if ask.shared is not None else None
    mine, theirs = _made(own_starts, now), _made(shared_starts, now) if shared else []
    expected = decide(ask, own, mine, now, shared=shared, shared_starts=theirs)
    assert (got.granted, got.ready, got.reason) == (expected.granted, expected.ready - by, expected.reason), ask
    assert got.plan == shifted(expected.plan, -by)
    return expected


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    require("redis-server", ".ci/run installs it: apt-get install -y redis-server")
    with RedisServer() as server:
        yield server.url


@pytest.fixture(params=["caller's clock", "server's clock"])
async def store(redis_url: str, request: pytest.FixtureRequest) -> AsyncIterator[object]:
    """A Redis store on the caller's times, or (as ``open_redis`` builds it) deciding on the server's clock."""
    from redis.asyncio import Redis

    from brave_search_mcp.state.redis import RedisStore

    client = Redis.from_url(redis_url)
    await client.flushdb()
    yield RedisStore(redis_url, client, clock=time.time if request.param == "server's clock" else None)
    await client.aclose()


@pytest.mark.anyio
async def test_the_lua_reservation_decides_exactly_as_the_python_rule(
    store: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same plans, starts and time in, same grant, ready time, reason, plan and recorded start out (400 cases).

    On the server's clock (production's mode) the script decides at the server's ``TIME`` with the family's initial
    plan moved onto it and hands times back moved onto the caller's clock: each case's stored plans and starts are
    written on the server's clock, and the rule is run at the moment the script read (the caller's time plus the
    shift the script reports, which adds up exactly: both clocks are within a factor of two)."""
    from brave_search_mcp.state.redis import PREFIX, RedisStore, fields_of, plan_of, shifted

    assert isinstance(store, RedisStore)
    r = store._r
    shifts: list[float] = []  # per reservation, the server's clock minus the caller's, as the script found it
    if store._clock is not None:
        script = store._reserve

        async def reserve(*, keys: list[str], args: list[str | float]) -> Any:
            found = await script(keys=keys, args=args)
            shifts.append(float(found[4]))
            return found

        monkeypatch.setattr(store, "_reserve", reserve)
    rng = random.Random(22)
    kinds: set[str] = set()
    for _ in range(400):
        ask, stored, own_starts, shared_plan, shared_starts, now = _case(rng)
        there = 0.0  # the case's times moved onto the clock the script decides on
        if store._clock is not None:
            seconds, micros = await r.time()
            there = seconds + micros / 1e6 - now
            stored = shifted(stored, there) if stored is not None else None
            shared_plan = shifted(shared_plan, there) if shared_plan is not None else None
            own_starts, shared_starts = [t + there for t in own_starts], [t + there for t in shared_starts]
        if stored is not None:
            await r.hset(f"{PREFIX}plan:{ask.own}", mapping=fields_of(stored))  # type: ignore[misc]
        if shared_plan is not None and ask.shared is not None:
            await r.hset(f"{PREFIX}plan:{ask.shared}", mapping=fields_of(shared_plan))  # type: ignore[misc]
        for name, starts in ((ask.own, own_starts), (ask.shared, shared_starts)):
            if name is not None and starts:
                await r.zadd(f"{PREFIX}starts:{name}", {f"s{i}": t for i, t in enumerate(starts)})
        got = await store.reserve(ask, now)
        by = shifts[-1] if shifts else 0.0
        at = now + by  # the script's moment, on its clock
        ask = replace(ask, init=shifted(ask.init, by))
        own = stored if stored is not None else ask.init
        expected = _same_decision(got, ask, own, own_starts, shared_plan, shared_starts, at, by)
        assert got.dropped == expected.dropped
        if got.dropped:
            kinds.add("dropped")
            stored_now = await r.hgetall(f"{PREFIX}plan:{ask.own}")  # type: ignore[misc]
            assert plan_of([x for kv in stored_now.items() for x in kv]) == expected.plan  # rebuilt, not kept
        recorded = await r.zrangebyscore(f"{PREFIX}starts:{ask.own}", at, at)
        assert len(recorded) == (1 if expected.granted else 0)
        kept = await r.zrange(f"{PREFIX}starts:{ask.own}", 0, -1, withscores=True)
        limits = (ask.init if got.dropped else own).pinned(ask.pinned).in_force(at)
        window = horizon(*limits, ask.margin) if limits is not None else 0.0
        assert all(t > at - max(window, KEEP_STARTS_SECONDS) for _, t in kept)
        if expected.reason != QUOTA:  # a closed gate reads no start, so it drops none
            assert all(t <= at + CLOCK_SKEW_SECONDS for _, t in kept)
        kinds.add(f"{expected.granted}:{expected.reason}")
    assert len(shifts) == (400 if store._clock is not None else 0)
    assert kinds >= {"True:ok", f"False:{WINDOW}", f"False:{PAUSED}", f"False:{PROBE}", f"False:{QUOTA}", "dropped"}


@pytest.mark.anyio
async def test_the_sqlite_reservation_decides_exactly_as_the_python_rule(tmp_path: Path) -> None:
    """SQLite reads only a few of the newest starts; the decisions are those of the full lists (400 cases)."""
    from brave_search_mcp.state.sqlite import SqliteStore
    from brave_search_mcp.state.sqlite_conn import FileConnection
    from brave_search_mcp.state.sqlite_file import STATE_TABLES, connect

    path = tmp_path / "state.db"
    conn = connect(path, tables=STATE_TABLES)
    store = SqliteStore(FileConnection(path, conn, tables=STATE_TABLES), max_entries=10, max_bytes=None)
    rng = random.Random(23)
    kinds: set[str] = set()
    for _ in range(400):
        ask, stored, own_starts, shared_plan, shared_starts, now = _case(rng)
        for name, plan in ((ask.own, stored), (ask.shared, shared_plan)):
            if name is not None and plan is not None:
                conn.execute("INSERT OR REPLACE INTO plans VALUES (?, ?)", (name, json.dumps(plan.to_json())))
        for name, starts in ((ask.own, own_starts), (ask.shared, shared_starts)):
            if name is not None:
                conn.executemany("INSERT INTO starts VALUES (?, ?)", [(name, t) for t in starts])
        own = stored if stored is not None else ask.init
        expected = _same_decision(await store.reserve(ask, now), ask, own, own_starts, shared_plan, shared_starts, now)
        recorded = conn.execute("SELECT count(*) FROM starts WHERE upstream = ? AND t = ?", (ask.own, now)).fetchone()
        assert recorded[0] == (1 if expected.granted else 0)
        if expected.dropped:  # rebuilt in the file, not kept
            kinds.add("dropped")
            text = conn.execute("SELECT state FROM plans WHERE upstream = ?", (ask.own,)).fetchone()[0]
            assert PlanState.from_json(json.loads(text)) == expected.plan
        kinds.add(f"{expected.granted}:{expected.reason}")
    assert kinds >= {"True:ok", f"False:{WINDOW}", f"False:{PAUSED}", f"False:{PROBE}", f"False:{QUOTA}", "dropped"}
    conn.close()


def test_sqlite_reads_the_newest_starts_as_the_list_of_them(tmp_path: Path) -> None:
    """The rule may index or slice what SQLite hands it; each answer is the plain list's, capped at the burst."""
    from brave_search_mcp.state.sqlite import _NewestStarts
    from brave_search_mcp.state.sqlite_file import connect

    conn = connect(tmp_path / "state.db")
    starts = _random_starts(random.Random(5), 12)
    conn.executemany("INSERT INTO starts VALUES (?, ?)", [("u", t) for t in starts] + [("other", NOW)])
    newest = starts[-8:]
    view = _NewestStarts(conn, "u", 8, NEVER)
    assert (len(view), list(view), view[-8], view[0], view[-1]) == (8, newest, newest[0], newest[0], newest[-1])
    assert (view[2:5], view[::-3]) == (newest[2:5], newest[::-3])
    with pytest.raises(IndexError):
        view[-9]
    assert len(_NewestStarts(conn, "nobody", 8, NEVER)) == 0
    recent = _NewestStarts(conn, "u", 8, starts[-3])  # only the starts after ``since``
    assert (len(recent), list(recent), recent[-2]) == (2, starts[-2:], starts[-2])
    conn.close()


def _after(plan: PlanState | None, starts: list[float], now: float, margin: tuple[float, float]) -> list[float]:
    limits = plan.in_force(now) if plan is not None else None
    return starts if limits is None else [t for t in starts if t > matters_after(now, limits, margin)]


def test_starts_the_stores_skip_never_change_a_decision() -> None:
    """``matters_after``: dropping the starts at or before it decides every case as the full lists do."""
    rng = random.Random(24)
    skipped = 0
    for _ in range(2000):
        ask, stored, own_starts, shared_plan, shared_starts, now = _case(rng)
        own = stored if stored is not None else ask.init
        shared = shared_plan if ask.shared is not None else None
        ruling = own if own.trusted(now) else ask.init  # as the stores read them: a broken plan is not read
        mine = _after(ruling.pinned(ask.pinned), own_starts, now, ask.margin)
        theirs = _after(shared if shared is not None and shared.trusted(now) else None, shared_starts, now, ask.margin)
        skipped += len(own_starts) - len(mine) + len(shared_starts) - len(theirs)
        full = decide(ask, own, own_starts, now, shared=shared, shared_starts=shared_starts if shared else [])
        cut = decide(ask, own, mine, now, shared=shared, shared_starts=theirs if shared else [])
        assert cut == full, ask
    assert skipped > 10_000  # the cases do leave starts out
