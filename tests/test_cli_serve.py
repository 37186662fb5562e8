"""`brave-search-mcp --transport http` as a user starts it: the real console entry, a real port, a signal to stop."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.tracked_server import free_port


def _env(base_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE")}
    env.update(BRAVE_SEARCH_API_KEY=VALID_KEY, BRAVE_SEARCH_BASE_URL=base_url, **extra)
    return env


def _healthz(port: int, deadline: float) -> dict[str, str]:
    while True:  # bounded by the deadline
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as reply:
                return dict(json.loads(reply.read()))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _serve_then_stop(command: list[str], env: dict[str, str], port: int) -> tuple[dict[str, str], str, int]:
    """Start the server, wait for its /healthz on ``port``, stop it with SIGTERM: its health, stderr and exit code."""
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as proc:
        try:
            health = _healthz(port, time.monotonic() + 15)
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=5)
    return health, stderr, proc.returncode


def test_http_transport_from_flags_serves_healthz_and_stops_on_sigterm(fake_server: FakeBraveServer) -> None:
    port = free_port()
    command = [sys.executable, "-m", "brave_search_mcp", "--transport", "http", "--port", str(port)]
    health, stderr, code = _serve_then_stop(command, _env(fake_server.base_url), port)
    assert health["status"] == "ok" and set(health) == {"status", "version"}
    assert code == 0
    first = json.loads(stderr.splitlines()[0])  # not a TTY: the start line is a JSON log record like every other
    assert first["event"] == "start" and first["transport"] == "http"
    assert f"http://127.0.0.1:{port}/mcp" in first["msg"] and "key from BRAVE_SEARCH_API_KEY" in first["msg"]
    assert VALID_KEY not in stderr and "Traceback" not in stderr


def test_http_transport_from_environment_on_a_public_address_needs_a_token(fake_server: FakeBraveServer) -> None:
    env = _env(fake_server.base_url, BRAVE_SEARCH_TRANSPORT="http", BRAVE_SEARCH_HOST="0.0.0.0")
    done = subprocess.run(
        [sys.executable, "-m", "brave_search_mcp"], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert "BRAVE_SEARCH_HTTP_TOKEN" in done.stderr
    # the refusal is the only line: no start line announcing http://0.0.0.0:8080/mcp before it
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "/mcp" not in done.stderr and "event" not in done.stderr


def test_a_busy_port_is_one_line_and_no_start_line(fake_server: FakeBraveServer) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "brave_search_mcp", "--transport", "http", "--port", str(port)],
            env=_env(fake_server.base_url),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "/mcp" not in done.stderr


def test_the_start_line_names_the_port_actually_bound(fake_server: FakeBraveServer) -> None:
    command = [sys.executable, "-m", "brave_search_mcp", "--transport", "http", "--port", "0"]
    with subprocess.Popen(command, env=_env(fake_server.base_url), stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stderr is not None
            ready, _, _ = select.select([proc.stderr], [], [], 15)
            assert ready, "no start line within 15 s"
            first = json.loads(proc.stderr.readline())
            port = int(first["msg"].split("http://127.0.0.1:")[1].split("/mcp")[0])
            assert _healthz(port, time.monotonic() + 15)["status"] == "ok"
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=5)
            assert proc.returncode == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=5)
    assert first["event"] == "start" and port != 0


@pytest.mark.parametrize(
    ("variable", "value"), [("BRAVE_SEARCH_TRANSPORT", "carrier-pigeon"), ("BRAVE_SEARCH_PORT", "70000")]
)
def test_bad_transport_settings_fail_at_start_naming_the_variable(
    fake_server: FakeBraveServer, variable: str, value: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "brave_search_mcp"],
        env=_env(fake_server.base_url, **{variable: value}),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert variable in done.stderr


def test_serving_leaves_what_start_up_built_out_of_full_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 item 3: a full garbage collection walked every model the SDK and pydantic built at import (about
    70 ms, every few hundred calls); serve() freezes them before the first request is read, and collects the young
    generation every GC_YOUNG_THRESHOLD allocations instead of 700."""
    import gc
    import io

    from brave_search_mcp.config import Settings
    from brave_search_mcp.faces import cli, stdio

    seen: list[tuple[int, int]] = []

    def run_stdio(server: object) -> int:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return 0

    monkeypatch.setattr(stdio, "run_stdio", run_stdio)
    gc.unfreeze()
    threshold = gc.get_threshold()
    try:
        assert cli.serve(Settings(api_key=VALID_KEY, log_level="WARNING"), io.StringIO()) == 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert seen and seen[0][0] > 10_000
    assert seen[0][1] == cli.GC_YOUNG_THRESHOLD > threshold[0]  # young objects of a call mostly die unwalked


