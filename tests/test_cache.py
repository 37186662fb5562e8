"""The response cache saves quota: normalized keys, TTL/LRU bounds, and one upstream call for concurrent twins."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given
from hypothesis import strategies as st

from brave_search_mcp.models import errors
from brave_search_mcp.state.response_cache import CacheStats, ResponseCache, is_freshness_filtered, make_key
from testkit.clock import FakeClock

pytestmark = pytest.mark.anyio

WEB = "/res/v1/web/search"


class Upstream:
    """A fetch function that counts calls and can be held open or made to fail."""

    def __init__(self, value: str = "answer") -> None:
        self.calls = 0
        self.value = value
        self.gate: anyio.Event | None = None
        self.error: Exception | None = None

    async def fetch(self) -> str:
        self.calls += 1
        call = self.calls
        if self.gate is not None:
            await self.gate.wait()
        if self.error is not None:
            raise self.error
        return f"{self.value}#{call}"


async def wait_until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await anyio.lowlevel.checkpoint()
    raise AssertionError("condition never became true")


# -- keys ---------------------------------------------------------------------------------------


def test_query_case_and_whitespace_share_a_key() -> None:
    a = make_key(WEB, [("q", "Hello   World"), ("count", "10")])
    b = make_key(WEB, [("count", "10"), ("q", "  hello world\t")])
    assert a == b


def test_result_filter_order_spacing_and_repeats_share_a_key() -> None:
    a = make_key(WEB, [("q", "x"), ("result_filter", "web, news,videos")])
    b = make_key(WEB, [("q", "x"), ("result_filter", "videos,web,news,web")])
    assert a == b


def test_repeated_keys_are_order_insensitive() -> None:
    a = make_key(WEB, [("q", "x"), ("goggles", "https://a.example/g"), ("goggles", "https://b.example/g")])
    b = make_key(WEB, [("goggles", "https://b.example/g"), ("q", "x"), ("goggles", "https://a.example/g")])
    assert a == b


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ([("q", "rust")], [("q", "rust lang")]),
        ([("q", "x"), ("country", "US")], [("q", "x"), ("country", "DE")]),
        ([("q", "x"), ("result_filter", "web")], [("q", "x"), ("result_filter", "news")]),
        ([("q", "a&b=c")], [("q", "a"), ("b", "c")]),
    ],
)
def test_different_requests_get_different_keys(first: list[tuple[str, str]], second: list[tuple[str, str]]) -> None:
    assert make_key(WEB, first) != make_key(WEB, second)


def test_endpoint_is_part_of_the_key() -> None:
    assert make_key(WEB, [("q", "x")]) != make_key("/res/v1/news/search", [("q", "x")])


def test_freshness_is_detected_from_the_key() -> None:
    assert is_freshness_filtered(make_key(WEB, [("q", "x"), ("freshness", "pd")]))
    assert not is_freshness_filtered(make_key(WEB, [("q", "freshness=pd")]))


@given(st.text(alphabet="freshnom=&%+2-_x?6F", max_size=40))
def test_freshness_reads_the_names_as_parse_qsl_does(query: str) -> None:
    """The fast reading of the key's names agrees with the standard library's on any query, escapes included."""
    key = f"{WEB}?{query}"
    expected = any(name == "freshness" for name, _ in parse_qsl(query, keep_blank_values=True))
    assert is_freshness_filtered(key) is expected


# -- storing ------------------------------------------------------------------------------------


async def test_second_identical_request_is_a_hit_without_fetching() -> None:
    clock = FakeClock(5000.0)
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=clock)
    up = Upstream()
    key = make_key(WEB, [("q", "x")])
    assert await cache.get_or_fetch(key, up.fetch) == ("answer#1", False, False)
    assert await cache.get_or_fetch(key, up.fetch) == ("answer#1", True, False)
    assert up.calls == 1
    assert cache.stats() == CacheStats(entries=1, max_entries=10, ttl_seconds=300.0, hits=1, misses=1, shared=0)


async def test_entries_expire_after_the_ttl_on_the_clock() -> None:
    clock = FakeClock(5000.0)
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=clock)
    up = Upstream()
    key = make_key(WEB, [("q", "x")])
    await cache.get_or_fetch(key, up.fetch)
    clock.now += 299.0
    assert (await cache.get_or_fetch(key, up.fetch))[1] is True
    clock.now += 2.0
    value, hit, _ = await cache.get_or_fetch(key, up.fetch)
    assert (value, hit, up.calls) == ("answer#2", False, 2)


async def test_freshness_filtered_answers_live_at_most_a_minute() -> None:
    clock = FakeClock(5000.0)
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=clock)
    up = Upstream()
    fresh = make_key(WEB, [("q", "news today"), ("freshness", "pd")])
    plain = make_key(WEB, [("q", "news today")])
    await cache.get_or_fetch(fresh, up.fetch)
    await cache.get_or_fetch(plain, up.fetch)
    clock.now += 59.0
    assert (await cache.get_or_fetch(fresh, up.fetch))[1] is True
    clock.now += 2.0
    assert (await cache.get_or_fetch(fresh, up.fetch))[1] is False
    assert (await cache.get_or_fetch(plain, up.fetch))[1] is True
    assert up.calls == 3


async def test_per_call_ttl_overrides_the_default() -> None:
    clock = FakeClock(5000.0)
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=clock)
    up = Upstream()
    key = make_key(WEB, [("q", "x")])
    await cache.get_or_fetch(key, up.fetch, ttl=10.0)
    clock.now += 11.0
    assert (await cache.get_or_fetch(key, up.fetch))[1] is False
    await cache.get_or_fetch(make_key(WEB, [("q", "y")]), up.fetch, ttl=0.0)
    assert cache.entries == 1  # ttl=0 did not store "y"


async def test_least_recently_used_entry_goes_first_when_full() -> None:
    clock = FakeClock(5000.0)
    cache: ResponseCache[str] = ResponseCache(2, 300.0, clock=clock)
    up = Upstream()
    a, b, c = (make_key(WEB, [("q", q)]) for q in "abc")
    await cache.get_or_fetch(a, up.fetch)
    await cache.get_or_fetch(b, up.fetch)
    assert (await cache.get_or_fetch(a, up.fetch))[1] is True  # a is now the most recent
    await cache.get_or_fetch(c, up.fetch)  # evicts b
    assert cache.entries == 2
    assert (await cache.get_or_fetch(a, up.fetch))[1] is True
    assert (await cache.get_or_fetch(b, up.fetch))[1] is False
    assert up.calls == 4


async def test_errors_are_never_cached() -> None:
    clock = FakeClock(5000.0)
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=clock)
    up = Upstream()
    up.error = RuntimeError("upstream down")
    key = make_key(WEB, [("q", "x")])
    with pytest.raises(RuntimeError):
        await cache.get_or_fetch(key, up.fetch)
    up.error = None
    assert await cache.get_or_fetch(key, up.fetch) == ("answer#2", False, False)
    assert cache.entries == 1


@pytest.mark.parametrize(("size", "ttl"), [(0, 300.0), (10, 0.0)])
async def test_zero_size_or_ttl_disables_storing(size: int, ttl: float) -> None:
    cache: ResponseCache[str] = ResponseCache(size, ttl, clock=FakeClock())
    up = Upstream()
    key = make_key(WEB, [("q", "x")])
    await cache.get_or_fetch(key, up.fetch)
    assert await cache.get_or_fetch(key, up.fetch) == ("answer#2", False, False)
    assert cache.entries == 0


def test_negative_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        ResponseCache(-1, 300.0, clock=FakeClock())
    with pytest.raises(ValueError):
        ResponseCache(10, -1.0, clock=FakeClock())


async def test_bypass_neither_reads_nor_stores() -> None:
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=FakeClock())
    up = Upstream()
    key = make_key(WEB, [("q", "x")])
    await cache.get_or_fetch(key, up.fetch)
    assert await cache.get_or_fetch(key, up.fetch, bypass=True) == ("answer#2", False, False)
    assert await cache.get_or_fetch(key, up.fetch) == ("answer#1", True, False)  # #2 was not stored


# -- single flight ------------------------------------------------------------------------------


async def run_concurrently(
    cache: ResponseCache[str], key: str, up: Upstream, count: int, **kwargs: bool
) -> list[tuple[str, bool, bool] | BaseException]:
    results: list[tuple[str, bool, bool] | BaseException] = []

    async def call() -> None:
        try:
            results.append(await cache.get_or_fetch(key, up.fetch, **kwargs))
        except Exception as exc:
            results.append(exc)

    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(call)
        await wait_until(lambda: up.calls >= 1)
        for _ in range(10):
            await anyio.lowlevel.checkpoint()
        assert up.gate is not None
        up.gate.set()
    return results


async def test_five_identical_concurrent_calls_make_one_upstream_call() -> None:
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=FakeClock())
    up = Upstream()
    up.gate = anyio.Event()
    with anyio.fail_after(5):
        results = await run_concurrently(cache, make_key(WEB, [("q", "x")]), up, 5)
    assert up.calls == 1
    assert sorted(results, key=repr) == [("answer#1", False, False)] + [("answer#1", False, True)] * 4
    assert (cache.stats().misses, cache.stats().shared) == (1, 4)


async def test_single_flight_applies_even_when_storing_is_disabled() -> None:
    cache: ResponseCache[str] = ResponseCache(0, 300.0, clock=FakeClock())
    up = Upstream()
    up.gate = anyio.Event()
    with anyio.fail_after(5):
        results = await run_concurrently(cache, make_key(WEB, [("q", "x")]), up, 3)
    assert up.calls == 1
    assert len(results) == 3


async def test_bypassing_calls_do_not_join_a_flight() -> None:
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=FakeClock())
    up = Upstream()
    up.gate = anyio.Event()
    with anyio.fail_after(5):
        results = await run_concurrently(cache, make_key(WEB, [("q", "x")]), up, 3, bypass=True)
    assert up.calls == 3
    assert all(isinstance(r, tuple) and r[1:] == (False, False) for r in results)


async def test_leader_failure_reaches_every_follower() -> None:
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=FakeClock())
    up = Upstream()
    up.gate = anyio.Event()
    boom = ConnectionError("upstream reset")
    up.error = boom
    with anyio.fail_after(5):
        results = await run_concurrently(cache, make_key(WEB, [("q", "x")]), up, 5)
    assert up.calls == 1
    assert len(results) == 5
    assert sum(r is boom for r in results) == 1  # the leader's own; each follower has its own copy
    assert all(type(r) is ConnectionError and r.args == boom.args for r in results)
    assert len({id(r) for r in results}) == 5
    assert cache.entries == 0


async def test_each_follower_may_change_its_error_without_changing_anyone_elses() -> None:
    """Callers add to the error they raise (attempts, a multi-URL read's pages, warnings): what one adds must not show
    in the answer of another caller who shared the request."""
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=FakeClock())
    up = Upstream()
    up.gate = anyio.Event()
    boom = errors.UpstreamError("Brave answered 503.", status=503, details={"attempts": 1})
    up.error = boom
    with anyio.fail_after(5):
        results = await run_concurrently(cache, make_key(WEB, [("q", "x")]), up, 4)
    failures = [r for r in results if isinstance(r, errors.UpstreamError)]
    assert len(failures) == 4 and up.calls == 1
    for n, failure in enumerate(failures):
        failure.details.setdefault("trace", f"call {n}")
        failure.details["pages"] = [n]
        failure.warnings.append(f"warning {n}")
    for n, failure in enumerate(failures):
        assert failure.details == {"status": 503, "attempts": 1, "trace": f"call {n}", "pages": [n]}
        assert failure.warnings == [f"warning {n}"]
        assert (failure.code, failure.message, failure.retryable, failure.status) == (
            boom.code, boom.message, boom.retryable, 503,
        )  # fmt: skip
    assert any(f.__traceback__ is not None and f is not boom for f in failures)  # where it came from is kept


async def test_what_the_leaders_caller_adds_at_once_never_reaches_a_follower() -> None:
    """The leader's caller adds to its error as soon as it is raised (the fallback chain's warnings, a read's pages),
    before any follower has woken: each follower still gets the error as the fetch raised it."""
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=FakeClock())
    up = Upstream()
    up.gate = anyio.Event()
    up.error = errors.UpstreamError("Brave answered 503.", status=503, details={"attempts": 1})
    key = make_key(WEB, [("q", "x")])
    failures: list[errors.UpstreamError] = []

    async def call(n: int) -> None:
        try:
            await cache.get_or_fetch(key, up.fetch)
        except errors.UpstreamError as exc:  # no await before these: as the callers do
            exc.details.setdefault("trace", f"call {n}")
            exc.warnings.append(f"warning {n}")
            failures.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(call, n)
            await wait_until(lambda: up.calls >= 1)
            for _ in range(10):
                await anyio.lowlevel.checkpoint()
            up.gate.set()
    assert len(failures) == 3 and up.calls == 1
    for failure in failures:
        n = failure.details["trace"]
        assert failure.details == {"status": 503, "attempts": 1, "trace": n}
        assert failure.warnings == [f"warning {n.split()[1]}"]


async def test_cancelled_leader_hands_over_to_a_follower() -> None:
    cache: ResponseCache[str] = ResponseCache(10, 300.0, clock=FakeClock())
    up = Upstream()
    up.gate = anyio.Event()
    key = make_key(WEB, [("q", "x")])
    followers: list[tuple[str, bool, bool]] = []
    leader_outcome: list[str] = []

    async def leader(scope: anyio.CancelScope) -> None:
        with scope:
            await cache.get_or_fetch(key, up.fetch)
            leader_outcome.append("finished")
        leader_outcome.append("cancelled" if scope.cancelled_caught else "left")

    async def follower() -> None:
        followers.append(await cache.get_or_fetch(key, up.fetch))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()
            tg.start_soon(leader, scope)
            await wait_until(lambda: up.calls == 1)
            for _ in range(3):
                tg.start_soon(follower)
            for _ in range(10):
                await anyio.lowlevel.checkpoint()
            scope.cancel()
            await wait_until(lambda: up.calls == 2)  # one follower took over and fetched
            up.gate.set()
    assert leader_outcome == ["cancelled"]
    assert up.calls == 2
    assert sorted(followers) == [("answer#2", False, False), ("answer#2", False, True), ("answer#2", False, True)]
    assert (await cache.get_or_fetch(key, up.fetch))[0] == "answer#2"
