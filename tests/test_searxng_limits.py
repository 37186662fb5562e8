"""The SearXNG provider's politeness towards an instance and its bot limiter (request starts per second,
headers the limiter lets through, no retry of its 429, redirects never followed), and the status probe."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import anyio.lowlevel
import httpx2
import pytest

from brave_search_mcp._version import __version__
from brave_search_mcp.models.errors import ProviderMisconfigured, RateLimited, UpstreamValidation
from brave_search_mcp.providers.protocol import ProviderPage
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.providers.searxng.pace import pace_text, slower
from brave_search_mcp.ratelimit.plan import PlanState
from brave_search_mcp.state.location import open_state
from testkit.clock import FakeClock, ParallelClock
from testkit.searxng import FakeSearxng
from testkit.searxng.provider import BASE, make_provider
from testkit.searxng.provider import search_request as req

# ------------------------------------------------------------------------------------ politeness


def _timed_transport(searx: FakeSearxng, clock: FakeClock, starts: list[float]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        starts.append(clock())
        reply = searx.reply_to(request)
        return httpx2.Response(reply.status, headers=reply.headers, content=reply.body)

    return httpx2.MockTransport(handler)


def _max_in_any_window(starts: list[float], window: float = 1.0) -> int:
    return max(sum(1 for t in starts if s <= t < s + window) for s in starts)


@pytest.mark.anyio
async def test_at_most_two_requests_start_in_any_one_second(searx: FakeSearxng, clock: FakeClock) -> None:
    starts: list[float] = []
    provider = make_provider(_timed_transport(searx, clock, starts), clock)
    for n in range(5):
        await provider.search(req(query=f"q{n}"))  # five searches (the same one would come from the cache)
    assert starts == [1000.0, 1000.0, 1001.0, 1001.0, 1002.0]
    assert _max_in_any_window(starts) == 2
    await provider.aclose()


@pytest.mark.anyio
async def test_limiter_holds_for_concurrent_callers_too(searx: FakeSearxng, clock: FakeClock) -> None:
    starts: list[float] = []
    provider = make_provider(_timed_transport(searx, clock, starts), clock)
    async with anyio.create_task_group() as tg:
        for n in range(6):
            tg.start_soon(provider.search, req(query=f"q{n}"))
    assert len(starts) == 6
    assert _max_in_any_window(starts) <= 2
    await provider.aclose()


@pytest.mark.anyio
async def test_limiter_fails_fast_when_the_wait_outlasts_the_deadline(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    await searxng.search(req(query="one"))
    await searxng.search(req(query="two"))
    with pytest.raises(RateLimited) as caught:
        await searxng.search(req(), deadline=clock() + 0.5)
    assert caught.value.details["client_side"] is True
    assert caught.value.details["retry_after_seconds"] == 1.0
    assert len(searx.search_requests()) == 2  # nothing was sent
    assert clock.sleeps == []  # and nothing waited


@pytest.mark.anyio
async def test_headers_name_the_tool_and_pass_a_bot_limiter(searx: FakeSearxng, clock: FakeClock) -> None:
    searx.enable_limiter(clock=clock)  # as an instance with server.limiter: true
    provider = make_provider(searx, clock, headers={"X-Instance-Token": "tok-not-real"})
    for n in range(6):  # more than the 4 API requests an hour a GET with format=json in the URL may make
        await provider.search(req(query=f"query {n}"))
    sent = searx.search_requests()
    assert [r.status for r in sent] == [200] * 6
    headers = sent[0].headers
    assert headers["user-agent"].startswith(f"brave-search-mcp/{__version__}")
    assert "text/html" in headers["accept"] and headers["accept"].startswith("application/json")
    assert headers["accept-language"] == "en" and "gzip" in headers["accept-encoding"]
    assert headers["x-instance-token"] == "tok-not-real"
    await provider.aclose()


@pytest.mark.anyio
async def test_the_limiters_429_slows_the_pace_and_the_search_still_answers(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.enable_limiter(clock=clock)  # a stock instance: 15 requests in any 20 s, refused ones counted too
    for n in range(15):
        await searxng.search(req(query=f"burst {n}"))
    started = clock()
    page = await searxng.search(req(query="one too many"), deadline=clock() + 60)
    assert [r.status for r in searx.search_requests()[15:]] == [429, 200]  # one refusal, then an answer
    assert clock() - started == pytest.approx(21.0)  # it sat out the instance's whole window (and a second)
    assert page.attempts == 2  # the refused request counts as sent
    pace = (await searxng.status())["pace"]
    assert (pace["plan_rate"], pace["plan_burst"]) == (pytest.approx(15 / 21), 15)  # learned


@pytest.mark.anyio
async def test_a_429_whose_wait_outlasts_the_deadline_says_how_long_to_wait(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.enable_limiter(clock=clock)
    for n in range(15):
        await searxng.search(req(query=f"burst {n}"))
    with pytest.raises(RateLimited) as caught:
        await searxng.search(req(query="one too many"), deadline=clock() + 5)
    assert len(searx.search_requests()) == 16  # nothing more was sent after the refusal
    error = caught.value
    assert error.retryable is True and error.details["retry_after_ms"] == 21_000
    assert "bot limiter answered 429" in error.message and "Retry in 21.0 s" in error.message
    assert clock.sleeps == [1.0] * 7  # only the pace of 2/s was waited for, not the refusal's window


@pytest.mark.anyio
async def test_429_after_429_ends_the_call_with_the_wait(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.fail_next(429, 10)  # an instance stricter than SearXNG's stock limiter
    started = clock()
    with pytest.raises(RateLimited) as caught:
        await searxng.search(req(), deadline=clock() + 60)
    assert len(searx.search_requests()) == 3 and clock() - started == pytest.approx(42.0)
    assert caught.value.details["retry_after_ms"] == 21_000 and caught.value.details["limited"] == 3
    pace = (await searxng.status())["pace"]
    assert (pace["plan_rate"], pace["plan_burst"]) == (pytest.approx(5 / 21), 5)  # 15 in 21 s, then 5 in 21 s


@pytest.mark.anyio
async def test_a_learned_pace_is_in_the_shared_state_for_every_process(tmp_path: Path, clock: FakeClock) -> None:
    searx = FakeSearxng()
    searx.fail_next(429)
    first = await open_state(f"sqlite://{tmp_path / 's.db'}", cache_max_entries=16)
    second = await open_state(f"sqlite://{tmp_path / 's.db'}", cache_max_entries=16)
    config = SearxngConfig(BASE)
    provider = make_provider(searx, clock, limiter=config.queue(first.limiter, "searxng:one"))
    with pytest.raises(RateLimited):  # the learned pace's wait outlasts this short call: nothing more is sent
        await provider.search(req(), deadline=clock() + 1)
    other = config.queue(second.limiter, "searxng:one")  # another process on the same state
    snapshot = await other.snapshot()
    assert (snapshot["plan_rate"], snapshot["plan_burst"]) == (pytest.approx(15 / 21), 15)
    assert snapshot["blocked_until"] is not None  # and it holds its requests until the instance's window passed
    for item in (provider, first, second):
        await item.aclose()


@pytest.mark.parametrize("query", ["!!g hello", "hello !!w"])
@pytest.mark.anyio
async def test_a_redirect_off_the_instance_is_never_followed(query: str, clock: FakeClock) -> None:
    seen: list[str] = []

    def bang(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return httpx2.Response(302, headers={"Location": "https://www.google.com/search?q=hello"})

    transport = httpx2.MockTransport(bang)
    provider = make_provider(transport, clock)
    with pytest.raises(UpstreamValidation) as caught:
        await provider.search(req(query=query))
    await provider.aclose()
    assert seen == [f"{BASE}/search"]  # one request, to the instance only
    error = caught.value
    assert error.retryable is False and error.details["status"] == 302
    assert "www.google.com" in error.message and "!!bang" in error.message


@pytest.mark.anyio
async def test_a_public_instance_turning_us_away_is_a_misconfiguration(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    searx.enable_limiter(public_instance=True, clock=clock)
    await searxng.search(req(query="a"))
    await searxng.search(req(query="b"))
    with pytest.raises(ProviderMisconfigured) as caught:  # 429, a slower try, and then it sends us away for good
        await searxng.search(req(query="c"), deadline=clock() + 60)
    assert [r.status for r in searx.search_requests()] == [200, 200, 429, 302]
    assert caught.value.details["status"] == 302 and "server.limiter" in caught.value.message
    assert searx.requests[-1].path == "/search"  # the redirect to "/" was not followed


# ------------------------------------------------------------------------------------ the status probe


@pytest.mark.parametrize(("json_on", "ok", "code"), [(True, True, None), (False, False, "PROVIDER_MISCONFIGURED")])
@pytest.mark.anyio
async def test_probe_tells_json_output_on_from_off_without_searching(
    searxng: SearxngProvider, searx: FakeSearxng, json_on: bool, ok: bool, code: str | None
) -> None:
    searx.json_enabled = json_on
    outcome = await searxng.probe()
    assert (outcome["ok"], outcome.get("code"), outcome["json_output"]) == (ok, code, json_on)
    assert outcome["provider"] == "searxng" and outcome["http_status"] == (400 if json_on else 403)
    asked = searx.requests[-1]
    assert (asked.method, asked.params, asked.engine_query) == ("POST", {"format": "json"}, None)  # no engine ran
    if not json_on:
        assert "search.formats" in outcome["message"]


@pytest.mark.anyio
async def test_probe_of_something_else_or_nothing(clock: FakeClock) -> None:
    html = httpx2.MockTransport(lambda r: httpx2.Response(200, text="<html>", headers={"Content-Type": "text/html"}))
    other = make_provider(html, clock)
    wrong = await other.probe()
    assert (wrong["ok"], wrong["code"]) == (False, "PROVIDER_MISCONFIGURED") and "base URL" in wrong["message"]

    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    down = make_provider(httpx2.MockTransport(refuse), clock)
    gone = await down.probe()
    assert (gone["ok"], gone["code"]) == (False, "NETWORK_ERROR")
    await other.aclose()
    await down.aclose()


# ------------------------------------------------------------------------------------ the pace a 429 teaches


def test_each_429_moves_the_pace_one_step_down_and_holds_for_its_window() -> None:
    plan, now, seen = PlanState.known(2.0, 2), 100.0, []
    for _ in range(4):
        now += 100.0  # each 429 after the last one's hold
        plan = slower(plan, now)
        rate, burst = plan.in_force(now) or (0.0, 0)
        seen.append((burst, round(burst / rate, 1), round(plan.blocked_until - now, 1)))
    # the stock burst window, then both stock windows at once (150 in 600 s); stricter instances only wait
    assert seen == [(15, 21.0, 21.0), (5, 21.0, 21.0), (5, 21.0, 21.0), (5, 21.0, 21.0)]


def test_a_retry_after_longer_than_the_window_is_waited_and_a_slower_plan_runs_whole_windows() -> None:
    plan = slower(PlanState.known(2.0, 2), 100.0, retry_after=90.0)
    assert plan.blocked_until == 190.0
    assert plan.spread(100.0) is None  # whole windows may start at once


# ------------------------------------------------------------------------------------ waits that say why (issue 47)


async def _a_429_held_by(provider: SearxngProvider, searx: FakeSearxng, clock: ParallelClock) -> list[ProviderPage]:
    """14 searches, then 4 at once on a stock limiter: the 16th request gets its 429, the others queue behind."""
    searx.enable_limiter(clock=clock)
    for n in range(14):
        await provider.search(req(query=f"burst {n}"))
    pages: dict[int, ProviderPage] = {}

    async def one(n: int) -> None:
        pages[n] = await provider.search(req(query=f"queued {n}"), deadline=clock() + 60)

    async with anyio.create_task_group() as tg:
        for n in range(4):
            tg.start_soon(one, n)
    return [pages[n] for n in range(4)]


@pytest.mark.anyio
async def test_calls_slowed_by_a_429_say_how_long_they_waited_why_and_the_pace_now() -> None:
    clock, searx = ParallelClock(), FakeSearxng()
    provider = make_provider(searx, clock)
    async with clock.running():
        pages = await _a_429_held_by(provider, searx, clock)
    await provider.aclose()
    assert [r.status for r in searx.search_requests()].count(429) == 1
    waits = [[w.message for w in p.warnings if w.code == "RATE_LIMIT_WAIT"] for p in pages]
    assert waits[0] == []  # the first went at once
    told = [w[0] for w in waits[1:]]
    assert len(told) == 3 and all(
        re.match(r"This search spent (2\d|3\d) s waiting for its turn at SearXNG: ", m) for m in told
    )
    assert sum("bot limiter answered 429 (too many requests) to it; the pace is now 15 requests per 21 s" in m
               for m in told) == 1  # fmt: skip
    assert sum("answered 429 (too many requests) to an earlier search, so every search waits for the slower pace it "
               "allows: 15 requests per 21 s" in m for m in told) == 2  # fmt: skip


@pytest.mark.anyio
async def test_a_call_that_could_not_start_before_its_deadline_fails_at_once_saying_why() -> None:
    clock, searx = ParallelClock(), FakeSearxng()
    provider = make_provider(searx, clock)
    refused: list[RateLimited] = []

    async def late_caller() -> None:
        while (await provider.status())["pace"]["blocked_until"] is None:  # until the 429's hold is on
            await anyio.lowlevel.checkpoint()
        sent, started = len(searx.search_requests()), clock()
        with pytest.raises(RateLimited) as caught:
            await provider.search(req(query="late"), deadline=clock() + 10)
        assert clock() == started and len(searx.search_requests()) == sent  # at once, nothing sent
        refused.append(caught.value)

    async with clock.running(), anyio.create_task_group() as tg:
        tg.start_soon(late_caller)
        await _a_429_held_by(provider, searx, clock)
    await provider.aclose()
    error = refused[0]
    assert error.code == "RATE_LIMITED" and error.details["client_side"] is True
    assert 15_000 <= error.details["retry_after_ms"] <= 25_000
    assert error.message.startswith("This search could not start for 2")
    assert "past its deadline, so nothing was sent: SearXNG's bot limiter answered 429" in error.message
    assert "15 requests per 21 s" in error.message


def test_pace_reads_as_requests_per_window() -> None:
    assert pace_text((2.0, 2)) == "2 requests a second"
    assert pace_text((15 / 21, 15)) == "15 requests per 21 s"
    assert pace_text((5 / 21, 5)) == "5 requests per 21 s"
    assert pace_text(None) == "a pace not yet known"


@pytest.mark.anyio
async def test_searches_queued_ahead_are_the_why_of_a_refusal_without_any_429() -> None:
    clock, searx = ParallelClock(), FakeSearxng()
    provider = make_provider(searx, clock)
    outcomes: dict[int, ProviderPage | RateLimited] = {}

    async def one(n: int) -> None:
        try:
            outcomes[n] = await provider.search(req(query=f"q{n}"), deadline=clock() + 2.5)
        except RateLimited as exc:
            outcomes[n] = exc

    async with clock.running(), anyio.create_task_group() as tg:
        for n in range(8):  # 2 a second: six fit before the deadline, the last two are refused at once
            tg.start_soon(one, n)
    await provider.aclose()
    refused = [o for o in outcomes.values() if isinstance(o, RateLimited)]
    assert len(refused) == 2 and len(searx.search_requests()) == 6
    said = re.compile(
        r"This search could not start for \d s, past its deadline, so nothing was sent: \d other searches were "
        r"queued ahead of it at the pace of 2 requests a second\."
    )
    assert all(said.match(e.message) for e in refused)


@pytest.mark.anyio
async def test_a_later_page_refused_by_the_queue_does_not_say_nothing_was_sent(
    searxng: SearxngProvider, searx: FakeSearxng, clock: FakeClock
) -> None:
    with pytest.raises(RateLimited) as caught:  # results 61-70 lie on page 3; pages 1 and 2 spend the second's pace
        await searxng.search(req(query="many", offset=6), deadline=clock() + 0.5)
    error = caught.value
    assert (error.details["attempts"], len(searx.search_requests())) == (2, 2)
    assert "nothing was sent" not in error.message and "nothing more was sent" in error.message
