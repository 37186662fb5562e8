"""What a process tells its operators as calls run: a no-op ``Observer`` every layer may call, made real per process.

The composition root hands one observer to the tool boundary, the upstream clients and the reader; the HTTP face's
is ``faces.metrics.MetricsObserver`` (Prometheus counters) and, when the ``otel`` extra is installed and an
``OTEL_*`` exporter is configured, its spans come from ``tracing.OtelSpans``. The base class records nothing and
imports nothing, so the CLI, the library and stdio pay nothing for it. Label values are the caller's job to keep
low-cardinality: tool names, outcome codes, provider and endpoint names, HTTP statuses; never a query or a URL.
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
    """A tracer: spans around work, and the trace id of the span in force (for logs and error envelopes)."""

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[None]:
        """A context manager that makes a child span of the current one current while it runs."""
        ...

    def finished(self, name: str, seconds: float, attributes: Attributes, error: str | None) -> None:
        """A span that ended just now and lasted ``seconds`` (work whose outcome is known only at its end)."""
        ...

    def trace_id(self) -> str | None:
        """The current span's trace id as 32 hex digits; None outside any recorded span."""
        ...

    def close(self) -> None:
        """Send the spans still held (at the end of serving)."""
        ...


class Observer:
    """Records nothing; subclasses count (metrics) and ``spans`` traces. One per process, shared by every call."""

    def __init__(self, spans: Spans | None = None) -> None:
        self.spans = spans

    def tool_call(self, tool: str, code: str, seconds: float) -> None:
        """One tool call ended with envelope ``code`` ("ok" or an error code) after ``seconds``."""

    def upstream(self, provider: str, endpoint: str, status: int | None, seconds: float, outcome: str = "ok") -> None:
        """One HTTP request to a provider ended: its status (None: no answer) and the outcome code it became."""
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
        """One page read ended: "read", "refused" (the address policy) or "failed"."""

    @contextmanager
    def span(self, name: str, **attributes: str | int | float | bool) -> Iterator[None]:
        """A span around a piece of work (a state operation, a page read); nothing without tracing."""
        if self.spans is None:
            yield
            return
        with self.spans.span(name, attributes):
            yield

    def trace_id(self) -> str | None:
        """The trace id of the span in force, so logs and envelopes carry the span's; None without tracing."""
        return self.spans.trace_id() if self.spans is not None else None

    def close(self) -> None:
        """At the end of serving: the spans still held go out."""
        if self.spans is not None:
            self.spans.close()

    def watch(self, source: object) -> None:
        """The process's ports, read at scrape time (plan, month, breakers, caches); the base reads nothing."""


class Sent:
    """One request on its way (``with`` around it from the send on): reported when it ends, whether an answer came
    (``status``), none did, or the caller was cancelled, so no path is counted twice or left out."""

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
