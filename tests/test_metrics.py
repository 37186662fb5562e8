"""``/metrics`` on the HTTP face: behind the token, outside the in-flight cap, counting what calls did, no secrets."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from prometheus_client.parser import text_string_to_metric_families

from brave_search_mcp.compose import open_tools
from brave_search_mcp.faces.http import HttpOptions, serve_http
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.faces.metrics import MetricsObserver
from brave_search_mcp.models.errors import NetworkError
from testkit.brave.brave import VALID_KEY, FakeBrave
from testkit.clock import FakeClock
from testkit.searxng import FakeSearxngServer
from testkit.searxng.provider import make_provider, search_request
from testkit.settings import make_settings
from testkit.sites import FakeSite
from testkit.sites.pages import page
from testkit.tracked_server import free_port

from .test_http import JSON_HEADERS, PING, STARTUP_SECONDS, TOKEN, auth
from .test_http_startup import REPO_ROOT

pytestmark = pytest.mark.anyio

METRICS_TOKEN = "metrics-token-not-a-secret-0123"
QUERY = "secret project codename zebra"


@contextmanager
def metered(fake: FakeBrave, transport: httpx2.AsyncBaseTransport | None = None, **options: Any) -> Iterator[str]:
    """The HTTP face with ``/metrics`` (as ``serve`` builds it) on a free port in its own thread; its base URL."""
    observer = MetricsObserver()
    settings = make_settings(monthly_requests=500)
    server = build_server(settings, transport=transport or fake.mock_transport(), observer=observer)
    ports: queue.Queue[int] = queue.Queue()
    with start_blocking_portal() as portal:
        serving = partial(serve_http, server, HttpOptions(port=0, **options), ready=ports.put, metrics=observer)
        future = portal.start_task_soon(serving)
        try:
            yield f"http://127.0.0.1:{ports.get(timeout=STARTUP_SECONDS)}"
        finally:
            future.cancel()


def call(name: str, arguments: dict[str, Any], id_: int = 2) -> dict[str, Any]:
    """A tools/call JSON-RPC message."""
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape by (name, sorted labels), parsed by prometheus_client's own parser."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def scrape(base: str, token: str = TOKEN) -> str:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.get(f"{base}/metrics", headers=auth(token))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


async def test_a_scrape_without_the_token_is_refused_like_any_request(fake: FakeBrave) -> None:
    with metered(fake, token=TOKEN) as base:
        async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
            for headers in ({}, auth("wrong-token-wrong-token-0000"), {"authorization": TOKEN}):
                refused = await http.get("/metrics", headers=headers)
                assert (refused.status_code, refused.content) == (401, b"")
                assert refused.headers["www-authenticate"] == "Bearer"
        assert "# TYPE brave_search_tool_calls_total counter" in await scrape(base)


async def test_a_metrics_token_of_its_own_opens_metrics_only(fake: FakeBrave) -> None:
    with metered(fake, token=TOKEN, metrics_token=METRICS_TOKEN) as base:
        async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
            assert (await http.get("/metrics", headers=auth(TOKEN))).status_code == 401
            assert (await http.get("/metrics", headers=auth(METRICS_TOKEN))).status_code == 200
            mcp = await http.post("/mcp", headers=JSON_HEADERS | auth(METRICS_TOKEN), json=PING)
            assert mcp.status_code == 401


def test_a_short_metrics_token_fails_at_start() -> None:
    with pytest.raises(ValueError, match="BRAVE_SEARCH_METRICS_TOKEN"):
        HttpOptions(token=TOKEN, metrics_token="short")


async def test_a_scrape_is_never_counted_in_flight(fake: FakeBrave) -> None:
    held, release = threading.Event(), threading.Event()

    async def hold(_: float) -> None:  # the upstream answer waits until the test lets it go
        held.set()
        await anyio.to_thread.run_sync(release.wait, 10.0)

    with metered(fake, fake.mock_transport(latency=1.0, sleep=hold), token=TOKEN, max_in_flight=1) as base:
        async with (
            httpx2.AsyncClient(base_url=base, timeout=10, headers=JSON_HEADERS | auth()) as http,
            anyio.create_task_group() as group,
        ):
            group.start_soon(partial(http.post, "/mcp", json=call("brave_web_search", {"query": "held"})))
            await anyio.to_thread.run_sync(held.wait, 10.0)
            assert (await http.post("/mcp", json=PING)).status_code == 503  # the cap is full
            found = samples(await scrape(base))
            assert found[("brave_search_http_requests_in_flight", ())] == 1
            release.set()


async def test_calls_upstream_requests_and_figures_are_counted_without_secrets(fake: FakeBrave) -> None:
    with metered(fake, token=TOKEN) as base:
        async with httpx2.AsyncClient(base_url=base, timeout=10, headers=JSON_HEADERS | auth()) as http:
            for message in (
                call("brave_web_search", {"query": QUERY}),
                call("brave_web_search", {"query": QUERY}),  # the local cache answers
                call("brave_web_search", {"query": ""}),  # INVALID_ARGUMENT
                call("read_url", {"url": "http://127.0.0.1:9/private?token=" + TOKEN}),  # FETCH_BLOCKED
            ):
                assert (await http.post("/mcp", json=message)).status_code == 200
        text = await scrape(base)
    found = samples(text)
    assert found[("brave_search_tool_calls_total", (("outcome", "ok"), ("tool", "brave_web_search")))] == 2
    assert found[("brave_search_tool_calls_total", (("outcome", "INVALID_ARGUMENT"), ("tool", "brave_web_search")))]
    assert found[("brave_search_tool_calls_total", (("outcome", "FETCH_BLOCKED"), ("tool", "read_url")))] == 1
    assert found[("brave_search_tool_call_duration_seconds_count", (("tool", "brave_web_search"),))] == 3
    upstream = (("endpoint", "web"), ("provider", "brave"), ("status", "200"))
    assert found[("brave_search_upstream_requests_total", upstream)] == len(fake.requests) == 1
    assert found[("brave_search_pages_total", (("outcome", "refused"),))] == 1
    assert found[("brave_search_cache_hits_total", (("cache", "local"),))] == 1
    assert found[("brave_search_cache_misses_total", (("cache", "local"),))] == 1
    assert found[("brave_search_plan_rate_per_second", ())] == fake.rate_per_second  # as the headers stated
    assert found[("brave_search_plan_month_remaining", ())] == fake.monthly_limit - 1
    assert found[("brave_search_month_requests", ())] == 1
    assert found[("brave_search_month_cap", ())] == 500
    assert not [key for key in found if key[0] == "brave_search_breaker_state"]  # Brave alone has no breaker
    assert found[("brave_search_state_degraded", (("backend", "memory"),))] == 0
    for secret in (QUERY, "zebra", "127.0.0.1:9", "private", TOKEN, VALID_KEY):
        assert secret not in text


async def test_a_429_is_counted_as_one(fake: FakeBrave) -> None:
    fake.inject("429", path="/web/search")
    with metered(fake) as base:  # loopback without a token: /metrics is open as /mcp is
        async with httpx2.AsyncClient(base_url=base, timeout=10, headers=JSON_HEADERS) as http:
            assert (await http.post("/mcp", json=call("brave_web_search", {"query": "busy"}))).status_code == 200
        async with httpx2.AsyncClient(timeout=10) as http:
            found = samples((await http.get(f"{base}/metrics")).text)
    assert found[("brave_search_upstream_rate_limited_total", (("endpoint", "web"), ("provider", "brave")))] == 1
    upstream = (("endpoint", "web"), ("provider", "brave"), ("status", "429"))
    assert found[("brave_search_upstream_requests_total", upstream)] == fake.hits(status=429) == 1


async def test_without_an_observer_there_is_no_metrics_route(fake: FakeBrave) -> None:
    """What stdio and a library server get: ``build_server`` without the HTTP face's observer serves no /metrics."""
    from .test_http import serving

    with serving(fake, token=TOKEN) as running:
        async with httpx2.AsyncClient(timeout=10) as http:
            assert (await http.get(f"{running.base}/metrics", headers=auth())).status_code == 404


