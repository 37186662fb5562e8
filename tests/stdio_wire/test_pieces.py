"""Our stdio transport in process: exact line limits, the encoding fallback, stopping on time, slow readers."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp.server import Server, ServerRequestContext
from mcp.shared.message import SessionMessage
from mcp.types import CallToolRequestParams, CallToolResult, JSONRPCRequest, JSONRPCResponse

from brave_search_mcp.faces.stdio import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    MAX_NESTING,
    PARSE_ERROR,
    LineRejected,
    _encode,
    parse_line,
    serve_stdio,
    stdio_wire,
)
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import PROTOCOL, WAIT_SECONDS, RpcSession, server_env
from tests.stdio_wire.support import EXIT_DEADLINE, assert_error, exits_with, read_stderr

pytestmark = pytest.mark.anyio


# --- the pieces, in process: exact limits and the encoding fallback ---


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}', PARSE_ERROR, None),
        (b'{"jsonrpc":"2.0","id":2,"method":"m","params":{"\\ud800":1}}', INVALID_REQUEST, 2),
        (b'{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":["\\udc00"]}}', INVALID_REQUEST, "a"),
        (b"\xc3\x28", PARSE_ERROR, None),
    ],
)
def test_parse_line_rejections(line: bytes, code: int, request_id: Any) -> None:
    with pytest.raises(LineRejected) as caught:
        parse_line(line)
    assert (caught.value.code, caught.value.request_id) == (code, request_id)


def test_parse_line_accepts_surrogate_pairs_and_the_deepest_allowed_nesting() -> None:
    emoji = parse_line(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"\\ud83d\\ude00"}}')
    assert isinstance(emoji, JSONRPCRequest)
    assert emoji.params == {"q": "\U0001f600"}
    depth = MAX_NESTING - 2  # the message object and params are two levels
    deepest = b'{"jsonrpc":"2.0","id":2,"method":"m","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    assert isinstance(parse_line(deepest), JSONRPCRequest)
    with pytest.raises(LineRejected):
        parse_line(deepest.replace(b"[", b"[[", 1).replace(b"]", b"]]", 1))


def test_a_reply_that_cannot_be_encoded_becomes_an_internal_error_for_its_id() -> None:
    line = _encode(JSONRPCResponse(jsonrpc="2.0", id=3, result={"title": "bad \ud800 upstream text"}))
    assert_error(json.loads(line), INTERNAL_ERROR, 3)


async def test_line_cap_is_exact_and_skipping_resumes_at_the_next_line() -> None:
    cap = 64
    template = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {"p": ""}}, separators=(",", ":"))
    exact = template.replace('"p":""', '"p":"' + "x" * (cap - len(template)) + '"').encode()
    assert len(exact) == cap
    over = exact.replace(b'"x', b'"xx', 1)
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    try:
        os.write(
            in_write, exact + b"\n" + over + b"\n" + over * 3 + b"\n" + exact.replace(b'"id":1', b'"id":4') + b"\n"
        )
        os.close(in_write)
        received = []
        with anyio.fail_after(WAIT_SECONDS):
            async with stdio_wire(in_read, out_write, max_line_bytes=cap) as (read_stream, write_stream), write_stream:
                received = [item.message async for item in read_stream if not isinstance(item, Exception)]
        replies = [json.loads(line) for line in os.read(out_read, 65536).splitlines()]
    finally:
        for fd in (in_read, out_read, out_write):
            os.close(fd)
    assert [message.id for message in received if isinstance(message, JSONRPCRequest)] == [1, 4]
    assert len(replies) == 2
    for reply in replies:
        assert_error(reply, INVALID_REQUEST, None)


async def test_sigterm_cancels_the_stuck_call_and_still_closes_the_lifespan() -> None:
    """In process, so the test can see the lifespan's cleanup run (that is where the HTTP client is closed)."""
    events: list[str] = []
    call_started = anyio.Event()

    @asynccontextmanager
    async def lifespan(_: Server[None]) -> AsyncIterator[None]:
        events.append("opened")
        try:
            yield None
        finally:
            events.append("closed")

    async def stuck(_: ServerRequestContext[None], __: CallToolRequestParams) -> CallToolResult:
        """Never returns on its own."""
        call_started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    server = Server[None]("stuck", lifespan=lifespan, on_call_tool=stuck)
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "stuck", "arguments": {}}},
    ]
    os.write(in_write, b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    stops: list[int] = []
    try:
        with anyio.fail_after(WAIT_SECONDS):
            async with anyio.create_task_group() as tg:

                async def send_sigterm_once_stuck() -> None:
                    await call_started.wait()  # the signal receiver is installed by now
                    os.kill(os.getpid(), signal.SIGTERM)

                tg.start_soon(send_sigterm_once_stuck)
                code = await serve_stdio(server, on_stop=stops.append, stdin_fd=in_read, stdout_fd=out_write)
        output = os.read(out_read, 65536)
    finally:
        for fd in (in_read, in_write, out_read, out_write):
            os.close(fd)
    assert (code, stops, events) == (0, [0], ["opened", "closed"])
    assert [json.loads(line)["id"] for line in output.splitlines()] == [1]  # initialize answered, nothing torn


STUCK_IN_A_THREAD = """
import sys, threading
import anyio
from mcp.server import Server
from brave_search_mcp.faces.stdio import run_stdio

async def stuck(ctx, params):
    # a worker thread, which no cancellation can interrupt
    await anyio.to_thread.run_sync(threading.Event().wait)

sys.exit(run_stdio(Server("stuck", on_call_tool=stuck)))
"""


@pytest.mark.parametrize(("stop", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0), ("eof", 0)])
async def test_run_stdio_exits_on_time_even_when_a_thread_cannot_be_cancelled(
    stderr_file: IO[bytes], stop: signal.Signals | str, exit_code: int
) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    command = [sys.executable, "-c", STUCK_IN_A_THREAD]
    async with await anyio.open_process(command, env=env, stderr=stderr_file) as process:
        rpc = RpcSession(process)
        try:
            await rpc.initialize(server_name="stuck")
            await rpc.request("tools/call", {"name": "stuck", "arguments": {}})
            await rpc.call("ping")  # answered while the stuck call runs: the call is in flight now
            if isinstance(stop, signal.Signals):
                process.send_signal(stop)
            else:
                await rpc.close_stdin()
            assert await exits_with(rpc.process, EXIT_DEADLINE) == exit_code
        finally:
            if process.returncode is None:
                process.kill()
    assert "Traceback" not in read_stderr(stderr_file)