def test_brave_official_server_variables_serve_http_on_their_port(fake_server: FakeBraveServer) -> None:
    """Issue 37 item 8: BRAVE_MCP_TRANSPORT=http BRAVE_MCP_PORT=N serves HTTP on N, key from --brave-api-key."""
    port = free_port()
    env = {k: v for k, v in _env(fake_server.base_url).items() if k != "BRAVE_SEARCH_API_KEY"}
    env.update(BRAVE_MCP_TRANSPORT="http", BRAVE_MCP_PORT=str(port), BRAVE_MCP_ENABLED_TOOLS="brave_news_search")
    command = [sys.executable, "-m", "brave_search_mcp", "--brave-api-key", VALID_KEY]
    health, stderr, code = _serve_then_stop(command, env, port)
    assert health["status"] == "ok"
    assert code == 0
    first = json.loads(stderr.splitlines()[0])
    assert f"http://127.0.0.1:{port}/mcp" in first["msg"] and "key from --brave-api-key" in first["msg"]
    assert first["msg"].endswith("tools: brave_web_search")  # their news tool is our web search


def test_ours_win_over_the_official_servers_variables_with_a_warning(fake_server: FakeBraveServer) -> None:
    ours, theirs = free_port(), free_port()
    env = _env(fake_server.base_url, BRAVE_SEARCH_TRANSPORT="http", BRAVE_SEARCH_PORT=str(ours))
    env.update(BRAVE_MCP_TRANSPORT="stdio", BRAVE_MCP_PORT=str(theirs))
    health, stderr, _ = _serve_then_stop([sys.executable, "-m", "brave_search_mcp"], env, ours)
    assert health["status"] == "ok"
    warnings = [record for record in map(json.loads, stderr.splitlines()) if record["level"] == "warning"]
    assert {w["msg"] for w in warnings} >= {
        "BRAVE_MCP_TRANSPORT is ignored: BRAVE_SEARCH_TRANSPORT is set too (ours wins when both are set)",
        "BRAVE_MCP_PORT is ignored: BRAVE_SEARCH_PORT is set too (ours wins when both are set)",
    }


def test_on_a_terminal_the_stop_line_is_words_like_the_start_line(fake_server: FakeBraveServer) -> None:
    """Issue 37 item 10: started by hand, the start line was text and Ctrl-C's line a raw JSON record."""
    import pty

    controller, terminal = pty.openpty()
    env = {k: v for k, v in _env(fake_server.base_url).items() if k != "BRAVE_SEARCH_LOG_FORMAT"}
    with subprocess.Popen(
        [sys.executable, "-m", "brave_search_mcp"], env=env, stdin=terminal, stdout=subprocess.PIPE, stderr=terminal
    ) as proc:
        os.close(terminal)
        seen = b""
        try:
            # a request typed at the terminal, answered on stdout: the server is serving (its Ctrl-C handler is on)
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
            os.write(
                controller, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode()
            )
            os.write(controller, b"\n")
            assert proc.stdout is not None
            assert json.loads(proc.stdout.readline())["id"] == 1
            while select.select([controller], [], [], 0.2)[0]:
                seen += os.read(controller, 4096)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=10) == 130
            while select.select([controller], [], [], 0.2)[0]:
                try:
                    chunk = os.read(controller, 4096)
                except OSError:  # the terminal's other end closed with the process
                    break
                if not chunk:
                    break
                seen += chunk
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(controller)
    lines = [line.strip() for line in seen.decode("utf-8", "replace").splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith('{"jsonrpc"')]  # the terminal's echo of the request
    assert lines[0].startswith("brave-search-mcp ") and "· stdio ·" in lines[0]
    assert any("SIGINT received" in line for line in lines), lines
    assert [line for line in lines if line.startswith("{")] == []