def test_two_apps_never_share_counts() -> None:
    first, second = MetricsObserver(), MetricsObserver()
    first.tool_call("brave_web_search", "ok", 0.1)
    assert first.registry is not second.registry
    labels = {"tool": "brave_web_search", "outcome": "ok"}
    assert first.registry.get_sample_value("brave_search_tool_calls_total", labels) == 1
    assert second.registry.get_sample_value("brave_search_tool_calls_total", labels) is None


async def test_searxng_requests_and_breakers_are_counted_under_its_name(searxng_server: FakeSearxngServer) -> None:
    observer = MetricsObserver()
    settings = make_settings(providers=("searxng",), searxng_url=searxng_server.base_url)
    async with open_tools(settings, observer=observer) as tools:
        assert not (await tools.call("brave_web_search", {"query": QUERY})).is_error
        found = samples((await observer.exposition()).decode())
    upstream = (("endpoint", "search"), ("provider", "searxng"), ("status", "200"))
    assert found[("brave_search_upstream_requests_total", upstream)] == len(searxng_server.fake.search_requests())
    assert found[("brave_search_breaker_state", (("provider", "searxng"), ("search_type", "all")))] == 0
    assert ("brave_search_month_requests", ()) not in found  # Brave's figures only where Brave is used


def test_stdio_never_loads_the_metrics_library() -> None:
    """Metrics are the HTTP face's: a stdio server (and the CLI, the library) does not even import them."""
    script = (
        "import sys\n"
        "from brave_search_mcp.config import Settings\n"
        "from brave_search_mcp.faces.mcp_server import build_server\n"
        "from brave_search_mcp.faces.stdio import run_stdio\n"
        "build_server(Settings.from_env({'BRAVE_SEARCH_API_KEY': sys.argv[1]}))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('prometheus_client', 'opentelemetry.sdk'))))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script, VALID_KEY], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert done.stdout.split() == ["[]"], done.stderr


async def test_pages_read_and_refused_are_counted_without_their_address() -> None:
    observer = MetricsObserver()
    settings = make_settings(read_allowed_hosts=("127.0.0.2",))
    with FakeSite(host="127.0.0.2") as site:  # opted in; 127.0.0.1 is not
        site.page("/article", page("article.html"))
        async with open_tools(settings, observer=observer) as tools:
            assert not (await tools.call("read_url", {"url": site.url("/article")})).is_error
            assert not (await tools.call("read_url", {"url": site.url("/article")})).is_error  # the cache's
            refused = await tools.call("read_url", {"url": "http://127.0.0.1:9/admin"})
            assert refused.structured["error"]["code"] == "FETCH_BLOCKED"
            text = (await observer.exposition()).decode()
    found = samples(text)
    assert found[("brave_search_pages_total", (("outcome", "read"),))] == 2
    assert found[("brave_search_pages_total", (("outcome", "refused"),))] == 1
    assert site.count("/article") == 1
    assert "127.0.0" not in text and "article" not in text and "admin" not in text


def test_the_cli_serves_metrics_behind_the_metrics_token(tmp_path: Path) -> None:
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    env |= {"BRAVE_SEARCH_API_KEY": VALID_KEY, "BRAVE_SEARCH_STATE": "memory", "BRAVE_SEARCH_HTTP_TOKEN": TOKEN}
    command = [sys.executable, "-m", "brave_search_mcp", "--transport", "http", "--port", str(port)]
    short = subprocess.run(command, env=env | {"BRAVE_SEARCH_METRICS_TOKEN": "short"}, capture_output=True, timeout=60)
    assert short.returncode == 2 and b"BRAVE_SEARCH_METRICS_TOKEN" in short.stderr
    with subprocess.Popen(command, env=env | {"BRAVE_SEARCH_METRICS_TOKEN": METRICS_TOKEN}) as proc:
        try:
            with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=2) as http:
                for _ in range(150):  # up to 15 s for the server to listen
                    try:
                        http.get("/healthz")
                        break
                    except httpx2.TransportError:
                        time.sleep(0.1)
                assert http.get("/metrics", headers=auth(TOKEN)).status_code == 401
                scraped = http.get("/metrics", headers=auth(METRICS_TOKEN))
                assert scraped.status_code == 200 and "brave_search_http_requests_in_flight 0.0" in scraped.text
        finally:
            proc.terminate()
            proc.wait(timeout=10)


