"""Operators of a fleet scrape ``/metrics`` (Prometheus text) to see what replicas do without reading their logs.

Events (tool calls, upstream requests, pages read) are counted as they happen by ``MetricsObserver``, the
process's ``observe.Observer``; the figures the process already keeps (Brave's stated plan and month, the spending
cap, the breakers, the caches' counters, the state store's health, requests in flight) are read when scraped, so
nothing else has to report them. Each app has its own ``CollectorRegistry``: nothing lives in the library's global
one, and two servers in one process never share counts. Label values are names this server chose (tools, outcome
codes, providers, endpoints, search types, HTTP statuses): never a query, a URL, a host, a token or a key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp

from brave_search_mcp.config import Settings
from brave_search_mcp.faces.http_guards import BearerGuard, InFlightCap
from brave_search_mcp.observe import Observer, Spans, status_label
from brave_search_mcp.usecases.contract import Ports

METRICS_PATH = "/metrics"
PREFIX = "brave_search"
# Tool calls last milliseconds (a cache hit) to the call deadline (tens of seconds, a summary or a slow read).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0)
BREAKER_VALUES = {"closed": 0, "half_open": 1, "half-open": 1, "open": 2}


class MetricsObserver(Observer):
    """A registry per observer, so two servers in one process (tests, embedders) never mix their counts."""

    def __init__(self, spans: Spans | None = None) -> None:
        super().__init__(spans)
        self.registry = CollectorRegistry(auto_describe=True)
        self.ports: Ports | None = None
        self._calls = Counter(
            f"{PREFIX}_tool_calls", "Tool calls by tool and outcome (ok or the error envelope's code).",
            ["tool", "outcome"], registry=self.registry,
        )  # fmt: skip
        self._durations = Histogram(
            f"{PREFIX}_tool_call_duration_seconds", "Time from a tool call's arrival to its envelope.",
            ["tool"], buckets=DURATION_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self._upstream = Counter(
            f"{PREFIX}_upstream_requests", "HTTP requests sent to a provider, by endpoint and answer status "
            "(error: no answer, a timeout or a network failure).",
            ["provider", "endpoint", "status"], registry=self.registry,
        )  # fmt: skip
        self._limited = Counter(
            f"{PREFIX}_upstream_rate_limited", "Provider answers with HTTP 429 (too many requests).",
            ["provider", "endpoint"], registry=self.registry,
        )  # fmt: skip
        self._pages = Counter(
            f"{PREFIX}_pages", "Pages read_url read, refused by the address policy, or failed to read.",
            ["outcome"], registry=self.registry,
        )  # fmt: skip
        self.in_flight = Gauge(
            f"{PREFIX}_http_requests_in_flight", "/mcp requests being served now (the in-flight cap counts these).",
            registry=self.registry,
        )  # fmt: skip
        self._figures = Figures()
        self.registry.register(self._figures)

    def tool_call(self, tool: str, code: str, seconds: float) -> None:
        """Error rates and latency per tool are what an operator alerts on."""
        self._calls.labels(tool, code).inc()
        self._durations.labels(tool).observe(max(0.0, seconds))

    def upstream(self, provider: str, endpoint: str, status: int | None, seconds: float, outcome: str = "ok") -> None:
        """What Brave bills is its answered requests, and 429s mean the plan is too small: both counted per endpoint."""
        self._upstream.labels(provider, endpoint, status_label(status, outcome)).inc()
        if status == 429:
            self._limited.labels(provider, endpoint).inc()
        super().upstream(provider, endpoint, status, seconds, outcome)

    def page(self, outcome: str) -> None:
        """Refusals by the address policy show probing; reads and failures show the reader's health."""
        self._pages.labels(outcome).inc()

    def watch(self, source: object) -> None:
        """A scrape reads the figures the ports keep anyway, so nothing else has to report them."""
        if isinstance(source, Ports):
            self.ports = source

    def count_in_flight(self, current: Callable[[], int]) -> None:
        """The cap already counts requests in flight; reading it at scrape time keeps one count, not two."""
        self.in_flight.set_function(lambda: float(current()))

    async def exposition(self) -> bytes:
        """Figures read just before rendering are as fresh as the counters beside them."""
        self._figures.facts = await read_figures(self.ports) if self.ports is not None else {}
        return generate_latest(self.registry)

    async def endpoint(self, _: Request) -> Response:
        """The route stays bare so the face decides its guards (token, Host/Origin) in one place."""
        return Response(await self.exposition(), media_type=CONTENT_TYPE_LATEST)


async def read_figures(ports: Ports) -> dict[str, Any]:
    """The status tool's own sources, so metrics and status never disagree, read without sending a request."""
    client = ports.client
    state = client.limits.state
    return {
        "rate_limit": client.last_rate_limit,
        "throttle": await client.admission() if "brave" in ports.settings.providers else {},
        "breakers": await ports.chain.status() if ports.chain is not None else {},  # Brave alone has no breaker
        "health": state.health(),
        "local": client.cache_stats(),
        "shared": state.cache.counts(),
    }


