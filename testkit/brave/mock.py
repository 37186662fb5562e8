"""The fake as an ``httpx2.MockTransport``: replies rendered without sockets, transport faults raised as httpx2 does."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator

import anyio
import httpx2

from brave_search_mcp.clock import Sleep

from .reply import Reply, reset_cut, split_chunks

Handle = Callable[[str, str, list[tuple[str, str]], dict[str, str], bytes], Reply]


def mock_transport(handle: Handle, *, latency: float = 0.0, sleep: Sleep | None = None) -> httpx2.MockTransport:
    """An httpx2 transport that asks ``handle`` (``FakeBrave.handle``) for every request. ``latency``: each answer
    comes back that long after the request was counted, on ``sleep``'s clock (a ``ParallelClock``, so answers
    in flight together take their latency together): what a limiter lets out meanwhile is out together."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        reply = handle(
            request.method,
            request.url.path,
            list(request.url.params.multi_items()),
            dict(request.headers.items()),
            request.content,
        )
        return to_httpx(reply, request)

    async def late(request: httpx2.Request) -> httpx2.Response:
        response = answer(request)
        assert sleep is not None
        await sleep(latency)
        return response

    if latency and sleep is None:
        raise ValueError("a latency needs the clock's sleep")
    return httpx2.MockTransport(late if latency else answer)


class _ReplyStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """Body stream for MockTransport answers: chunked, optionally slow, optionally failing mid-body."""

    def __init__(
        self, chunks: Callable[[], Iterable[bytes]], *, delay: float = 0.0, error: Exception | None = None
    ) -> None:
        self._chunks = chunks
        self._delay = delay
        self._error = error

    def __iter__(self) -> Iterator[bytes]:
        for i, chunk in enumerate(self._chunks()):
            if i and self._delay:
                time.sleep(self._delay)
            yield chunk
        if self._error is not None:
            raise self._error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i, chunk in enumerate(self._chunks()):
            if i and self._delay:
                await anyio.sleep(self._delay)
            yield chunk
        if self._error is not None:
            raise self._error


def to_httpx(reply: Reply, request: httpx2.Request) -> httpx2.Response:
    """``reply`` as the response httpx2 would have read (or the exception it would have raised)."""
    fault = reply.transport_fault  # "early_hints" needs nothing here: httpx2 never shows an interim answer
    if fault == "refused":
        raise httpx2.ConnectError("[Errno 111] Connection refused (fake brave)", request=request)
    if fault in ("timeout", "hang"):
        raise httpx2.ReadTimeout("timed out (fake brave)", request=request)
    headers = list(reply.headers)
    if reply.streamed:
        stream = _ReplyStream(reply.iter_body)
    else:
        headers.append(("Content-Length", str(len(reply.body))))
        if fault == "reset":
            keep = reset_cut(reply)
            message = (
                "peer closed connection without sending complete message body "
                f"(received {keep} bytes, expected {len(reply.body)})"
            )
            stream = _ReplyStream(
                lambda: [reply.body[:keep]], error=httpx2.RemoteProtocolError(message, request=request)
            )
        elif fault == "slow_body":
            size = int(reply.options.get("chunk_size", 512))
            pieces = split_chunks(reply.body, size)
            stream = _ReplyStream(lambda: pieces, delay=float(reply.options.get("delay", 0.05)))
        else:
            body = reply.body
            stream = _ReplyStream(lambda: [body] if body else [])
    return httpx2.Response(reply.status, headers=headers, stream=stream, request=request)
