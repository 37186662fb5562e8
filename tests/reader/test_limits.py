"""Caps and failures a site can cause: body size while streaming, gzip bombs, time, HTTP statuses, politeness."""

from __future__ import annotations

import gzip
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest

from brave_search_mcp.models.errors import (
    BraveSearchError,
    FetchForbidden,
    NotFound,
    ParseError,
    RateLimited,
    ResponseTooLarge,
    UnsupportedContent,
    UpstreamError,
    UpstreamTimeout,
)
from brave_search_mcp.reader import UrlReader
from brave_search_mcp.state.location import open_state
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.sites import FakeSite, Reply

from .conftest import MakeReader, read

CAP = 256 * 1024
PAGE = "<html><head><title>T</title></head><body><article><p>{}</p></article></body></html>"


def _endless() -> Iterator[bytes]:
    chunk = b"<p>" + b"filler text " * 5000 + b"</p>"
    for _ in range(100_000):
        yield chunk


@pytest.mark.anyio
async def test_a_body_over_the_cap_is_abandoned_while_streaming(make_reader: MakeReader, site: FakeSite) -> None:
    site.route("/endless", Reply(stream=_endless))  # chunked: no Content-Length to refuse up front
    started = time.monotonic()
    with pytest.raises(ResponseTooLarge) as caught:
        await make_reader(read_max_bytes=CAP).read(site.url("/endless"))
    assert caught.value.details["limit_bytes"] == CAP
    assert "127.0.0.1" in caught.value.message
    assert time.monotonic() - started < 5  # stopped near the cap, not after the site's gigabytes


@pytest.mark.anyio
async def test_a_declared_length_over_the_cap_is_refused_without_reading(
    make_reader: MakeReader, site: FakeSite
) -> None:
    site.page("/big", PAGE.format("x" * (CAP + 10)))
    with pytest.raises(ResponseTooLarge) as caught:
        await make_reader(read_max_bytes=CAP).read(site.url("/big"))
    assert caught.value.details["content_length"] > CAP


@pytest.mark.anyio
async def test_a_gzip_bomb_is_refused_at_the_cap(make_reader: MakeReader, site: FakeSite) -> None:
    bomb = gzip.compress(b"\0" * (32 * 1024 * 1024), compresslevel=9)  # ~32 KB on the wire, 32 MB unpacked
    assert len(bomb) < CAP
    site.route("/bomb", Reply(raw_gzip=bomb))
    with pytest.raises(ResponseTooLarge):
        await make_reader(read_max_bytes=CAP).read(site.url("/bomb"))


@pytest.mark.anyio
async def test_a_broken_gzip_body_is_a_parse_error(make_reader: MakeReader, site: FakeSite) -> None:
    site.route("/broken", Reply(raw_gzip=b"\x1f\x8b\x08\x00not really gzip at all"))
    with pytest.raises(ParseError):
        await make_reader().read(site.url("/broken"))


@pytest.mark.anyio
async def test_a_gzip_page_that_fits_is_read(make_reader: MakeReader, site: FakeSite) -> None:
    site.route("/zipped", Reply(body=PAGE.format("compressed words " * 40).encode(), gzip=True))
    answer, _ = await read(make_reader(), site.url("/zipped"))
    assert "compressed words" in answer["content"]


@pytest.fixture
async def real_time_reader() -> AsyncIterator[Callable[..., UrlReader]]:
    """Readers on the real clock: a site's stall is real time, so the read's one deadline must be too."""
    state = await open_state("memory", cache_max_entries=10, clock=time.monotonic, sleep=anyio.sleep)

    def make(**overrides: Any) -> UrlReader:
        settings = make_settings(read_allowed_hosts=("127.0.0.1",), **overrides)
        return UrlReader(settings, state, time.monotonic)

    yield make
    await state.aclose()


@pytest.mark.anyio
async def test_a_site_that_never_answers_times_out_once_within_the_read_timeout(
    real_time_reader: Callable[..., UrlReader], site: FakeSite
) -> None:
    """One deadline per read, its tries included: a stalled site used to cost twice the timeout (issue 37)."""
    site.route("/hang", Reply(body=b"late", stall=30))
    started = time.monotonic()
    with pytest.raises(UpstreamTimeout) as caught:
        await real_time_reader(read_timeout_seconds=0.3).read(site.url("/hang"))
    assert time.monotonic() - started < 3
    assert site.count("/hang") == 1  # no second try: the first one used the read's whole time
    assert caught.value.retryable
    assert caught.value.message == "127.0.0.1 did not answer within 0.3 s (1 attempt)."
    assert caught.value.details == {"timeout_seconds": 0.3, "attempts": 1}


