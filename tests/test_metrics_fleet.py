"""A real Prometheus scrapes three real HTTP replicas: after a burst, its query API agrees with the fake upstream."""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer
from testkit.programs import require

from .test_http import TOKEN, auth
from .test_http_startup import REPO_ROOT, replica, stop

pytestmark = pytest.mark.anyio

PROMETHEUS = require("prometheus", "apt-get install prometheus")
REPLICAS = 3
SEARCHES_PER_REPLICA = 8
WAIT_SECONDS = 30.0  # bounded waits for Prometheus to start and to scrape what the burst left
POLL_SECONDS = 0.2


@pytest.fixture
def fake_server() -> Iterator[FakeBraveServer]:
    # 10 a second: a burst of 24 draws 429s, which the replicas retry, so the counts include both kinds
    with FakeBraveServer(rate_per_second=10) as server:
        yield server


def free_port() -> int:
    """A port nothing listens on now, for Prometheus's own web server."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def prometheus(tmp: Path, ports: list[int]) -> AsyncIterator[str]:
    """A real Prometheus scraping ``ports`` every 200 ms with the bearer token; its base URL."""
    (tmp / "token").write_text(TOKEN)
    targets = ", ".join(f"'127.0.0.1:{port}'" for port in ports)
    (tmp / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n"
        "scrape_configs:\n  - job_name: brave-search-mcp\n"
        f"    authorization:\n      credentials_file: {tmp / 'token'}\n"
        f"    static_configs:\n      - targets: [{targets}]\n"
    )
    port = free_port()
    command = [
        PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]  # fmt: skip
    process = await anyio.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(timeout=2) as http:
            assert await eventually(lambda: ready(http, base)), "Prometheus did not start"
        yield base
    finally:
        await stop(process)


async def eventually(check: Callable[[], Awaitable[bool]]) -> bool:
    """Whether ``check`` came true within ``WAIT_SECONDS`` (checked every ``POLL_SECONDS``: Prometheus is another
    process, with its own scrape clock)."""
    for _ in range(int(WAIT_SECONDS / POLL_SECONDS)):
        if await check():
            return True
        await anyio.sleep(POLL_SECONDS)
    return False


async def ready(http: httpx2.AsyncClient, base: str) -> bool:
    """Whether Prometheus answers that it is ready."""
    try:
        return (await http.get(f"{base}/-/ready")).status_code == 200
    except httpx2.TransportError:
        return False


async def settled(http: httpx2.AsyncClient, base: str, calls: int, sent: int) -> bool:
    """Whether Prometheus holds every replica up, every call and every request the fake counted."""
    return (
        len(await query(http, base, "up == 1")) == REPLICAS
        and await total(http, base, "brave_search_tool_calls_total") == calls
        and await total(http, base, "brave_search_upstream_requests_total") == sent
    )


async def query(http: httpx2.AsyncClient, base: str, promql: str) -> list[dict[str, Any]]:
    """The instant vector Prometheus answers for ``promql``."""
    answer = (await http.get(f"{base}/api/v1/query", params={"query": promql})).json()
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


async def total(http: httpx2.AsyncClient, base: str, promql: str) -> float:
    """A ``sum(...)`` query's one value (0 when no series matched)."""
    found = await query(http, base, f"sum({promql})")
    return float(found[0]["value"][1]) if found else 0.0


async def search(port: int, queries: list[str]) -> None:
    """Searches through one replica's /mcp, as a client would, concurrently."""
    async with (
        httpx2.AsyncClient(headers=auth(), timeout=20) as http,
        Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode="legacy") as client,
    ):

        async def one(text: str) -> None:
            result = await client.call_tool("brave_web_search", {"query": text, "max_results": 1})
            assert not result.is_error, result

        async with anyio.create_task_group() as group:
            for text in queries:
                group.start_soon(one, text)


async def test_prometheus_totals_agree_with_the_upstreams_own_counts(
    fake_server: FakeBraveServer, tmp_path: Path
) -> None:
    fake = fake_server.fake
    async with AsyncExitStack() as stack:
        ports = [await stack.enter_async_context(replica(fake_server.base_url)) for _ in range(REPLICAS)]
        base = await stack.enter_async_context(prometheus(tmp_path, ports))
        async with anyio.create_task_group() as group:
            for index, port in enumerate(ports):
                words = [f"fleet search {index} {n}" for n in range(SEARCHES_PER_REPLICA)]
                group.start_soon(search, port, words)
        sent, limited = len(fake.requests), fake.hits(status=429)
        calls = REPLICAS * SEARCHES_PER_REPLICA
        assert sent >= calls  # every search reached the fake at least once
        assert limited > 0  # the fake's rate window refused some, which the replicas retried
        async with httpx2.AsyncClient(timeout=5) as http:
            assert await eventually(  # a scrape after the burst has reached every replica
                lambda: settled(http, base, calls, sent)
            ), "Prometheus never saw the burst's totals"
            assert await total(http, base, 'brave_search_upstream_requests_total{status="200"}') == sent - limited
            assert await total(http, base, "brave_search_upstream_rate_limited_total") == limited
            assert await total(http, base, 'brave_search_tool_calls_total{outcome="ok"}') == calls
            per_replica = await query(http, base, "sum by (instance) (brave_search_tool_calls_total)")
            assert sorted(float(row["value"][1]) for row in per_replica) == [SEARCHES_PER_REPLICA] * REPLICAS
            assert await total(http, base, "brave_search_tool_call_duration_seconds_count") == calls
            assert await total(http, base, "brave_search_cache_misses_total{cache='local'}") == calls
            assert await total(http, base, "brave_search_month_requests") >= sent - limited
            assert await total(http, base, "brave_search_state_degraded") == 0
            assert await query(http, base, "brave_search_breaker_state") == []  # Brave alone: no breaker
            assert len(await query(http, base, "brave_search_plan_rate_per_second")) == REPLICAS
            assert len(await query(http, base, "brave_search_http_requests_in_flight")) == REPLICAS
            labels = await http.get(f"{base}/api/v1/labels")
            values = [
                value
                for name in labels.json()["data"]
                for value in (await http.get(f"{base}/api/v1/label/{name}/values")).json()["data"]
            ]
    leaks = [v for v in values if "fleet" in v or "search?" in v or TOKEN in v or VALID_KEY in v]
    assert leaks == []
    # names this server chose, numbers (histogram buckets), and Prometheus's own (the job, instance addresses)
    assert [v for v in values if not re.fullmatch(r"[\w.:+\-]*", v)] == []


def test_the_alert_examples_in_the_docs_are_valid_rules(tmp_path: Path) -> None:
    promtool = require("promtool", "apt-get install prometheus")
    text = (REPO_ROOT / "docs" / "http.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    (rules,) = [block for block in blocks if block.startswith("groups:")]
    (tmp_path / "rules.yml").write_text(rules)
    result = subprocess.run([promtool, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert all(name in rules for name in ("brave_search_plan_month_remaining", "brave_search_breaker_state"))
