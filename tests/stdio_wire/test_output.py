"""The stdio transport's descriptor I/O in process: lines out whole and in order, reads that survive cancellation."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest
from anyio.abc import TaskStatus
from mcp.types import JSONRPCRequest

from brave_search_mcp.faces import stdio
from brave_search_mcp.faces.stdio import MAX_NESTING, LineRejected, ReadSide, parse_line
from brave_search_mcp.faces.stdio_io import PIPE_BUF, Fd, LineReader, Output
from testkit.stdio import WAIT_SECONDS

pytestmark = pytest.mark.anyio

BIG = b"b" * 20_000 + b"\n"  # more than a nearly full pipe has room for
SMALL = b"small\n"  # fits in what is left


@contextmanager
def pipe() -> Iterator[tuple[int, int]]:
    """A pipe's (read end, write end), both closed afterwards."""
    read_end, write_end = os.pipe()
    try:
        yield read_end, write_end
    finally:
        for fd in (read_end, write_end):
            os.close(fd)


@contextmanager
def nearly_full() -> Iterator[tuple[int, bytes, Output]]:
    """An ``Output`` on a pipe whose backlog leaves room for SMALL but not for BIG: the read end, the backlog (for
    the reader to skip) and the ``Output``."""
    with pipe() as (read_end, write_end):
        size = fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ)
        backlog = b"x" * (size - PIPE_BUF - 2 * len(SMALL) - 1) + b"\n"
        os.write(write_end, backlog)
        yield read_end, backlog, Output(Fd(write_end))


async def drain(read_end: int, size: int) -> bytes:
    """Exactly ``size`` bytes from the pipe, read as they come (the writer runs meanwhile)."""
    got = bytearray()
    while len(got) < size:
        await anyio.wait_readable(read_end)
        got.extend(os.read(read_end, size - len(got)))
    return bytes(got)


async def assert_arrive(read_end: int, backlog: bytes, lines: bytes) -> None:
    """The reader gets the backlog, then exactly ``lines``."""
    assert await drain(read_end, len(backlog)) == backlog
    assert await drain(read_end, len(lines)) == lines


async def test_a_line_that_fits_never_overtakes_one_waiting_for_room() -> None:
    with nearly_full() as (read_end, backlog, out):
        with anyio.fail_after(WAIT_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(out.write, BIG)  # queued: no room for it
                await anyio.wait_all_tasks_blocked()
                tg.start_soon(out.write, SMALL)  # there is room for it, but BIG came first
                await anyio.wait_all_tasks_blocked()
                tg.start_soon(out.run)
                await assert_arrive(read_end, backlog, BIG + SMALL)
                out.finish()


async def test_a_write_cancelled_while_it_waits_still_goes_out_whole() -> None:
    with nearly_full() as (read_end, backlog, out):

        async def write_big(*, task_status: TaskStatus[anyio.CancelScope]) -> None:
            with anyio.CancelScope() as scope:
                task_status.started(scope)
                await out.write(BIG)

        with anyio.fail_after(WAIT_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(out.run)
                scope = await tg.start(write_big)
                await anyio.wait_all_tasks_blocked()
                scope.cancel()  # the request that sent BIG was cancelled: its line is not cut short
                tg.start_soon(out.write, SMALL)
                await assert_arrive(read_end, backlog, BIG + SMALL)
                out.finish()


async def test_stop_releases_waiting_writers_and_nothing_more_is_written() -> None:
    with nearly_full() as (read_end, backlog, out):
        with anyio.fail_after(WAIT_SECONDS):
            async with anyio.create_task_group() as writers, anyio.create_task_group() as runner:
                runner.start_soon(out.run)
                writers.start_soon(out.write, BIG)
                await anyio.wait_all_tasks_blocked()  # BIG is partly out, its writer waits for room
                out.stop()
                runner.cancel_scope.cancel()  # serve_stdio cancels everything right after
            # BIG's writer returned by itself: the writers' task group was never cancelled
        os.set_blocking(read_end, False)
        assert os.read(read_end, 1 << 20).startswith(backlog)  # and part of BIG
        await out.write(SMALL)  # the pipe has room and nothing is queued, but output has stopped
        with pytest.raises(BlockingIOError):
            os.read(read_end, 1)


async def test_a_read_cancelled_while_it_waits_loses_nothing() -> None:
    read_end, write_end = os.pipe()
    try:
        lines = LineReader(Fd(read_end), 1024)
        os.write(write_end, b"hel")
        with anyio.fail_after(WAIT_SECONDS):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(lines.next)
                    await anyio.wait_all_tasks_blocked()  # "hel" read, waiting for the rest of the line
                    scope.cancel()
            os.write(write_end, b"lo\nlast")
            assert await lines.next() == b"hello"
            os.close(write_end)
            write_end = -1
            assert (await lines.next(), await lines.next()) == (b"last", None)
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)


async def test_stopping_input_ends_a_waiting_read_and_calls_on_end_once() -> None:
    ends: list[str] = []
    with pipe() as (read_end, write_end), pipe() as (_, out_write):
        side = ReadSide(Fd(read_end), Output(Fd(out_write)), 1024, lambda: ends.append("end"))
        with anyio.fail_after(WAIT_SECONDS):
            async with anyio.create_task_group() as tg:

                async def read_to_the_end() -> None:
                    assert [item async for item in side] == []

                tg.start_soon(read_to_the_end)
                await anyio.wait_all_tasks_blocked()
                side.stop()
                side.stop()
        os.write(write_end, b'{"jsonrpc":"2.0","method":"m"}\n')
        with pytest.raises(anyio.EndOfStream):
            await side.receive()
    assert ends == ["end"]


ORDINARY = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t", "arguments": {"q": "[x] {y}"}}}


def test_an_ordinary_line_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: object) -> None:
        raise AssertionError("walked")

    monkeypatch.setattr(stdio, "_check_tree", never)
    assert isinstance(parse_line(json.dumps(ORDINARY).encode()), JSONRPCRequest)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"\\uD800":1}}',  # upper-case hex, in a key
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"a\\u00e9\\udfff"}}',  # after a harmless escape
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":' + b"[" * (MAX_NESTING - 1) + b"]" * (MAX_NESTING - 1),
    ],
)
def test_lines_that_may_hide_a_surrogate_or_deep_nesting_are_still_walked(line: bytes) -> None:
    line = line if line.endswith(b"}}") else line + b"}}"
    with pytest.raises(LineRejected):
        parse_line(line)


def test_brackets_and_backslashes_inside_strings_only_make_the_walk_run() -> None:
    text = "[" * MAX_NESTING + "\\u" + "{" * MAX_NESTING
    message = parse_line(json.dumps(ORDINARY | {"params": {"q": text}}).encode())
    assert isinstance(message, JSONRPCRequest) and message.params == {"q": text}
