"""The SQLite and Redis (Lua) stores held to the one rate rule set's decisions, case by random case."""

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
    PROBE,
    QUOTA,
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
from tests.test_rate_rules import FROM_THE_FUTURE, NOW, POISONED

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


def _case(rng: random.Random) -> Case:
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


Case = tuple[Ask, PlanState | None, list[float], PlanState | None, list[float], float]


def _full_cases() -> list[tuple[Case, bool]]:
    """Cases whose granted start does or does not fill the key's window (``Decision.full``), with that answer: the
    window's edges with tens of milliseconds to spare (on the server's clock the script decides a little later)."""
    plan, h = PlanState.known(20, 20), horizon(20, 20)
    answers = Ask("f-shared", "answers", PlanState.known(2, 2), primary="search")
    recent = [NOW - 0.1] * 18
    cases: list[tuple[Case, bool]] = [
        ((Ask("f-burst-1"), PlanState.known(1, 1), [NOW - 5], None, [], NOW), True),
        ((Ask("f-one-short"), plan, recent, None, [], NOW), False),
        ((Ask("f-full"), plan, [NOW - 0.2, *recent], None, [], NOW), True),
        ((Ask("f-aged-out"), plan, [NOW - h - 0.1, *recent], None, [], NOW), False),
        ((Ask("f-all-old"), plan, [NOW - h - 0.1] * 19, None, [], NOW), False),
        ((Ask("f-pinned", pinned=(2.0, 2)), plan, [NOW - 0.5], None, [], NOW), True),  # the pinned window of 2
        ((Ask("f-penalised"), plan.penalized(NOW - 1), [NOW - 1.5] * 19, None, [], NOW), True),  # 10/s: 2.165 s
        ((Ask("f-probe"), None, [], None, [], NOW), False),  # no plan known: no window to fill
        ((answers, None, [], plan, [NOW - 0.2, *recent], NOW), True),  # the search family's window: the key's
        ((replace(answers, upstream="f-shared-room"), None, [NOW - 0.5], plan, recent, NOW), False),
        ((replace(answers, upstream="f-shared-none"), None, [NOW - 0.5], None, recent, NOW), False),
    ]
    return cases


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
    from brave_search_mcp.state.redis_plans import shifted

    shared = shared_plan if ask.shared is not None else None
    mine, theirs = _made(own_starts, now), _made(shared_starts, now) if shared else []
    expected = decide(ask, own, mine, now, shared=shared, shared_starts=theirs)
    assert (got.granted, got.ready, got.reason) == (expected.granted, expected.ready - by, expected.reason), ask
    assert got.full == expected.full, ask
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
    """Same plans, starts and time in, same grant, ready time, reason, plan, full window and recorded start out (400
    random cases, after the full-window ones).

    On the server's clock (production's mode) the script decides at the server's ``TIME`` with the family's initial
    plan moved onto it and hands times back moved onto the caller's clock: each case's stored plans and starts are
    written on the server's clock, and the rule is run at the moment the script read (the caller's time plus the
    shift the script reports, which adds up exactly: both clocks are within a factor of two)."""
    from brave_search_mcp.state.redis import RedisStore
    from brave_search_mcp.state.redis_keys import plan_key, starts_key
    from brave_search_mcp.state.redis_plans import fields_of, plan_of, shifted

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
    cases = [*_full_cases(), *((_case(rng), None) for _ in range(400))]
    for (ask, stored, own_starts, shared_plan, shared_starts, now), full in cases:
        there = 0.0  # the case's times moved onto the clock the script decides on
        if store._clock is not None:
            seconds, micros = await r.time()
            there = seconds + micros / 1e6 - now
            stored = shifted(stored, there) if stored is not None else None
            shared_plan = shifted(shared_plan, there) if shared_plan is not None else None
            own_starts, shared_starts = [t + there for t in own_starts], [t + there for t in shared_starts]
        if stored is not None:
            await r.hset(plan_key(ask.own), mapping=fields_of(stored))  # type: ignore[misc]
        if shared_plan is not None and ask.shared is not None:
            await r.hset(plan_key(ask.shared), mapping=fields_of(shared_plan))  # type: ignore[misc]
        for name, starts in ((ask.own, own_starts), (ask.shared, shared_starts)):
            if name is not None and starts:
                await r.zadd(starts_key(name), {f"s{i}": t for i, t in enumerate(starts)})
        got = await store.reserve(ask, now)
        by = shifts[-1] if shifts else 0.0
        at = now + by  # the script's moment, on its clock
        ask = replace(ask, init=shifted(ask.init, by))
        own = stored if stored is not None else ask.init
        expected = _same_decision(got, ask, own, own_starts, shared_plan, shared_starts, at, by)
        assert got.dropped == expected.dropped
        assert full is None or (got.granted and got.full is full), ask
        if got.dropped:
            kinds.add("dropped")
            stored_now = await r.hgetall(plan_key(ask.own))  # type: ignore[misc]
            assert plan_of([x for kv in stored_now.items() for x in kv]) == expected.plan  # rebuilt, not kept
        recorded = await r.zrangebyscore(starts_key(ask.own), at, at)
        assert len(recorded) == (1 if expected.granted else 0)
        kept = await r.zrange(starts_key(ask.own), 0, -1, withscores=True)
        limits = (ask.init if got.dropped else own).pinned(ask.pinned).in_force(at)
        window = horizon(*limits, ask.margin) if limits is not None else 0.0
        assert all(t > at - max(window, KEEP_STARTS_SECONDS) for _, t in kept)
        if expected.reason != QUOTA:  # a closed gate reads no start, so it drops none
            assert all(t <= at + CLOCK_SKEW_SECONDS for _, t in kept)
        kinds.add(f"{expected.granted}:{expected.reason}")
    assert len(shifts) == (len(cases) if store._clock is not None else 0)
    assert kinds >= {"True:ok", f"False:{WINDOW}", f"False:{PAUSED}", f"False:{PROBE}", f"False:{QUOTA}", "dropped"}


