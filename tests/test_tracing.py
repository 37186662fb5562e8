"""Traces over OTLP/HTTP from a real HTTP replica to a loopback receiver that decodes them with opentelemetry-proto:
one trace id for the tool call, its upstream request and its state operations; a client's trace continued."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from brave_search_mcp.config import Settings
from brave_search_mcp.tracing import open_spans, tracing_wanted
from testkit.brave.http_server import FakeBraveServer
from testkit.settings import make_settings

from .test_http import JSON_HEADERS, auth
from .test_http_startup import REPO_ROOT, replica
from .test_metrics import call

pytestmark = pytest.mark.anyio

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
HEADER_TRACE = "0af7651916cd43dd8448eb211c80319c"
HEADER_SPAN = "b7ad6b7169203331"
WAIT_SECONDS = 20.0


@dataclass(frozen=True)
class Span:
    """One received span, as hex ids and plain values."""

    name: str
    trace_id: str
    span_id: str
    parent: str
    attributes: dict[str, Any]


class Receiver(ThreadingHTTPServer):
    """A tiny OTLP/HTTP (protobuf) trace receiver on loopback: what it decoded, and a condition to wait on."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[Span] = []
        self.changed = threading.Condition()

    def wait_for(self, predicate: Any, timeout: float = WAIT_SECONDS) -> bool:
        with self.changed:
            return bool(self.changed.wait_for(lambda: predicate(list(self.spans)), timeout))


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = [
            Span(
                span.name,
                span.trace_id.hex(),
                span.span_id.hex(),
                span.parent_span_id.hex(),
                {kv.key: _value(kv.value) for kv in span.attributes},
            )
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self.server.changed:
            self.server.spans.extend(found)
            self.server.changed.notify_all()
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@contextmanager
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@asynccontextmanager
async def traced_replica(brave_url: str, endpoint: str) -> AsyncIterator[str]:
    """The HTTP face in a subprocess, exporting to ``endpoint`` every 50 ms; its /mcp URL."""
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_SERVICE_NAME": "fleet-test"}
    async with replica(brave_url, **otel) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def of_trace(spans: list[Span], trace_id: str) -> dict[str, Span]:
    return {span.name: span for span in spans if span.trace_id == trace_id}


async def test_one_trace_holds_the_call_its_upstream_request_and_state_operations() -> None:
    with FakeBraveServer(rate_per_second=1000) as fake_server, receiver() as sink:
        endpoint = f"http://127.0.0.1:{sink.server_address[1]}"
        async with (
            traced_replica(fake_server.base_url, endpoint) as url,
            httpx2.AsyncClient(timeout=10, headers=JSON_HEADERS | auth()) as http,
        ):
            meta = {"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"}
            searched = call("brave_web_search", {"query": "traced search"})
            searched["params"]["_meta"] = meta
            assert (await http.post(url, json=searched)).status_code == 200
            failing = call("brave_web_search", {"query": ""})  # an error envelope carries the span's trace id
            failing["params"]["_meta"] = meta
            envelope = (await http.post(url, json=failing)).json()["result"]["structuredContent"]
            header = {"traceparent": f"00-{HEADER_TRACE}-{HEADER_SPAN}-01"}
            by_header = call("brave_web_search", {"query": "traced by header"})
            assert (await http.post(url, json=by_header, headers=header)).status_code == 200
            plain = (await http.post(url, json=call("brave_web_search", {"query": ""}))).json()
            wanted = ("tools/call brave_web_search", "upstream brave web", "state admit", "state settle")
            assert sink.wait_for(lambda spans: all(name in of_trace(spans, CLIENT_TRACE) for name in wanted))
            assert sink.wait_for(lambda spans: "upstream brave web" in of_trace(spans, HEADER_TRACE))
            tool_spans = "tools/call brave_web_search"
            assert sink.wait_for(lambda spans: sum(span.name == tool_spans for span in spans) == 4)  # all four calls
    mine = of_trace(sink.spans, CLIENT_TRACE)
    upstream = mine["upstream brave web"]
    calls = [
        span for span in sink.spans if span.name == "tools/call brave_web_search" and span.trace_id == CLIENT_TRACE
    ]
    assert [span.parent for span in calls] == [CLIENT_SPAN, CLIENT_SPAN]  # the client's trace continued, twice
    (tool,) = [span for span in calls if span.span_id == upstream.parent]  # the search's, not the failed call's
    assert tool.attributes["gen_ai.tool.name"] == "brave_web_search"
    assert upstream.attributes == {
        "provider": "brave", "endpoint": "web", "outcome": "ok", "http.response.status_code": 200,
    }  # fmt: skip
    assert mine["state admit"].parent == mine["state settle"].parent == tool.span_id
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["meta"]["trace_id"] == CLIENT_TRACE  # the span's, so logs, envelopes and traces agree
    assert of_trace(sink.spans, HEADER_TRACE)["tools/call brave_web_search"].parent == HEADER_SPAN
    own = plain["result"]["structuredContent"]["meta"]["trace_id"]
    assert len(own) == 32 and own not in (CLIENT_TRACE, HEADER_TRACE)  # a call of its own starts its own trace
    assert any(span.trace_id == own for span in sink.spans)
    for span in sink.spans:  # no attribute carries the query
        assert "traced" not in str(span.attributes)


def test_traces_are_on_only_where_the_standard_variables_ask() -> None:
    assert not tracing_wanted(make_settings())
    assert tracing_wanted(make_settings(otel_endpoint="http://127.0.0.1:4318"))
    assert tracing_wanted(make_settings(otel_traces_endpoint="http://127.0.0.1:4318/v1/traces"))
    assert tracing_wanted(make_settings(otel_traces_exporter="otlp"))
    assert not tracing_wanted(make_settings(otel_traces_exporter="none", otel_endpoint="http://127.0.0.1:4318"))
    assert not tracing_wanted(make_settings(otel_sdk_disabled=True, otel_endpoint="http://127.0.0.1:4318"))


def test_without_the_extra_asking_for_traces_warns_and_sends_none(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if the otel extra were not installed
    assert open_spans(make_settings(otel_endpoint="http://127.0.0.1:4318")) is None
    assert "otel extra is not installed" in caplog.text


def test_without_traces_nothing_of_the_sdk_is_imported_and_trace_ids_stay_short() -> None:
    script = (
        "import sys, anyio\n"
        "from brave_search_mcp.compose import open_tools\n"
        "from brave_search_mcp.faces.metrics import http_observer\n"
        "from testkit.brave.brave import FakeBrave\n"
        "from testkit.settings import make_settings\n"
        "async def main():\n"
        "    settings = make_settings()\n"
        "    fake = FakeBrave()\n"
        "    async with open_tools(settings, transport=fake.mock_transport(), observer=http_observer(settings)) as t:\n"
        "        out = await t.call('brave_web_search', {'query': ''})\n"
        "    print(len(out.trace_id), any(m.startswith('opentelemetry.sdk') for m in sys.modules))\n"
        "anyio.run(main)\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == ["16", "False"], result.stderr


def test_the_standard_variables_are_read_from_the_environment_by_the_settings() -> None:
    env = {"BRAVE_SEARCH_API_KEY": "fake-key-for-tests-0000000000", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318"}
    settings = Settings.from_env(env | {"OTEL_SERVICE_NAME": "search-fleet"})
    assert (settings.otel_endpoint, settings.otel_service_name) == ("http://otel:4318", "search-fleet")
    assert tracing_wanted(settings)
    assert not tracing_wanted(Settings.from_env(env | {"OTEL_SDK_DISABLED": "true"}))
    assert Settings.from_env({}).otel_service_name == "brave-search-mcp"


def test_a_second_tracer_in_one_process_warns_that_the_sdk_spans_go_to_the_first() -> None:
    """The SDK's middleware takes no tracer provider (it uses OpenTelemetry's global one, set once): a second server
    in the same process cannot have its tools/call spans, and says so rather than failing silently."""
    script = (
        "import logging\n"
        "from opentelemetry import trace\n"
        "from brave_search_mcp.tracing import open_spans\n"
        "from testkit.settings import make_settings\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "settings = make_settings(otel_endpoint='http://127.0.0.1:9')\n"
        "first = open_spans(settings)\n"
        "second = open_spans(settings)\n"
        "print(type(trace.get_tracer_provider()).__name__, first is not None and second is not None)\n"
        "first.close(); second.close()\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == ["TracerProvider", "True"], result.stderr
    warnings = [line for line in result.stderr.splitlines() if "tracer provider is installed" in line]
    assert len(warnings) == 1 and "tools/call spans" in warnings[0]
    assert "Overriding of current TracerProvider" not in result.stderr  # no attempt to replace the first
