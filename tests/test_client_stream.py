"""Brave's streamed POST (Answers) keeps the rules a GET keeps: a closed client sends nothing, the stream's rate-limit
headers reach admission, a response is closed whatever fails after it arrived, and only a 429 is sent again (a 5xx
may have been billed: sending it again could bill twice).

On the fake Brave (``testkit.brave``) through its mock transport and the fake clock; the scripted upstream where a
test needs to see one response's own stream closed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.plan import horizon
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from tests.brave_client_support import Upstream, make_client, settings

pytestmark = pytest.mark.anyio

CHAT = Endpoint.CHAT.value
QUESTION = {"model": "brave", "stream": True, "messages": [{"role": "user", "content": "how do rate limits work?"}]}
SSE = b'data: {"choices": [{"delta": {"content": "An answer."}}]}\n\ndata: [DONE]\n\n'


def on_fake(fake: FakeBrave, clock: FakeClock, **overrides: Any) -> BraveClient:
    return BraveClient(
        settings(**overrides), transport=fake.mock_transport(), clock=clock, sleep=clock.sleep, rng=lambda: 0.5
    )


async def payloads(client: BraveClient) -> list[str]:
    with anyio.fail_after(10):
        return [payload async for payload in client.stream_post(Endpoint.CHAT, QUESTION)]


async def test_a_closed_client_streams_nothing_and_says_so_as_a_get_does() -> None:
    fake, clock = FakeBrave(rate_per_second=1000), FakeClock()
    client = on_fake(fake, clock)
    async with client:
        await client.get(Endpoint.WEB, [("q", "opens the pool")])
    with pytest.raises(errors.Cancelled) as get:
        await client.get(Endpoint.WEB, [("q", "after the close")])
    with pytest.raises(errors.Cancelled) as post:
        await payloads(client)
    assert post.value.message == get.value.message == "The Brave client is closed."
    assert [r.path for r in fake.requests] == ["/res/v1/web/search"]  # no pool was opened again to send it
    assert client.counters()["answers"].by_code == {"CANCELLED": 1}


async def test_a_streamed_answers_rate_headers_set_the_answers_plan() -> None:
    """A 200 stream stating 1/s with 0 left: the Answers family shows that plan and waits out the spent second (the
    window holds the next start: its own start spent it, so no pause is needed on top), with no 429."""
    clock = FakeClock()
    fake = FakeBrave(rate_per_second=1, clock=clock)
    fake.answers.stream_rate_headers = True
    async with on_fake(fake, clock) as client:
        assert (await client.admission())["answers"]["plan_per_second"] == 2.0  # Brave's published Answers rate
        started = clock()
        assert await payloads(client)
        answers = (await client.admission())["answers"]
        assert await payloads(client)  # the second's one request is spent: the next waits for the window
        waited = clock() - started
    assert answers["plan_per_second"] == 1.0 and answers["rate_in_force_per_second"] == 1.0
    assert waited == pytest.approx(horizon(1, 1), abs=0.01) and fake.rate_limited_count == 0
    assert client.last_rate_limit is not None and client.last_rate_limit.per_second == 1.0


class Watched(httpx2.AsyncByteStream):
    """A response body that records being closed."""

    def __init__(self) -> None:
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield SSE

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.parametrize("step", ["observe", "succeeded"])
async def test_a_response_is_closed_when_the_call_is_cancelled_after_it_arrived(
    step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while admission learns from the answer (between the send and the stream's start): the response the
    call will never read is closed, not left holding its connection."""
    body = Watched()
    headers = {"Content-Type": "text/event-stream", "X-RateLimit-Limit": "2, 0", "X-RateLimit-Remaining": "1, 0"}
    up, clock = Upstream(httpx2.Response(200, headers=headers, stream=body)), FakeClock()
    async with make_client(up, clock) as client:
        with anyio.CancelScope() as scope:

            async def cancelled(*args: Any, **kwargs: Any) -> None:
                scope.cancel()
                await anyio.lowlevel.checkpoint()

            monkeypatch.setattr(client.limits.answers, step, cancelled)
            await payloads(client)
    assert scope.cancelled_caught and up.count == 1
    assert body.closed


async def test_a_5xx_to_the_answers_post_is_not_sent_again() -> None:
    """Brave may have answered (and billed) before failing: the call fails once, typed, rather than pay twice."""
    fake, clock = FakeBrave(rate_per_second=1000), FakeClock()
    fake.inject("503", path=CHAT)
    async with on_fake(fake, clock, retries=3) as client:
        with pytest.raises(errors.UpstreamError) as info:
            await payloads(client)
    assert info.value.details["status"] == 503 and info.value.details["attempts"] == 1
    assert fake.hits(CHAT) == 1 and clock.sleeps == []


async def test_a_429_to_the_answers_post_is_sent_again_after_the_wait() -> None:
    """Brave refused before doing anything (nothing billed): the one refusal a streamed POST retries."""
    fake, clock = FakeBrave(rate_per_second=1000), FakeClock()
    fake.inject("429", path=CHAT)
    async with on_fake(fake, clock, retries=3) as client:
        assert "[DONE]" in await payloads(client)
    assert fake.hits(CHAT) == 2 and fake.hits(CHAT, 200) == 1