@pytest.mark.anyio
async def test_a_moved_start_and_a_windows_count_read_on_the_callers_times_whichever_clock_redis_keeps(
    store: object,
) -> None:
    """Redis keeps the starts on the clock the reservation decided on (the server's, in production): a start moved
    to when its request left, once, and the starts counted between two times are on the caller's times all the same."""
    from brave_search_mcp.state.redis import RedisStore

    assert isinstance(store, RedisStore)
    ask = Ask("brave:key", "search", init=PlanState.known(50.0, 50), primary="search")

    def caller() -> float:  # a replica whose clock is 1000 s ahead of the server's
        return time.time() + 1000.0

    now = caller()
    first, second = await store.reserve(ask, now), await store.reserve(ask, now)
    assert first.granted and second.granted and first.token != second.token
    await store.retime(ask, now, first.token, now + 0.5, caller())
    await store.retime(ask, now, first.token, now + 0.9, caller())  # a retry's copy: found no more, moves nothing
    spans = ((now - 0.2, now + 0.2), (now + 0.3, now + 0.7), (now + 0.7, now + 2.0))
    assert [await store.started(ask, since, until, caller()) for since, until in spans] == [1, 1, 0]


@pytest.mark.anyio
async def test_the_sqlite_reservation_decides_exactly_as_the_python_rule(tmp_path: Path) -> None:
    """SQLite reads only a few of the newest starts; the decisions are those of the full lists (400 random cases,
    after the full-window ones)."""
    from brave_search_mcp.state.sqlite import SqliteStore
    from brave_search_mcp.state.sqlite_conn import FileConnection
    from brave_search_mcp.state.sqlite_file import STATE_TABLES, connect

    path = tmp_path / "state.db"
    conn = connect(path, tables=STATE_TABLES)
    store = SqliteStore(FileConnection(path, conn, tables=STATE_TABLES), max_entries=10, max_bytes=None)
    rng = random.Random(23)
    kinds: set[str] = set()
    cases = [*_full_cases(), *((_case(rng), None) for _ in range(400))]
    for (ask, stored, own_starts, shared_plan, shared_starts, now), full in cases:
        for name, plan in ((ask.own, stored), (ask.shared, shared_plan)):
            if name is not None and plan is not None:
                conn.execute("INSERT OR REPLACE INTO plans VALUES (?, ?)", (name, json.dumps(plan.to_json())))
        for name, starts in ((ask.own, own_starts), (ask.shared, shared_starts)):
            if name is not None:
                conn.executemany("INSERT INTO starts VALUES (?, ?)", [(name, t) for t in starts])
        own = stored if stored is not None else ask.init
        got = await store.reserve(ask, now)
        expected = _same_decision(got, ask, own, own_starts, shared_plan, shared_starts, now)
        assert full is None or (got.granted and got.full is full), ask
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
    from brave_search_mcp.state.sqlite_file import connect
    from brave_search_mcp.state.sqlite_starts import NewestStarts

    conn = connect(tmp_path / "state.db")
    starts = _random_starts(random.Random(5), 12)
    conn.executemany("INSERT INTO starts VALUES (?, ?)", [("u", t) for t in starts] + [("other", NOW)])
    newest = starts[-8:]
    view = NewestStarts(conn, "u", 8, NEVER)
    assert (len(view), list(view), view[-8], view[0], view[-1]) == (8, newest, newest[0], newest[0], newest[-1])
    assert (view[2:5], view[::-3]) == (newest[2:5], newest[::-3])
    with pytest.raises(IndexError):
        view[-9]
    assert len(NewestStarts(conn, "nobody", 8, NEVER)) == 0
    recent = NewestStarts(conn, "u", 8, starts[-3])  # only the starts after ``since``
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