class Figures(Collector):
    """prometheus_client collects synchronously while the figures need awaits: they are read first, then rendered."""

    def __init__(self) -> None:
        self.facts: dict[str, Any] = {}

    def describe(self) -> list[Metric]:
        """Families depend on what the process has learned, so none can be declared ahead."""
        return []

    def collect(self) -> Iterator[Metric]:
        """A figure not learned yet is left out: a guessed zero would fire or silence alerts wrongly."""
        facts = self.facts
        if not facts:
            return
        yield from _plan(facts)
        yield from _caches(facts)
        breakers = GaugeMetricFamily(
            f"{PREFIX}_breaker_state", "Circuit breaker per provider and search type: 0 closed, 1 half-open, 2 open.",
            labels=["provider", "search_type"],
        )  # fmt: skip
        for provider, report in facts["breakers"].items():
            breakers.add_metric([provider, "all"], BREAKER_VALUES.get(str(report.get("state")), 0))
            for kind, typed in (report.get("search_types") or {}).items():
                breakers.add_metric([provider, str(kind)], BREAKER_VALUES.get(str(typed.get("state")), 0))
        yield breakers
        health = facts["health"]
        store = GaugeMetricFamily(
            f"{PREFIX}_state_degraded", "1 while the shared state store fails and this process runs on its own memory.",
            labels=["backend"],
        )  # fmt: skip
        store.add_metric([str(health.get("backend", "unknown"))], 1 if health.get("degraded") else 0)
        yield store


def _plan(facts: dict[str, Any]) -> Iterator[Metric]:
    """Quota alerts need the plan Brave states and this month's requests against the cap."""
    info = facts["rate_limit"]
    if info is not None:
        for name, value, text in (
            ("plan_rate_per_second", info.per_second, "Requests per second the plan allows (Brave's headers)."),
            ("plan_month_limit", info.limit_month, "Requests per month the plan allows, 0 unlimited (headers)."),
            ("plan_month_remaining", info.remaining_month, "Requests left this month, as Brave's headers state."),
        ):
            if value is not None:
                yield GaugeMetricFamily(f"{PREFIX}_{name}", text, value=float(value))
    month = (facts["throttle"] or {}).get("month") or {}
    if "requests" in month:
        yield GaugeMetricFamily(
            f"{PREFIX}_month_requests", "Brave requests this month (UTC), counted in the shared state.",
            value=float(month["requests"]),
        )  # fmt: skip
    if month.get("cap") is not None:
        yield GaugeMetricFamily(
            f"{PREFIX}_month_cap", "The spending cap on Brave requests this month (BRAVE_SEARCH_MONTHLY_REQUESTS).",
            value=float(month["cap"]),
        )  # fmt: skip


def _caches(facts: dict[str, Any]) -> Iterator[Metric]:
    """Cache hits and joins are requests not billed; counters that only grow keep Prometheus rates right."""
    local, shared = facts["local"], facts["shared"]
    found = {
        "local": {"hits": local.hits, "misses": local.misses, "joins": local.shared},
        "shared": {"hits": shared.hits, "misses": shared.misses, "joins": shared.joins},
    }
    for kind, text in (
        ("hits", "Cache look-ups answered from the cache."),
        ("misses", "Cache look-ups that fetched."),
        ("joins", "Look-ups that joined a fetch already in flight (single flight) instead of sending their own."),
    ):
        family = CounterMetricFamily(f"{PREFIX}_cache_{kind}", text, labels=["cache"])
        for cache, counts in found.items():
            family.add_metric([cache], float(counts[kind] or 0))
        yield family


def http_observer(settings: Settings) -> MetricsObserver:
    """Only the HTTP face serves metrics, so only it loads prometheus_client (and OpenTelemetry when asked)."""
    from brave_search_mcp.tracing import open_spans

    return MetricsObserver(open_spans(settings))


def metrics_routes(
    metrics: MetricsObserver | None, token: str | None, in_flight: InFlightCap, security: TransportSecuritySettings
) -> list[BaseRoute]:
    """Beside the in-flight cap, so a scrape is never refused for the load it measures; behind token and Host check."""
    if metrics is None:
        return []
    metrics.count_in_flight(lambda: in_flight.in_flight)
    rebinding = TransportSecurityMiddleware(security)

    async def scrape(request: Request) -> Response:
        refused = await rebinding.validate_request(request)
        return refused if refused is not None else await metrics.endpoint(request)

    if token is None:  # loopback without a token, as /mcp is
        return [Route(METRICS_PATH, scrape, methods=["GET"])]
    return [Route(METRICS_PATH, BearerGuard(request_response(scrape), token), methods=["GET"])]


def traced(app: ASGIApp, metrics: MetricsObserver | None) -> ASGIApp:
    """The SDK continues only a ``_meta`` traceparent; clients that send the HTTP header are continued too."""
    if metrics is None or metrics.spans is None:
        return app
    from brave_search_mcp.tracing import ClientTraceHeaders

    return ClientTraceHeaders(app)
