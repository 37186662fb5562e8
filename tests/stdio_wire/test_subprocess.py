"""Bad request lines get JSON-RPC error replies and signals end the server promptly — on the real stdio subprocess."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
import pytest

from brave_search_mcp.faces.stdio import (
    INVALID_REQUEST,
    MAX_LINE_BYTES,
    PARSE_ERROR,
)
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import WAIT_SECONDS, RpcSession, server_env, stdio_server
from tests.stdio_wire.support import EXIT_DEADLINE, assert_error, exits_with, read_stderr

pytestmark = pytest.mark.anyio

SEARCH = {"name": "brave_web_search", "arguments": {"query": "hanging query"}}


@asynccontextmanager
async def serving(fake_server: FakeBraveServer, stderr: IO[bytes]) -> AsyncIterator[RpcSession]:
    # a long upstream timeout, so only the stop itself can end a hanging call
    async with stdio_server(server_env(fake_server.base_url, BRAVE_SEARCH_TIMEOUT_SECONDS="60"), stderr=stderr) as rpc:
        yield rpc


async def assert_still_serving(rpc: RpcSession) -> None:
    tools = (await rpc.call("tools/list"))["result"]["tools"]
    assert "brave_web_search" in [tool["name"] for tool in tools]


# --- bad lines over the real subprocess: each is answered, then the next line is served ---


async def test_lone_surrogate_is_answered_with_its_id_and_serving_goes_on(
    fake_server: FakeBraveServer, stderr_file: IO[bytes]
) -> None:
    line = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"x\\ud800","arguments":{}}}\n'
    async with serving(fake_server, stderr_file) as rpc:
        await rpc.send_raw(line)
        reply = await rpc.response(41)
        assert_error(reply, INVALID_REQUEST, 41)
        assert "surrogate" in reply["error"]["message"]
        await assert_still_serving(rpc)


async def test_lone_surrogate_in_the_id_itself_gets_a_null_id(
    fake_server: FakeBraveServer, stderr_file: IO[bytes]
) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        await rpc.send_raw(b'{"jsonrpc":"2.0","id":"\\udfff","method":"tools/list"}\n')
        assert_error(await rpc.error_without_id(), INVALID_REQUEST, None)
        await assert_still_serving(rpc)


async def test_invalid_utf8_bytes_get_a_parse_error(fake_server: FakeBraveServer, stderr_file: IO[bytes]) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        await rpc.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"q":"\xff\xfe"}}\n')
        assert_error(await rpc.error_without_id(), PARSE_ERROR, None)
        await assert_still_serving(rpc)


async def test_truncated_json_gets_a_parse_error(fake_server: FakeBraveServer, stderr_file: IO[bytes]) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        await rpc.send_raw(b'{"jsonrpc":"2.0","id":6,"method":"tools/li\n')
        assert_error(await rpc.error_without_id(), PARSE_ERROR, None)
        await assert_still_serving(rpc)


async def test_deep_nesting_is_answered_with_its_id(fake_server: FakeBraveServer, stderr_file: IO[bytes]) -> None:
    deep = b"[" * 200 + b"]" * 200
    async with serving(fake_server, stderr_file) as rpc:
        await rpc.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":' + deep + b"}}\n")
        reply = await rpc.response(7)
        assert_error(reply, INVALID_REQUEST, 7)
        assert "nested" in reply["error"]["message"]
        # far past the parser's own recursion limit: still an answer, not a crash
        await rpc.send_raw(b"[" * 100_000 + b"\n")
        assert_error(await rpc.error_without_id(), PARSE_ERROR, None)
        await assert_still_serving(rpc)


async def test_oversized_line_is_refused_unread_and_the_next_line_served(
    fake_server: FakeBraveServer, stderr_file: IO[bytes]
) -> None:
    huge = b'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"pad":"' + b"x" * MAX_LINE_BYTES + b'"}}\n'
    async with serving(fake_server, stderr_file) as rpc:
        # the next request rides in the same write, right behind the oversized line
        await rpc.send_raw(huge + b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}\n')
        reply = await rpc.error_without_id()
        assert_error(reply, INVALID_REQUEST, None)
        assert str(MAX_LINE_BYTES) in reply["error"]["message"]
        assert "tools" in (await rpc.response(9))["result"]
        assert 8 not in [json.loads(line).get("id") for line in rpc.lines]


NOT_JSON_RPC: list[tuple[bytes, Any]] = [
    (b'{"a":1}', None),
    (b'{"jsonrpc":"1.0","id":10,"method":"tools/list"}', 10),
    (b'{"jsonrpc":"2.0","id":11,"method":42}', 11),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', None),  # not silently read as id 1
    (b"[]", None),
    (b'[{"jsonrpc":"2.0","id":12,"method":"tools/list"}]', None),  # batches are not part of MCP
    (b'"just a string"', None),
]


async def test_valid_json_that_is_not_json_rpc_gets_invalid_request(
    fake_server: FakeBraveServer, stderr_file: IO[bytes]
) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        for line, expected_id in NOT_JSON_RPC:
            await rpc.send_raw(line + b"\n")
            reply = await (rpc.error_without_id() if expected_id is None else rpc.response(expected_id))
            assert_error(reply, INVALID_REQUEST, expected_id)
            await assert_still_serving(rpc)


async def test_blank_lines_and_crlf_are_tolerated(fake_server: FakeBraveServer, stderr_file: IO[bytes]) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        await rpc.send_raw(b"\n  \r\n" + b'{"jsonrpc":"2.0","id":13,"method":"tools/list"}\r\n')
        assert "tools" in (await rpc.response(13))["result"]
        assert len(rpc.lines) == 2  # initialize + this reply: blank lines were not answered


# --- stopping: signals and EOF, with a tool call stuck on a hanging upstream ---


async def start_hanging_call(rpc: RpcSession, fake_server: FakeBraveServer) -> int:
    fake_server.fake.inject("hang", seconds=WAIT_SECONDS)
    request_id = await rpc.request("tools/call", SEARCH)
    arrived = await anyio.to_thread.run_sync(fake_server.wait_for_requests, 1, WAIT_SECONDS)
    assert arrived, "the tool call never reached the upstream"
    return request_id


@pytest.mark.parametrize(("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
async def test_signal_during_a_hanging_call_exits_promptly_without_traceback(
    fake_server: FakeBraveServer, stderr_file: IO[bytes], signum: signal.Signals, exit_code: int
) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        await start_hanging_call(rpc, fake_server)
        rpc.process.send_signal(signum)
        assert await exits_with(rpc.process, EXIT_DEADLINE) == exit_code
    log = read_stderr(stderr_file)
    assert "Traceback" not in log
    assert signum.name in log


async def test_eof_during_a_hanging_call_exits_zero_and_answers_the_call(
    fake_server: FakeBraveServer, stderr_file: IO[bytes]
) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        request_id = await start_hanging_call(rpc, fake_server)
        await rpc.close_stdin()
        assert await exits_with(rpc.process, EXIT_DEADLINE) == 0
        rest = await rpc.drain()
    replies = [json.loads(line) for line in rest.splitlines()]
    assert [reply["id"] for reply in replies] == [request_id]  # cancelled, but not left unanswered
    assert "error" in replies[0]
    assert "Traceback" not in read_stderr(stderr_file)


async def test_eof_when_idle_exits_zero(fake_server: FakeBraveServer, stderr_file: IO[bytes]) -> None:
    async with serving(fake_server, stderr_file) as rpc:
        await rpc.close_stdin()
        assert await exits_with(rpc.process, EXIT_DEADLINE) == 0
    assert "Traceback" not in read_stderr(stderr_file)


async def test_client_gone_from_stdout_ends_the_server_quietly(
    fake_server: FakeBraveServer, stderr_file: IO[bytes]
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the host stopped reading: the first reply hits a broken pipe
    command = [sys.executable, "-m", "brave_search_mcp"]
    try:
        process = await anyio.open_process(
            command, env=server_env(fake_server.base_url), stdout=write_end, stderr=stderr_file
        )
    finally:
        os.close(write_end)
    async with process:
        assert process.stdin is not None
        await process.stdin.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
        assert await exits_with(process, WAIT_SECONDS) == 0
    assert "Traceback" not in read_stderr(stderr_file)


async def test_cli_search_interrupted_prints_one_line_and_exits_130(
    fake_server: FakeBraveServer, stderr_file: IO[bytes]
) -> None:
    fake_server.fake.inject("hang", seconds=WAIT_SECONDS)
    env = server_env(fake_server.base_url, BRAVE_SEARCH_TIMEOUT_SECONDS="60")
    command = [sys.executable, "-m", "brave_search_mcp", "search", "hanging query"]
    async with await anyio.open_process(command, env=env, stdin=None, stderr=stderr_file) as process:
        assert await anyio.to_thread.run_sync(fake_server.wait_for_requests, 1, WAIT_SECONDS)
        process.send_signal(signal.SIGINT)
        assert await exits_with(process, EXIT_DEADLINE) == 130
        assert process.stdout is not None
        with pytest.raises(anyio.EndOfStream):  # nothing on stdout: no half-printed result
            await process.stdout.receive()
    assert read_stderr(stderr_file) == "brave-search-mcp: interrupted\n"