async def test_answers_streams_are_counted_once_each_with_their_status(fake: FakeBrave) -> None:
    observer = MetricsObserver()
    fake.inject("429", path="/chat/completions")  # one refusal, retried: two requests, one answer
    async with open_tools(make_settings(), transport=fake.mock_transport(), observer=observer) as tools:
        outcome = await tools.call("brave_answer", {"question": "how do I start with the tool?"})
    assert not outcome.is_error, outcome.text
    sample = observer.registry.get_sample_value
    for status, count in (("200", 1), ("429", 1)):
        labels = {"provider": "brave", "endpoint": "answers", "status": status}
        assert sample("brave_search_upstream_requests_total", labels) == count == fake.hits(status=int(status))
    assert sample("brave_search_upstream_rate_limited_total", {"provider": "brave", "endpoint": "answers"}) == 1


async def test_a_call_to_a_tool_that_does_not_exist_is_counted_without_its_name(fake: FakeBrave) -> None:
    """A client names the tool: a name the server does not know is the client's text (a query pasted in, or a new
    series per call), so it is counted as ``unknown``, never as a label of its own."""
    observer = MetricsObserver()
    async with open_tools(make_settings(), transport=fake.mock_transport(), observer=observer) as tools:
        for name in (QUERY, f"{QUERY} 2"):
            assert (await tools.call(name, {})).structured["error"]["code"] == "INVALID_ARGUMENT"
        text = (await observer.exposition()).decode()
    found = samples(text)
    assert found[("brave_search_tool_calls_total", (("outcome", "INVALID_ARGUMENT"), ("tool", "unknown")))] == 2
    assert found[("brave_search_tool_call_duration_seconds_count", (("tool", "unknown"),))] == 2
    assert "zebra" not in text


