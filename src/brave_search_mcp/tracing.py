"""Traces over OTLP/HTTP when the ``otel`` extra is installed and the standard ``OTEL_*`` variables ask for them.

The MCP SDK already wraps every inbound message in a SERVER span through the OpenTelemetry API (continuing a
``traceparent`` the client put in the request's ``_meta``); it is a no-op until a tracer provider is installed.
``open_spans`` installs one (the SDK's ``TracerProvider`` with a batching OTLP/HTTP exporter, which reads its own
``OTEL_EXPORTER_OTLP_*`` settings) and returns the ``Spans`` the observer makes its spans with: upstream requests,
page reads and state operations, children of the tool call's span. Nothing here is imported unless tracing is on.

One tracer provider per process: the SDK's middleware takes no tracer or provider (its spans always go to
OpenTelemetry's global provider, which can be set only once), so a second server in the same process exports its own
spans but the ``tools/call`` spans of both go to the first one's exporter (and none once the first has closed).
``open_spans`` warns when it finds a provider installed already. Run one server per process to trace each fully.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from brave_search_mcp.config import Settings
from brave_search_mcp.observe import Attributes

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from starlette.types import ASGIApp, Receive, Scope, Send

logger = logging.getLogger(__name__)

TRACER_NAME = "brave-search-mcp"


def tracing_wanted(settings: Settings) -> bool:
    """The OpenTelemetry convention: traces go out when an OTLP endpoint or the otlp exporter is named, unless the
    SDK is disabled or the traces exporter is ``none``."""
    exporters = {name.strip().lower() for name in (settings.otel_traces_exporter or "").split(",") if name.strip()}
    if settings.otel_sdk_disabled or exporters == {"none"}:
        return False
    return "otlp" in exporters or bool(settings.otel_endpoint or settings.otel_traces_endpoint)


class OtelSpans:
    """``observe.Spans`` over one SDK tracer provider; ``close`` flushes the spans still batched."""

    def __init__(self, provider: TracerProvider) -> None:
        from opentelemetry import trace

        self._provider = provider
        self._trace = trace
        self._tracer = provider.get_tracer(TRACER_NAME)

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[None]:
        """A child of the current span, current while the work runs; an exception marks it failed."""
        return self._current(name, attributes)

    @contextmanager
    def _current(self, name: str, attributes: Attributes) -> Iterator[None]:
        with self._tracer.start_as_current_span(name, attributes=dict(attributes)):
            yield

    def finished(self, name: str, seconds: float, attributes: Attributes, error: str | None) -> None:
        """A CLIENT span that ended now, begun ``seconds`` ago (an upstream request, timed by its client)."""
        from opentelemetry.trace import SpanKind, Status, StatusCode

        start = time.time_ns() - int(max(0.0, seconds) * 1e9)
        span = self._tracer.start_span(name, kind=SpanKind.CLIENT, start_time=start, attributes=dict(attributes))
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()

    def trace_id(self) -> str | None:
        """The current span's trace id (32 hex digits), None outside a span."""
        context = self._trace.get_current_span().get_span_context()
        return format(context.trace_id, "032x") if context.is_valid else None

    def close(self) -> None:
        """Export what is still batched and stop the exporter (at the end of serving)."""
        self._provider.shutdown()


def open_spans(settings: Settings) -> OtelSpans | None:
    """The process's tracer when the settings ask for traces and the ``otel`` extra is installed; None otherwise
    (a warning says so when traces were asked for without the extra). Installs the global tracer provider, the only
    one the SDK's middleware can use (a warning says when another one holds that place already)."""
    if not tracing_wanted(settings):
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        logger.warning("OTEL_* variables ask for traces, but the otel extra is not installed: no traces are sent")
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": settings.otel_service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):  # none installed yet
        trace.set_tracer_provider(provider)
    else:
        logger.warning(
            "a tracer provider is installed in this process already: this server's tools/call spans (the MCP SDK's) "
            "go to that one; run one server per process to trace each fully"
        )
    return OtelSpans(provider)


class ClientTraceHeaders:
    """ASGI layer that continues a W3C ``traceparent`` HTTP header: the SDK reads one only from ``_meta``, and the
    message handler inherits this task's context, so the tool call's span becomes a child of the client's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Attach the client's trace context (if any) while the request is served."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from opentelemetry import context, propagate

        carrier: dict[str, Any] = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        token = context.attach(propagate.extract(carrier))
        try:
            await self.app(scope, receive, send)
        finally:
            context.detach(token)
