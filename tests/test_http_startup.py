"""HTTP transport start-up and shutdown: option validation, binding, guards on odd scopes, and a real process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from starlette.types import Message, Receive, Scope, Send

from brave_search_mcp.faces.http import HttpOptions, bind_socket, serve_http
from brave_search_mcp.faces.http_guards import BearerGuard, InFlightCap, PostJsonOnly, split_host
from brave_search_mcp.faces.mcp_server import build_server
from testkit.brave.brave import FakeBrave
from testkit.brave.http_server import FakeBraveServer
from testkit.settings import make_settings

from .test_http import STARTUP_SECONDS, TOKEN, auth, serving

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- options and start-up refusals


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "mcp.example.com"])
def test_non_loopback_bind_without_token_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match="BRAVE_SEARCH_HTTP_TOKEN"):
        HttpOptions(host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.5"])
def test_loopback_bind_without_token_is_allowed(host: str) -> None:
    assert HttpOptions(host=host).token is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"port": 70000}, "BRAVE_SEARCH_PORT"),
        ({"token": ""}, "BRAVE_SEARCH_HTTP_TOKEN"),
        ({"token": "has space but is long enough"}, "BRAVE_SEARCH_HTTP_TOKEN"),
        ({"token": "short"}, "at least 16"),
        ({"token": "tøken-with-non-ascii-chars"}, "ASCII"),
        ({"token": "line\nbreak-in-the-token"}, "printable"),
        ({"allowed_hosts": ("https://x.example",)}, "BRAVE_SEARCH_ALLOWED_HOSTS"),
        ({"allowed_hosts": ("x.example:99999",)}, "BRAVE_SEARCH_ALLOWED_HOSTS"),
        ({"max_body_bytes": 10}, "body"),
    ],
)
def test_bad_options_fail_with_the_setting_named(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        HttpOptions(**kwargs)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Example.COM", ("example.com", None)),
        ("example.com:8080", ("example.com", 8080)),
        ("[::1]:80", ("[::1]", 80)),
        ("[::1]", ("[::1]", None)),
        ("host:*", ("host", None)),
        ("::1", None),
        ("a/b", None),
        ("user@host", None),
        ("host:0", None),
        ("host:x", None),
        ("", None),
    ],
)
def test_split_host(value: str, expected: tuple[str, int | None] | None) -> None:
    assert split_host(value) == expected


def test_allowlist_has_loopback_the_specific_bind_address_and_the_configured_hosts() -> None:
    specific = HttpOptions(host="10.1.2.3", token=TOKEN, allowed_hosts=("Mcp.Example.com:8443",)).host_patterns()
    assert set(specific) == {
        ("127.0.0.1", None),
        ("localhost", None),
        ("[::1]", None),
        ("10.1.2.3", None),
        ("mcp.example.com", 8443),
    }
    for wildcard in ("0.0.0.0", "::", "[::]"):
        patterns = HttpOptions(host=wildcard, token=TOKEN).host_patterns()
        assert {name for name, _ in patterns} == {"127.0.0.1", "localhost", "[::1]"}


async def test_port_in_use_is_a_clear_error(fake: FakeBrave) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        server = build_server(make_settings(), transport=fake.mock_transport())
        with pytest.raises(OSError, match=f"127.0.0.1:{port}"):
            await serve_http(server, HttpOptions(port=port))


async def test_failing_server_lifespan_is_an_exception_not_an_exit() -> None:
    def build_upstream() -> None:
        raise RuntimeError("upstream client could not be built")

    @asynccontextmanager
    async def broken(_: Server[Any]) -> AsyncIterator[None]:
        build_upstream()
        yield

    with pytest.raises(RuntimeError, match="failed to start"):
        await serve_http(Server("broken", lifespan=broken), HttpOptions(port=0))


def test_listening_socket_is_tcp_so_connections_get_nodelay() -> None:
    # asyncio sets TCP_NODELAY only on connections accepted from an IPPROTO_TCP socket; without it every
    # keep-alive response stalled ~40 ms on a delayed ACK (bench.http_transport: ping 44 ms -> 2 ms).
    with bind_socket(HttpOptions(port=0)) as sock:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockname()[0] == "127.0.0.1"


async def test_guards_close_websockets_instead_of_passing_them() -> None:
    reached: list[Scope] = []
    sent: list[Message] = []

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope)

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "websocket", "path": "/mcp", "headers": [(b"host", b"127.0.0.1:1")]}
    for guard in (BearerGuard(inner, TOKEN), PostJsonOnly(inner, "/mcp"), InFlightCap(inner, 1, 1)):
        await guard(scope, receive, send)
    assert reached == []
    assert sent == [{"type": "websocket.close", "code": 1008}] * 3


def test_cancelled_server_shuts_down_gracefully(fake: FakeBrave, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    with serving(fake):
        pass
    messages = [record.getMessage() for record in caplog.records]
    assert "Application shutdown complete." in messages


# ---------------------------------------------------------------- a real process


def launcher_env(**extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO_ROOT)}
    env.update(extra)
    return env


@asynccontextmanager
async def replica(brave_url: str, **env: str) -> AsyncIterator[int]:
    """One HTTP face subprocess (``testkit.http_launcher``, the bearer token set, ``env`` added) on a free port; its
    port, until it is stopped."""
    command = [sys.executable, "-m", "testkit.http_launcher", "--brave-url", brave_url]
    process = await anyio.open_process(
        command, env=launcher_env(BRAVE_SEARCH_HTTP_TOKEN=TOKEN, **env), cwd=REPO_ROOT, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        with anyio.fail_after(STARTUP_SECONDS * 2):
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 256)
        word, port = line.decode().split()
        assert word == "listening"
        yield int(port)
    finally:
        await stop(process)


async def stop(process: Process) -> None:
    """End a process this test started, waiting a bounded time."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(5):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_subprocess_serves_and_exits_on_signal(fake_server: FakeBraveServer, stop: signal.Signals) -> None:
    command = [sys.executable, "-m", "testkit.http_launcher", "--brave-url", fake_server.base_url]
    process = await anyio.open_process(command, env=launcher_env(BRAVE_SEARCH_HTTP_TOKEN=TOKEN), cwd=REPO_ROOT)
    try:
        assert process.stdout is not None and process.stderr is not None
        with anyio.fail_after(STARTUP_SECONDS * 2):
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 256)
        word, port = line.decode().split()
        assert word == "listening"
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            httpx2.AsyncClient(headers=auth(), timeout=10) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            result = await client.call_tool("brave_web_search", {"query": "subprocess", "max_results": 1})
        assert not result.is_error
        assert fake_server.fake.hits("/web/search") == 1
        process.send_signal(stop)
        with anyio.fail_after(2):
            code = await process.wait()
        assert code == 0
        stderr = await process.stderr.receive(65536)
        assert TOKEN.encode() not in stderr
        assert b"Application shutdown complete" in stderr
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_subprocess_refuses_non_loopback_bind_without_token(fake_server: FakeBraveServer) -> None:
    command = [sys.executable, "-m", "testkit.http_launcher", "--brave-url", fake_server.base_url, "--host", "0.0.0.0"]
    with anyio.fail_after(STARTUP_SECONDS * 2):
        result = await anyio.run_process(command, env=launcher_env(), cwd=REPO_ROOT, check=False)
    assert result.returncode == 2
    assert b"BRAVE_SEARCH_HTTP_TOKEN" in result.stderr
    assert result.stdout == b""
