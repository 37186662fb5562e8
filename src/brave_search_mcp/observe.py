"""Operators need to see what calls do; every layer reports to one ``Observer`` that costs nothing until made real.

The composition root hands one observer to the tool boundary, the upstream clients and the reader; the HTTP face's
is ``faces.metrics.MetricsObserver`` (Prometheus counters) and, when the ``otel`` extra is installed and an
``OTEL_*`` exporter is configured, its spans come from ``tracing.OtelSpans``. The base class records nothing and
imports neither Prometheus nor OpenTelemetry, so the CLI, the library and stdio pay nothing for it. Label values are
the caller's job to keep low-cardinality: tool names, outcome codes, provider and endpoint names, HTTP statuses;
never a query or a URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Protocol

import anyio

from brave_search_mcp.models.errors import BraveSearchError, ErrorCode

Attributes = Mapping[str, str | int | float | bool]
CANCELLED = ErrorCode.CANCELLED.value


def outcome_of(exc: BaseException) -> str:
    """An ended request's outcome code, so a cancellation reads as one rather than as a failure or a success."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return CANCELLED
    return exc.code.value if isinstance(exc, BraveSearchError) else ErrorCode.INTERNAL_ERROR.value


def status_label(status: int | None, outcome: str) -> str:
    """The ``status`` label: a request with no answer still went out, and a cancelled one is no provider failure."""
    if status is not None:
        return str(status)
    return "cancelled" if outcome == CANCELLED else "error"


class Spans(Protocol):
    """What the observer needs of a tracer, so no layer imports OpenTelemetry and the SDK loads only when asked for."""

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[None]:
        """Work nested in it (an upstream request) becomes its child, so a trace shows what a slow step waited on."""
        ...

    def finished(self, name: str, seconds: float, attributes: Attributes, error: str | None) -> None:
        """Some work learns its outcome only as it ends; its span is made then, dated back ``seconds``."""
        ...

    def trace_id(self) -> str | None:
        """Logs and error envelopes carry this id (None outside a span), so each finds its trace."""
        ...

    def close(self) -> None:
        """Spans still batched at the end of serving would be lost without a flush."""
        ...


class Observer:
    """The CLI, the library and stdio want no metrics: this base records nothing, and the HTTP face subclasses it."""

    def __init__(self, spans: Spans | None = None) -> None:
        self.spans = spans

    def tool_call(self, tool: str, code: str, seconds: float) -> None:
        """Operators judge the service by its calls' outcomes and durations; the base keeps none."""

    def upstream(self, provider: str, endpoint: str, status: int | None, seconds: float, outcome: str = "ok") -> None:
        """Upstream requests are what the plan bills and limits, so each one is traced (and counted by subclasses)."""
        if self.spans is not None:
            attributes: dict[str, str | int | float | bool] = {"provider": provider, "endpoint": endpoint}
            attributes["outcome"] = outcome
            if status is not None:
                attributes["http.response.status_code"] = status
            failed = outcome if outcome != "ok" else None
            self.spans.finished(f"upstream {provider} {endpoint}", seconds, attributes, failed)

    def request(self, provider: str, endpoint: str, clock: Callable[[], float]) -> Sent:
        """Every provider's client counts and traces its requests by the same rule, once each, however they end."""
        return Sent(self, provider, endpoint, clock)

    def page(self, outcome: str) -> None:
        """Refusals by the address policy are a security signal operators watch beside reads and failures."""

    @contextmanager
    def span(self, name: str, **attributes: str | int | float | bool) -> Iterator[None]:
        """State operations and page reads can stall a call; a span (none without tracing) shows which one did."""
        if self.spans is None:
            yield
            return
        with self.spans.span(name, attributes):
            yield

    def trace_id(self) -> str | None:
        """Logs, envelopes and traces must agree on the id, so the span's is used when there is one."""
        return self.spans.trace_id() if self.spans is not None else None

    def close(self) -> None:
        """Spans still batched at the end of serving would be lost without it."""
        if self.spans is not None:
            self.spans.close()

    def watch(self, source: object) -> None:
        """Figures the process keeps anyway (plan, month, breakers, caches) are read when scraped, not sent twice."""


class Sent:
    """Requests end in many ways (an answer, none, a cancellation); reporting in ``__exit__`` counts each once."""

    def __init__(self, observer: Observer, provider: str, endpoint: str, clock: Callable[[], float]) -> None:
        self._observer, self._provider, self._endpoint, self._clock = observer, provider, endpoint, clock
        self.status: int | None = None
        self.outcome = "ok"
        self.started = self.seconds = 0.0

    def __enter__(self) -> Sent:
        self.started = self._clock()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None and self.outcome == "ok":
            self.outcome = outcome_of(exc)
        self.seconds = max(0.0, self._clock() - self.started)
        self._observer.upstream(self._provider, self._endpoint, self.status, self.seconds, self.outcome)
