"""When a request left (``upstream.sent``): the hook runs once its bytes are written and before its answer, and
every request the Brave client sends tells its admission when it left (a late one is counted from then)."""

from __future__ import annotations

import anyio
import anyio.abc
import httpx2
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.ratelimit.admission import Admission, Ticket
from brave_search_mcp.upstream.sent import Sent
from testkit.brave.http_server import FakeBraveServer
from tests.brave_client_support import settings

pytestmark = pytest.mark.anyio


async def test_the_departure_is_noted_once_the_request_is_written_and_before_its_answer_comes() -> None:
    """A loopback server that answers only once the callback has run: the callback cannot wait for the answer (the
    call would hang), so it runs as soon as the request (its body too) is written; once per request, with the time
    it noted."""
    noted: list[float] = []
    called = anyio.Event()

    async def then(at: float) -> None:
        noted.append(at)
        called.set()

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            data = b""
            with anyio.fail_after(5):
                while not data.endswith((b"\r\n\r\n", b"}")):  # the headers, then a JSON body if there is one
                    data += await stream.receive()
                await called.wait()  # no answer before the callback ran
            await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    ticks = iter(range(1, 10))
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tasks:
        tasks.start_soon(listener.serve, serve)
        async with httpx2.AsyncClient() as http:
            for method, body in (("GET", None), ("POST", b'{"q": "x"}')):
                noted.clear()
                called = anyio.Event()
                sent = Sent(lambda: float(next(ticks)), then)
                assert sent.at is None
                with anyio.fail_after(5):
                    answer = await http.request(
                        method, f"http://127.0.0.1:{port}/", content=body, extensions=sent.extensions
                    )
                assert answer.text == "ok" and noted == [sent.at] and sent.at is not None
        tasks.cancel_scope.cancel()


async def test_every_request_the_client_sends_tells_its_admission_when_it_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over real sockets: a search and a streamed answer each tell the admission that let them out when they left
    (after their booking, before their answer), once each; a cache hit sends nothing and tells nothing."""
    told: list[tuple[Ticket, float]] = []
    real = Admission.left

    async def left(self: Admission, ticket: Ticket, at: float) -> None:
        told.append((ticket, at))
        await real(self, ticket, at)

    monkeypatch.setattr(Admission, "left", left)
    with FakeBraveServer(rate_per_second=1000) as server:
        async with BraveClient(settings(base_url=server.base_url)) as client:
            before = client.clock()
            await client.get(Endpoint.WEB, [("q", "left")])
            await client.get(Endpoint.WEB, [("q", "left")])  # a hit
            question = {"messages": [{"role": "user", "content": "why"}], "stream": True, "model": "brave"}
            async for _ in client.stream_post(Endpoint.CHAT, question):
                pass
            after = client.clock()
    assert len(told) == 2 and all(ticket.grant is not None for ticket, _ in told)
    for ticket, at in told:
        assert ticket.grant is not None and before <= ticket.grant.at <= at <= after
