"""A Redis call sent again after its reply was lost runs once (``redis_scripts.once``): a real redis-server made busy
(``DEBUG SLEEP``) so the client's command timeout fires while the first copy waits in the server's socket; the
client sends it again (its one retry), and the server, awake, reads both copies. The month's count must go up (or
down) by exactly one and a reservation record one start, or the spending cap counts requests Brave never billed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio
import pytest

from brave_search_mcp.ratelimit.plan import Ask, PlanState
from brave_search_mcp.state.base import StoreUnavailable
from brave_search_mcp.state.owed import Batch
from brave_search_mcp.state.redis import RedisStore
from brave_search_mcp.state.redis_client import COMMAND_TIMEOUT_SECONDS, connect
from brave_search_mcp.state.redis_keys import count_key, starts_key
from testkit.programs import require
from testkit.redis_server import RedisServer, command

require("redis-server", ".ci/run installs it: apt-get install -y redis-server")
pytestmark = pytest.mark.anyio
T = TypeVar("T")

MONTH = "brave:key|:month:2026-11"
# Longer than one command timeout (the first copy's reply is lost), shorter than two plus the retry's pause (the
# second copy is answered): the server wakes between the two.
BUSY_SECONDS = 1.3
GIVE_UP_SECONDS = 2 * COMMAND_TIMEOUT_SECONDS + 1.0  # longer than both tries: the caller gives up, counts on memory


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer(extra=("--enable-debug-command", "local")) as started:
        yield started


@pytest.fixture
async def store(server: RedisServer) -> AsyncIterator[RedisStore]:
    client = connect(server.url)  # the production client: its timeouts and its one retry
    yield RedisStore(server.url, client, clock=time.time)
    await client.aclose()


@asynccontextmanager
async def busy(server: RedisServer, seconds: float) -> AsyncIterator[None]:
    """The server asleep (``DEBUG SLEEP``) from entry for ``seconds``; awake again on exit."""

    def sleep() -> None:
        command(server.port, "DEBUG", "SLEEP", str(seconds), timeout=seconds + 5)

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, sleep)
        for _ in range(50):  # until the server no longer answers: it sleeps (bounded)
            if not await anyio.to_thread.run_sync(lambda: command(server.port, "PING", timeout=0.05)):
                break
        else:
            raise AssertionError("DEBUG SLEEP never began")
        yield


async def while_busy(server: RedisServer, call: Callable[[], Awaitable[T]]) -> T:
    """``call`` sent while the server sleeps BUSY_SECONDS; it must have timed out once (and been sent again)."""
    async with busy(server, BUSY_SECONDS):
        started = time.monotonic()
        result = await call()
        assert time.monotonic() - started > COMMAND_TIMEOUT_SECONDS  # the first copy timed out: this was a retry
    return result


async def stored(store: RedisStore) -> int:
    return await store.count(MONTH, time.time())


async def test_a_booking_sent_again_counts_one_request(server: RedisServer, store: RedisStore) -> None:
    now = time.time()
    assert await store.book(MONTH, None, now + 3600, now) == (True, 1)
    assert await while_busy(server, lambda: store.book(MONTH, None, now + 3600, now)) == (True, 2)
    assert await stored(store) == 2  # not 3: the server ran the booking's two copies, and counted one


async def test_a_booking_at_the_cap_sent_again_is_refused_as_the_first_copy_was(
    server: RedisServer, store: RedisStore
) -> None:
    now = time.time()
    assert await store.book(MONTH, 2, now + 3600, now) == (True, 1)
    assert await while_busy(server, lambda: store.book(MONTH, 2, now + 3600, now)) == (True, 2)
    assert await store.book(MONTH, 2, now + 3600, now) == (False, 2)  # the cap: the retry did not take its place


async def test_a_request_given_back_and_sent_again_is_given_back_once(server: RedisServer, store: RedisStore) -> None:
    now = time.time()
    for _ in range(4):
        await store.book(MONTH, None, now + 3600, now)
    await store.unbook(MONTH)  # the script loaded (a first copy would only be told NOSCRIPT)
    await while_busy(server, lambda: store.unbook(MONTH))
    assert await stored(store) == 2


async def test_a_reservation_sent_again_records_one_start_and_is_granted(
    server: RedisServer, store: RedisStore
) -> None:
    """Sent again, the reservation would see its own first copy's start and refuse itself (one request, two starts,
    and a wait for nothing)."""
    ask = Ask("brave", init=PlanState.known(1.0, 1))
    assert (await store.reserve(Ask("searxng", init=ask.init), time.time())).granted  # the script loaded
    decision = await while_busy(server, lambda: store.reserve(ask, time.time()))
    assert decision.granted and decision.reason == "ok", decision
    assert decision.full  # the first copy's whole reply, kept by ``once``: its start fills the window of one
    r = connect(server.url)
    try:
        assert await r.zcard(starts_key(ask.own)) == 1
        assert await r.get(count_key(MONTH)) is None  # nothing else written
    finally:
        await r.aclose()


async def test_a_booking_the_server_ran_after_its_caller_gave_up_is_not_added_again(
    server: RedisServer, store: RedisStore
) -> None:
    """The caller gave up (StoreUnavailable) and counted the request on memory; the server, awake, ran the booking
    anyway. The outage's merge sees that booking's reply on the server and adds one fewer: one request, one count."""
    now = time.time()
    assert await store.book(MONTH, None, now + 3600, now) == (True, 1)
    epoch = await store.epoch()
    async with busy(server, GIVE_UP_SECONDS):
        with pytest.raises(StoreUnavailable, match="Timeout"):
            await store.book(MONTH, None, now + 3600, now)
    assert await stored(store) == 2  # the premise: the server ran it (once, of its two copies)
    batch = Batch(delta=1, base=1, epoch=epoch, expires=now + 3600)  # what memory counted meanwhile
    assert await store.merge_count(MONTH, batch, now) == 2
    assert await store.merge_count(MONTH, Batch(delta=1, base=2, epoch=epoch, expires=now + 3600), now) == 3  # settled


async def test_a_give_back_the_server_ran_after_its_caller_gave_up_is_not_taken_again(
    server: RedisServer, store: RedisStore
) -> None:
    now = time.time()
    for _ in range(3):
        await store.book(MONTH, None, now + 3600, now)
    await store.unbook(MONTH)  # the script loaded
    epoch = await store.epoch()
    async with busy(server, GIVE_UP_SECONDS):
        with pytest.raises(StoreUnavailable):
            await store.unbook(MONTH)
    assert await stored(store) == 1
    assert await store.merge_count(MONTH, Batch(delta=-1, base=2, epoch=epoch, expires=now + 3600), now) == 1