@pytest.mark.anyio
async def test_a_retry_shares_the_read_timeout_and_the_error_counts_both_tries(
    real_time_reader: Callable[..., UrlReader], site: FakeSite
) -> None:
    answers = iter([Reply(status=503), Reply(body=b"late", stall=30)])
    site.route("/flaky", lambda seen: next(answers))
    with pytest.raises(UpstreamTimeout) as caught:
        await real_time_reader(read_timeout_seconds=1.0).read(site.url("/flaky"))
    assert site.count("/flaky") == 2
    assert caught.value.message == "127.0.0.1 did not answer within 1 s (2 attempts)."
    assert caught.value.details["attempts"] == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (404, NotFound, False),
        (410, NotFound, False),
        (401, FetchForbidden, False),
        (403, FetchForbidden, False),
        (429, UpstreamError, True),
        (500, UpstreamError, True),
        (503, UpstreamError, True),
        (501, UpstreamError, False),
        (400, UpstreamError, False),
    ],
)
async def test_http_statuses_become_the_codes_an_agent_acts_on(
    make_reader: MakeReader, site: FakeSite, status: int, kind: type[BraveSearchError], retryable: bool
) -> None:
    site.route("/s", Reply(status=status, body=b"nope", headers={"Retry-After": "7"}))
    with pytest.raises(kind) as caught:
        await make_reader().read(site.url("/s"))
    error = caught.value
    assert error.retryable is retryable
    assert "127.0.0.1" in error.message
    assert error.details["status"] == status
    if status in (429, 503):
        assert error.details["retry_after_seconds"] == 7


@pytest.mark.anyio
async def test_errors_are_not_cached(make_reader: MakeReader, site: FakeSite) -> None:
    site.route("/flaky", Reply(status=503))
    reader = make_reader()
    with pytest.raises(UpstreamError):
        await reader.read(site.url("/flaky"))
    site.page("/flaky", PAGE.format("back again " * 20))
    answer, _ = await read(reader, site.url("/flaky"))
    assert "back again" in answer["content"]


@pytest.mark.anyio
async def test_an_unsupported_type_is_refused_naming_it(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/logo.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 1000, content_type="image/png")
    site.page("/blob", b"\x00\x01\x02 binary", content_type="application/octet-stream")
    with pytest.raises(UnsupportedContent) as caught:
        await make_reader().read(site.url("/logo.png"))
    assert "image/png" in caught.value.message and caught.value.details["content_type"] == "image/png"
    with pytest.raises(UnsupportedContent):
        await make_reader().read(site.url("/blob"))


@pytest.mark.anyio
async def test_one_host_gets_at_most_two_requests_a_second(
    make_reader: MakeReader, site: FakeSite, clock: FakeClock
) -> None:
    for n in range(4):
        site.page(f"/p{n}", PAGE.format(f"page {n} " * 30))
    reader = make_reader()
    start = clock()
    for n in range(4):
        await reader.read(site.url(f"/p{n}"))
    # Two starts fit the first one-second window; the next two wait for it (on the fake clock, not real time).
    assert clock() - start >= 1.0
    assert sum(clock.sleeps) >= 1.0


@pytest.mark.anyio
async def test_a_read_whose_host_slot_comes_after_the_deadline_fails_at_once(
    make_reader: MakeReader, site: FakeSite, clock: FakeClock
) -> None:
    for n in range(3):
        site.page(f"/q{n}", PAGE.format(f"page {n} " * 30))
    reader = make_reader()
    await reader.read(site.url("/q0"))
    await reader.read(site.url("/q1"))
    with pytest.raises(RateLimited) as caught:
        await reader.read(site.url("/q2"), deadline=clock() + 0.1)
    assert caught.value.retryable and caught.value.details["retry_after_ms"] > 100
    assert site.count("/q2") == 0


@pytest.mark.anyio
async def test_one_more_try_after_a_server_error_not_after_a_refusal(
    make_reader: MakeReader, site: FakeSite, clock: FakeClock
) -> None:
    """The reader runs the one retry rule of every upstream: a 503 or a dropped answer gets one more try."""
    answers = iter([Reply(status=503), Reply(body=PAGE.format("second time lucky " * 20).encode())])
    site.route("/flaky", lambda seen: next(answers))
    answer, _ = await read(make_reader(), site.url("/flaky"))
    assert "second time lucky" in answer["content"] and site.count("/flaky") == 2
    assert len(clock.sleeps) >= 1  # the backoff waited on the injected clock, not on real time
    site.route("/gone", Reply(status=404))
    with pytest.raises(NotFound):
        await make_reader().read(site.url("/gone"))
    assert site.count("/gone") == 1  # a 404 cannot get better: never retried
    site.route("/down", Reply(status=502))
    with pytest.raises(UpstreamError) as caught:
        await make_reader().read(site.url("/down"))
    assert caught.value.retryable and site.count("/down") == 2