async def test_searxng_requests_without_an_answer_are_counted_as_errors(clock: FakeClock) -> None:
    """As for Brave: a request SearXNG never answered (refused connection, reset, timeout) was still sent, retries
    and the status tool's probe included, and shows under ``status="error"``."""
    sent: list[str] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.url.path)
        raise httpx2.ConnectError("refused", request=request)

    observer = MetricsObserver()
    provider = make_provider(httpx2.MockTransport(refuse), clock, observer=observer)
    with pytest.raises(NetworkError):
        await provider.search(search_request())
    assert not (await provider.probe())["ok"]
    await provider.aclose()
    labels = {"provider": "searxng", "endpoint": "search", "status": "error"}
    assert observer.registry.get_sample_value("brave_search_upstream_requests_total", labels) == len(sent) == 4


async def test_a_scrape_under_a_foreign_host_or_origin_is_refused_as_on_mcp(fake: FakeBrave) -> None:
    """Loopback without a token: a web page that rebinds its own name to 127.0.0.1 cannot read /metrics (the DNS-
    rebinding guard /mcp has), while a scrape of the loopback address itself is served."""
    with metered(fake) as base:
        async with httpx2.AsyncClient(base_url=base, timeout=10) as http:
            assert (await http.get("/metrics", headers={"host": "attacker.example"})).status_code == 421
            assert (await http.get("/metrics", headers={"origin": "http://attacker.example"})).status_code == 403
            mcp = await http.post("/mcp", headers=JSON_HEADERS | {"host": "attacker.example"}, json=PING)
            assert mcp.status_code == 421
            assert (await http.get("/metrics")).status_code == 200
