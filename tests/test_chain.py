"""The fallback chain: who answers when a provider fails, what the agent is told, and what never falls back."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from brave_search_mcp.models.envelopes import Result, Section
from brave_search_mcp.models.errors import (
    AuthFailed,
    BraveSearchError,
    CircuitOpen,
    InvalidArgument,
    NetworkError,
    NoResults,
    NotInPlan,
    ProviderMisconfigured,
    QuotaExceeded,
    RateLimited,
    UpstreamError,
    UpstreamTimeout,
    UpstreamValidation,
)
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.providers.breaker import CircuitBreaker
from brave_search_mcp.providers.chain import CONFIG_ERRORS, FallbackChain, story
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.state.memory import MemoryRecords
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxng
from testkit.searxng.provider import make_provider

REQUEST = SearchRequest(query="hello", search_type="web", count=5, offset=0)


def page_of(name: str) -> ProviderPage:
    result = Result(title="t", url=f"https://{name}.example.org/", provider=name)
    return ProviderPage(
        provider=name, sections=[Section(key="web", label="Web results", results=[result])], warnings=[]
    )


Outcome = BraveSearchError | Callable[[], BraveSearchError] | None  # None = answer a page


class Scripted:
    """A provider that answers from a script (an error to raise, or None for a page) and counts its calls."""

    def __init__(self, name: str, *outcomes: Outcome, types: tuple[SearchType, ...] = ("web", "news", "images")):
        self.name = name
        self.outcomes: deque[Outcome] = deque(outcomes)
        self.types = types
        self.calls = 0
        self.gate: anyio.Event | None = None  # when set, search waits on it (to hold a call in flight)

    def supports(self, search_type: SearchType) -> bool:
        return search_type in self.types

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        outcome = self.outcomes.popleft() if self.outcomes else None
        if callable(outcome):
            outcome = outcome()
        if outcome is not None:
            raise outcome
        return page_of(self.name)

    async def aclose(self) -> None:
        return None


def timeout() -> BraveSearchError:
    return UpstreamTimeout("Brave did not answer in time.")


FALLBACK_CASES = [
    AuthFailed("bad key", status=401),
    NotInPlan("plan", status=403),
    QuotaExceeded("quota", status=429),
    RateLimited("slow down", status=429),
    UpstreamError("boom", status=503, retryable=True),
    UpstreamTimeout("slow"),
    NetworkError("refused"),
    ProviderMisconfigured("json off"),
]


@pytest.mark.parametrize("error", FALLBACK_CASES, ids=lambda e: e.code)
@pytest.mark.anyio
async def test_provider_failure_falls_back_with_a_warning_naming_it(error: BraveSearchError, clock: FakeClock) -> None:
    brave, searx = Scripted("brave", error), Scripted("searxng")
    chain = FallbackChain([brave, searx], clock=clock)
    page = await chain.search(REQUEST)
    assert page.provider == "searxng"
    assert [w.code for w in page.warnings] == ["FALLBACK"]
    assert page.warnings[0].message.startswith(f"brave {error.code}: ")
    # a setting that is wrong is not ill health: only waiting could close a breaker, and waiting does not fix it;
    # a 429 its retries could not absorb is not either: the provider answered, asking for a slower pace
    healthy = isinstance(error, (*CONFIG_ERRORS, RateLimited))
    assert chain.snapshot()["brave"]["failures"] == (0 if healthy else 1)


@pytest.mark.anyio
async def test_a_misconfigured_provider_keeps_saying_so_instead_of_being_paused(clock: FakeClock) -> None:
    fake = FakeSearxng()
    fake.json_enabled = False
    searxng = make_provider(fake, clock)
    chain = FallbackChain([searxng], threshold=3, clock=clock)
    for call in range(6):
        with pytest.raises(ProviderMisconfigured) as caught:
            await chain.search(SearchRequest(query=f"q{call}", search_type="web", count=5, offset=0))
        assert caught.value.retryable is False and "search.formats" in caught.value.message
        assert caught.value.provider == "searxng"
    assert chain.snapshot()["searxng"]["state"] == "closed"
    assert len(fake.search_requests()) == 6  # each call asks again: fixing settings.yml shows at once
    await searxng.aclose()


@pytest.mark.anyio
async def test_an_open_breaker_repeats_the_cause_and_errors_name_their_provider(clock: FakeClock) -> None:
    chain = FallbackChain([Scripted("searxng", *[timeout] * 9)], clock=clock)
    for _ in range(3):
        with pytest.raises(UpstreamTimeout) as failed:
            await chain.search(REQUEST)
        assert failed.value.provider == "searxng"
    clock.now += 8
    with pytest.raises(CircuitOpen) as caught:
        await chain.search(REQUEST)
    error = caught.value
    assert error.provider == "searxng"
    assert (error.code, error.retryable) == ("CIRCUIT_OPEN", True)
    assert "status" not in error.details  # no server answered: no HTTP status is made up
    assert "last: TIMEOUT: Brave did not answer in time." in error.message
    assert error.details["retry_after_ms"] == 52_000
    assert error.details["what_to_do"] == (
        "searxng timed out 3 times in a row, so it is paused; the next try goes through in 52 s: retry then "
        "(retry_after_ms)."
    )


@pytest.mark.anyio
async def test_status_reads_the_breakers_other_processes_opened(clock: FakeClock) -> None:
    records = MemoryRecords(clock=clock)
    first = FallbackChain([Scripted("searxng", *[timeout] * 3), Scripted("brave")], clock=clock, records=records)
    for _ in range(3):
        await first.search(REQUEST)
    second = FallbackChain([Scripted("searxng"), Scripted("brave")], clock=clock, records=records)
    assert second.snapshot()["searxng"]["state"] == "closed"  # what this process saw by itself: nothing
    shared = await second.status()
    assert (shared["searxng"]["state"], shared["searxng"]["failures"]) == ("open", 3)
    assert shared["searxng"]["last_error"].startswith("TIMEOUT")


class Probed(Scripted):
    """A scripted provider with a reachability probe that answers ``answers``."""

    def __init__(self, name: str, *outcomes: Outcome, answers: bool = True) -> None:
        super().__init__(name, *outcomes)
        self.answers = answers

    async def probe(self, *, deadline: float | None = None) -> dict[str, Any]:
        return {"provider": self.name, "ok": self.answers}


@pytest.mark.anyio
async def test_a_probe_that_answers_clears_a_misconfiguration_everywhere_but_no_failure_count(clock: FakeClock) -> None:
    """``status --probe`` must not say "probe searxng: ok" beside "searxng: misconfigured": a probe that answers
    shows the setting was fixed, for every process sharing the records; the failures counted stay (only calls
    count them), and a probe that fails proves nothing."""
    records = MemoryRecords(clock=clock)
    searxng = Probed("searxng", timeout, lambda: ProviderMisconfigured("json off"), answers=False)
    first = FallbackChain([searxng, Scripted("brave")], clock=clock, records=records)
    for _ in range(2):
        await first.search(REQUEST)
    before = first.snapshot()["searxng"]
    assert (before["failures"], before["misconfigured"]) == (1, "PROVIDER_MISCONFIGURED: json off")
    assert await first.probe() == [{"provider": "searxng", "ok": False}]
    assert (await first.status())["searxng"]["misconfigured"] == "PROVIDER_MISCONFIGURED: json off"
    other = FallbackChain([Probed("searxng"), Scripted("brave")], clock=clock, records=records)
    assert await other.probe() == [{"provider": "searxng", "ok": True}]  # another process, the instance fixed
    for chain in (other, first):
        shown = (await chain.status())["searxng"]
        assert "misconfigured" not in shown and shown["failures"] == 1, shown


@pytest.mark.parametrize(
    "error",
    [
        InvalidArgument("bad", field="query"),
        UpstreamValidation("brave refused", status=422),
        NoResults("No web results found."),
    ],
    ids=lambda e: e.code,
)
@pytest.mark.anyio
async def test_request_problems_and_no_results_never_fall_back_nor_trip(
    error: BraveSearchError, clock: FakeClock
) -> None:
    brave, searx = Scripted("brave", *[error] * 5), Scripted("searxng")
    chain = FallbackChain([brave, searx], threshold=3, clock=clock)
    for _ in range(5):
        with pytest.raises(type(error)):
            await chain.search(REQUEST)
    assert searx.calls == 0
    assert chain.snapshot()["brave"] == {"state": "closed", "failures": 0, "threshold": 3, "cooldown_seconds": 60.0}


@pytest.mark.anyio
async def test_our_own_throttle_falls_back_without_counting_against_the_provider(clock: FakeClock) -> None:
    def throttled() -> BraveSearchError:
        return RateLimited("client-side limit", status=429, details={"client_side": True})

    brave, searx = Scripted("brave", *[throttled] * 5), Scripted("searxng")
    chain = FallbackChain([brave, searx], threshold=3, clock=clock)
    for _ in range(5):
        assert (await chain.search(REQUEST)).provider == "searxng"
    assert chain.snapshot()["brave"]["state"] == "closed"
    assert brave.calls == 5


@pytest.mark.anyio
async def test_no_results_after_a_fallback_still_carries_the_fallback_warning(clock: FakeClock) -> None:
    chain = FallbackChain([Scripted("brave", timeout()), Scripted("searxng", NoResults("none"))], clock=clock)
    with pytest.raises(NoResults) as caught:
        await chain.search(REQUEST)
    assert [w.code for w in caught.value.warnings] == ["FALLBACK"]


@pytest.mark.anyio
async def test_open_breaker_skips_the_dead_provider_until_one_half_open_trial(clock: FakeClock) -> None:
    dead = FakeSearxng()
    dead.fail_next(503, 1000)
    searxng = SearxngProvider(
        SearxngConfig(base_url="http://dead.test", retries=0),
        transport=dead.mock_transport(),
        clock=clock,
        sleep=clock.sleep,
    )
    backup = Scripted("backup")
    chain = FallbackChain([searxng, backup], threshold=3, cooldown=60.0, clock=clock)
    for _ in range(3):
        assert (await chain.search(REQUEST)).provider == "backup"
    assert len(dead.search_requests()) == 3
    assert chain.snapshot()["searxng"]["state"] == "open"
    for _ in range(5):
        page = await chain.search(REQUEST)
        assert page.provider == "backup"
        assert "searxng CIRCUIT_OPEN" in page.warnings[0].message
    assert len(dead.search_requests()) == 3  # not one request to the open provider
    clock.now += 60
    await chain.search(REQUEST)  # the half-open trial fails: re-opened
    assert len(dead.search_requests()) == 4
    await chain.search(REQUEST)
    assert len(dead.search_requests()) == 4
    assert chain.snapshot()["searxng"]["state"] == "open"
    assert chain.snapshot()["searxng"]["retry_in_seconds"] == 60.0
    await searxng.aclose()


@pytest.mark.anyio
async def test_half_open_trial_success_closes_the_breaker(clock: FakeClock) -> None:
    brave, backup = Scripted("brave", timeout, timeout, timeout), Scripted("backup")
    chain = FallbackChain([brave, backup], threshold=3, cooldown=30.0, clock=clock)
    for _ in range(3):
        await chain.search(REQUEST)
    clock.now += 30
    page = await chain.search(REQUEST)  # script exhausted: the trial succeeds
    assert page.provider == "brave" and page.warnings == []
    assert chain.snapshot()["brave"]["state"] == "closed"
    assert brave.calls == 4


@pytest.mark.anyio
async def test_only_one_trial_runs_while_half_open(clock: FakeClock) -> None:
    brave, backup = Scripted("brave", timeout, timeout, timeout), Scripted("backup")
    chain = FallbackChain([brave, backup], threshold=3, clock=clock)
    for _ in range(3):
        await chain.search(REQUEST)
    clock.now += 60
    brave.gate = anyio.Event()
    providers: list[str] = []

    async def one() -> None:
        providers.append((await chain.search(REQUEST)).provider)

    async with anyio.create_task_group() as tg:
        tg.start_soon(one)  # the trial, held in flight by the gate
        await anyio.wait_all_tasks_blocked()
        for _ in range(3):
            await one()  # concurrent callers go straight to the backup
        brave.gate.set()
    assert providers == ["backup", "backup", "backup", "brave"]
    assert brave.calls == 4


@pytest.mark.anyio
async def test_cancelled_trial_does_not_wedge_the_breaker(clock: FakeClock) -> None:
    brave, backup = Scripted("brave", timeout, timeout, timeout), Scripted("backup")
    chain = FallbackChain([brave, backup], threshold=3, clock=clock)
    for _ in range(3):
        await chain.search(REQUEST)
    clock.now += 60
    brave.gate = anyio.Event()
    with anyio.move_on_after(0):  # cancelled while the trial waits
        await chain.search(REQUEST)
    brave.gate = None
    assert (await chain.search(REQUEST)).provider == "brave"


@pytest.mark.anyio
async def test_all_failing_raises_the_first_error_listing_every_provider(clock: FakeClock) -> None:
    chain = FallbackChain(
        [Scripted("brave", AuthFailed("The API key is invalid.", status=401)), Scripted("searxng", timeout())],
        clock=clock,
    )
    with pytest.raises(AuthFailed) as caught:
        await chain.search(REQUEST)
    error = caught.value
    assert error.details["providers"] == [
        {"provider": "brave", "code": "AUTH_FAILED", "reason": "The API key is invalid."},
        {"provider": "searxng", "code": "TIMEOUT", "reason": "Brave did not answer in time."},
    ]
    assert "searxng TIMEOUT" in error.message


@pytest.mark.anyio
async def test_every_breaker_open_is_a_retryable_error_with_the_wait(clock: FakeClock) -> None:
    chain = FallbackChain([Scripted("brave", *[timeout] * 9), Scripted("searxng", *[timeout] * 9)], clock=clock)
    for _ in range(3):
        with pytest.raises(UpstreamTimeout):
            await chain.search(REQUEST)
    clock.now += 20
    with pytest.raises(CircuitOpen) as caught:
        await chain.search(REQUEST)
    assert caught.value.retryable is True
    assert caught.value.details["retry_after_seconds"] == 40.0
    assert [p["code"] for p in caught.value.details["providers"]] == ["CIRCUIT_OPEN", "CIRCUIT_OPEN"]


@pytest.mark.anyio
async def test_providers_that_do_not_serve_the_type_are_skipped_silently(clock: FakeClock) -> None:
    brave, searx = Scripted("brave", types=("web", "videos")), Scripted("searxng", types=("web",))
    chain = FallbackChain([searx, brave], clock=clock)
    page = await chain.search(SearchRequest(query="cats", search_type="videos", count=5, offset=0))
    assert (page.provider, page.warnings, searx.calls) == ("brave", [], 0)
    only = FallbackChain([Scripted("searxng", types=("web",))], clock=clock)
    with pytest.raises(InvalidArgument):
        await only.search(SearchRequest(query="cats", search_type="videos", count=5, offset=0))


@pytest.mark.anyio
async def test_no_second_provider_once_the_deadline_has_passed(clock: FakeClock) -> None:
    def slow_timeout() -> BraveSearchError:
        clock.now += 10  # the first provider used the whole call budget
        return UpstreamTimeout("slow")

    brave, searx = Scripted("brave", slow_timeout), Scripted("searxng")
    chain = FallbackChain([brave, searx], clock=clock)
    with pytest.raises(UpstreamTimeout):
        await chain.search(REQUEST, deadline=clock() + 5)
    assert searx.calls == 0


@pytest.mark.anyio
async def test_real_searxng_json_off_falls_back_and_says_which_setting(clock: FakeClock) -> None:
    fake = FakeSearxng()
    fake.json_enabled = False
    searxng = SearxngProvider(
        SearxngConfig(base_url="http://s.test"), transport=fake.mock_transport(), clock=clock, sleep=clock.sleep
    )
    chain = FallbackChain([searxng, Scripted("brave")], clock=clock)
    page = await chain.search(REQUEST)
    assert page.provider == "brave"
    assert "searxng PROVIDER_MISCONFIGURED" in page.warnings[0].message
    assert "search.formats" in page.warnings[0].message
    await searxng.aclose()


def test_provider_names_must_be_unique() -> None:
    with pytest.raises(ValueError):
        FallbackChain([Scripted("brave"), Scripted("brave")])
    with pytest.raises(ValueError):
        FallbackChain([])


def test_a_paused_provider_s_story_tells_what_its_failures_were(clock: FakeClock) -> None:
    breaker = CircuitBreaker("searxng", threshold=5, clock=clock)
    breaker.record_failure("NETWORK_ERROR: Could not reach SearXNG.")
    assert story(breaker) == "could not be reached"
    breaker.record_failure("UPSTREAM_ERROR: SearXNG answered HTTP 502.")
    assert story(breaker) == "failed 2 times in a row; the last time it answered with an error"
    breaker.record_failure("TIMEOUT: SearXNG did not answer within 8 s.")
    breaker.record_failure("TIMEOUT: SearXNG did not answer within 8 s.")
    assert story(breaker) == "failed 4 times in a row; the last 2 times it timed out"
    other = CircuitBreaker("searxng", threshold=5, clock=clock)
    other.adopt(breaker.export())  # another process tells the same story
    assert story(other) == story(breaker)
    other.adopt({"failures": 3, "opened_wall": None, "last_error": "TIMEOUT: x"})  # a record from before repeats
    assert story(other) == "failed 3 times in a row; the last time it timed out"
    breaker.record_success()
    breaker.record_failure("PARSE_ERROR: SearXNG answered text/html, not JSON.")
    assert story(breaker) == "answered unreadably"


@pytest.mark.anyio
async def test_a_call_refused_while_the_trial_is_in_flight_is_not_told_to_retry_in_0_s(clock: FakeClock) -> None:
    searx = Scripted("searxng", timeout)
    chain = FallbackChain([searx], threshold=1, clock=clock)
    with pytest.raises(UpstreamTimeout):
        await chain.search(REQUEST)
    clock.now += 60
    searx.gate = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(chain.search, REQUEST)  # the trial, held in flight by the gate
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(CircuitOpen) as caught:
            await chain.search(REQUEST)
        searx.gate.set()
    error = caught.value
    assert "0 s" not in error.message and "a trial call is under way" in error.message
    assert error.details["what_to_do"] == (
        "searxng timed out, so it is paused; a trial call is under way now: retry in a moment (retry_after_ms)."
    )
    assert error.details["retry_after_ms"] == 1000  # not 1 ms: the trial has not answered yet