async def test_requests_from_a_regular_file_are_read_and_the_server_exits_at_its_end(
    fake_server: FakeBraveServer, tmp_path: Path, stderr_file: IO[bytes]
) -> None:
    """``brave-search-mcp < requests.jsonl > replies.jsonl``: files cannot be polled, so they take the other path."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b'{"jsonrpc":"2.0","id":"a","method":"ping"}\n{"jsonrpc":"2.0","id":"b","method":\n')
    replies = tmp_path / "replies.jsonl"
    command = [sys.executable, "-m", "brave_search_mcp"]
    with requests.open("rb") as stdin, replies.open("wb") as stdout:
        async with await anyio.open_process(
            command, env=server_env(fake_server.base_url), stdin=stdin, stdout=stdout, stderr=stderr_file
        ) as process:
            assert await exits_with(process, WAIT_SECONDS) == 0
    lines = [json.loads(line) for line in replies.read_bytes().splitlines()]
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    assert any(line.get("id") is None and line["error"]["code"] == PARSE_ERROR for line in lines)
    assert "Traceback" not in read_stderr(stderr_file)


@pytest.mark.parametrize("queued", [0, 60_000])
async def test_replies_reach_a_slow_reader_whole_and_in_order_whether_or_not_the_pipe_has_room(queued: int) -> None:
    """A reply that fits in the pipe goes in one write; one that does not (the reader is behind) is written as the
    reader drains it, without blocking the event loop meanwhile."""
    out_read, out_write = os.pipe()
    in_read, in_write = os.pipe()
    big = {"text": "é" * 20_000}  # 40 KB of UTF-8
    backlog = b"x" * (queued - 1) + b"\n" if queued else b""
    got = bytearray()
    try:
        os.write(out_write, backlog)
        ticks = 0
        drained = anyio.Event()
        with anyio.fail_after(WAIT_SECONDS):
            async with stdio_wire(in_read, out_write) as (_, write_stream):

                async def drain_slowly() -> None:
                    while not got.endswith(b'"id":2,"result":{"n":2}}\n'):
                        await anyio.wait_readable(out_read)
                        got.extend(os.read(out_read, 8192))
                        await anyio.sleep(0.005)
                    drained.set()

                async def tick() -> None:
                    nonlocal ticks
                    while True:
                        ticks += 1
                        await anyio.sleep(0.001)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(tick)
                    tg.start_soon(drain_slowly)
                    for n, result in ((1, big), (2, {"n": 2})):
                        message = JSONRPCResponse(jsonrpc="2.0", id=n, result=result)
                        await write_stream.send(SessionMessage(message))
                    await drained.wait()
                    tg.cancel_scope.cancel()
                os.close(in_write)
                in_write = -1
    finally:
        for fd in (in_read, out_read, out_write, in_write):
            if fd >= 0:
                os.close(fd)
    lines = bytes(got[len(backlog) :]).splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2]
    assert json.loads(lines[0])["result"] == big
    assert ticks > 5  # the loop ran while the reply waited for room
