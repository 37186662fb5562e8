"""The tool boundary: every outcome is an envelope, one log line per call, and nothing leaks."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx2
import pytest

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.logs import CALL_LOGGER, JsonLineFormatter
from brave_search_mcp.tools.boundary import ToolOutcome
from brave_search_mcp.usecases import web_search as service_module
from testkit.brave.brave import VALID_KEY, FakeBrave
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio


async def _call(fake: FakeBrave, tool: str, arguments: dict[str, Any], **settings: Any) -> ToolOutcome:
    config = make_settings(**settings)
    clock = FakeClock()
    async with BraveClient(config, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        return await tool_boundary(config, client).call(tool, arguments)


class _GatedTransport(httpx2.AsyncBaseTransport):
    """Holds every request until the test opens the gate, so concurrent callers really overlap."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner
        self.gate = anyio.Event()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await self.gate.wait()
        return await self.inner.handle_async_request(request)


async def test_identical_concurrent_calls_sharing_a_failure_keep_their_own_warnings(fake: FakeBrave) -> None:
    fake.inject("429_quota")
    config = make_settings()
    clock = FakeClock()
    transport = _GatedTransport(fake.mock_transport())
    outcomes: dict[str, ToolOutcome] = {}
    async with BraveClient(config, transport=transport, clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(config, client)

        async def one(name: str, arguments: dict[str, Any]) -> None:
            outcomes[name] = await service.call("brave_web_search", arguments)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "clamped", {"query": "shared", "max_lines": 5})
                tg.start_soon(one, "plain", {"query": "shared"})
                await anyio.wait_all_tasks_blocked()
                transport.gate.set()
    assert fake.hits("/web/search") == 1
    clamped, plain = outcomes["clamped"].structured, outcomes["plain"].structured
    assert clamped["error"]["code"] == plain["error"]["code"] == "QUOTA_EXCEEDED"
    assert [w["code"] for w in clamped["warnings"]] == ["OUTPUT_LIMIT_CLAMPED"]
    assert plain["warnings"] == []


async def test_no_results_error_still_explains_the_warnings(fake: FakeBrave) -> None:
    fake.no_results_for.add("nothing here")
    outcome = await _call(fake, "brave_web_search", {"query": "nothing here", "freshness": "1w"})
    assert outcome.structured["error"]["code"] == "NO_RESULTS"
    assert [w["code"] for w in outcome.structured["warnings"]] == ["INVALID_FRESHNESS"]
    assert outcome.text.splitlines()[1].startswith("! INVALID_FRESHNESS:")


class _HangingTransport(httpx2.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_the_call_deadline_ends_a_hung_call_as_timeout() -> None:
    config = make_settings(call_deadline_seconds=0.05, timeout_seconds=30.0)
    async with BraveClient(config, transport=_HangingTransport()) as client:
        with anyio.fail_after(5):
            outcome = await tool_boundary(config, client).call("brave_web_search", {"query": "hang"})
    error = outcome.structured["error"]
    assert (error["code"], error["retryable"]) == ("TIMEOUT", True)
    assert "deadline" in error["message"]


async def test_a_bug_is_an_internal_error_without_internals(
    fake: FakeBrave, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("db password=hunter2")

    monkeypatch.setattr(service_module, "parse_answer", explode)
    with caplog.at_level(logging.ERROR, logger=CALL_LOGGER):
        outcome = await _call(fake, "brave_web_search", {"query": "boom"})
    error = outcome.structured["error"]
    assert error["code"] == "INTERNAL_ERROR"
    assert outcome.trace_id in error["message"]
    assert "hunter2" not in json.dumps(outcome.structured) + outcome.text
    assert "Traceback" not in outcome.text
    logged = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert logged
    assert logged[0].__dict__["trace_id"] == outcome.trace_id


async def test_unknown_tool_name_is_an_envelope(fake: FakeBrave) -> None:
    outcome = await _call(fake, "brave_no_such_tool", {"query": "x"})
    assert outcome.structured["error"]["code"] == "INVALID_ARGUMENT"
    assert outcome.structured["error"]["details"]["field"] == "tool"


async def test_one_json_log_line_per_call_with_the_facts_and_never_the_key(
    fake: FakeBrave, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=CALL_LOGGER):
        ok = await _call(fake, "brave_web_search", {"query": "logged", "search_type": "news"})
        fake.inject("500", times=4)
        failed = await _call(fake, "brave_web_search", {"query": "logged again"})
    lines = [json.loads(JsonLineFormatter().format(r)) for r in caplog.records if r.name == CALL_LOGGER]
    assert len(lines) == 2
    first, second = lines
    assert first["trace_id"] == ok.trace_id
    assert (first["tool"], first["outcome"], first["search_type"]) == ("brave_web_search", "ok", "news")
    assert (first["cache_hit"], first["attempts"], first["upstream_status"]) == (False, 1, 200)
    assert isinstance(first["duration_ms"], float)
    assert second["trace_id"] == failed.trace_id
    assert (second["outcome"], second["upstream_status"]) == ("UPSTREAM_ERROR", 500)
    assert VALID_KEY not in caplog.text
    assert all(VALID_KEY not in json.dumps(line) for line in lines)


def test_log_lines_carry_the_utc_time_to_the_millisecond_across_seconds() -> None:
    """The formatter reuses a second's text while records stay within it, and only then."""
    formatter = JsonLineFormatter()

    def stamp(created: float) -> str:
        record = logging.LogRecord("brave_search_mcp.calls", logging.INFO, "", 0, "tool call", None, None)
        record.created, record.msecs = created, (created - int(created)) * 1000
        return str(json.loads(formatter.format(record))["ts"])

    assert stamp(1_795_000_000.25) == "2026-11-18T11:06:40.250Z"
    assert stamp(1_795_000_000.999) == "2026-11-18T11:06:40.999Z"  # the same second, its text reused
    assert stamp(1_795_000_001.0) == "2026-11-18T11:06:41.000Z"  # the next second formatted afresh
    assert stamp(1_700_000_000.5) == "2023-11-14T22:13:20.500Z"  # and an earlier one


async def test_cache_hits_reuse_work_but_answer_each_request_exactly(fake: FakeBrave) -> None:
    config = make_settings()
    clock = FakeClock()
    async with BraveClient(config, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(config, client)
        first = await service.call("brave_web_search", {"query": "Hello World"})
        respelled = await service.call("brave_web_search", {"query": "hello   world"})
        tight = await service.call("brave_web_search", {"query": "Hello World", "max_lines": 20})
        same = await service.call("brave_web_search", {"query": "Hello World", "debug": True})
        after = await service.call("brave_web_search", {"query": "Hello World"})
    assert fake.hits("/web/search") == 1
    assert 'for "Hello World"' in first.text.splitlines()[0]
    assert 'for "hello world"' in respelled.text.splitlines()[0]
    assert respelled.structured["meta"]["query"] == "hello world"
    assert respelled.structured["meta"]["cached"] is True
    assert first.structured["meta"]["cached"] is False
    assert len({first.trace_id, respelled.trace_id, tight.trace_id, same.trace_id}) == 4
    assert respelled.structured["meta"]["trace_id"] == respelled.trace_id
    assert len(tight.text.splitlines()) <= 20
    assert "OUTPUT_TRUNCATED" in {w["code"] for w in tight.structured["warnings"]}
    assert "OUTPUT_TRUNCATED" not in {w["code"] for w in first.structured["warnings"]}
    assert same.structured["sections"] == first.structured["sections"]
    assert "request_url" not in same.structured["debug"]  # not asked for with include_request_url
    assert "debug" not in after.structured  # the debug call's additions did not leak into the shared page
    assert after.structured["warnings"] == first.structured["warnings"]
    assert after.text == first.text


async def test_a_pause_brave_demands_beyond_the_deadline_fails_fast_as_rate_limited(fake: FakeBrave) -> None:
    config = make_settings(call_deadline_seconds=30.0)
    clock = FakeClock()
    async with BraveClient(config, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        service = tool_boundary(config, client)
        fake.inject("429", retry_after=45)
        first = await service.call("brave_web_search", {"query": "asked to wait"})
        assert clock.sleeps == []  # did not sit out a wait that cannot end before the deadline
        paused = await service.call("brave_web_search", {"query": "while paused"})
        assert fake.hits("/web/search") == 1  # a call that cannot outlast the pause sends nothing
        clock.now += 46
        fake.inject("429", reset_only=True, reset=20)
        fits = await service.call("brave_web_search", {"query": "pause that fits"})
    for outcome in (first, paused):
        error = outcome.structured["error"]
        assert (error["code"], error["retryable"]) == ("RATE_LIMITED", True)
        assert 44 <= error["details"]["retry_after_seconds"] <= 45
    assert not fits.is_error  # a 20 s pause fits in the 30 s deadline: waited, retried, answered
    assert clock.sleeps[-1] == 20
    assert fake.hits("/web/search") == 3


async def test_a_key_typed_into_a_query_is_never_echoed_back(fake: FakeBrave) -> None:
    outcome = await _call(fake, "brave_web_search", {"query": f"why does {VALID_KEY} fail"})
    assert not outcome.is_error
    assert VALID_KEY not in outcome.text
    assert VALID_KEY not in json.dumps(outcome.structured)
    assert "[redacted]" in outcome.structured["meta"]["query"]
    fake.no_results_for.add(f"nothing for {VALID_KEY}")
    no_results = await _call(fake, "brave_web_search", {"query": f"nothing for {VALID_KEY}"})
    assert no_results.structured["error"]["code"] == "NO_RESULTS"
    assert VALID_KEY not in no_results.text + json.dumps(no_results.structured)


async def test_raw_payload_in_debug_data_is_capped_with_a_warning() -> None:
    results = [
        {"title": f"Result {n}", "url": f"https://example.com/{n}", "description": "x " * 2000} for n in range(20)
    ]
    body = json.dumps({"type": "search", "query": {"original": "big"}, "web": {"results": results}}).encode()
    assert len(body) > 64 * 1024

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers={"content-type": "application/json"})

    config = make_settings()
    async with BraveClient(config, transport=httpx2.MockTransport(handler)) as client:
        outcome = await tool_boundary(config, client).call(
            "brave_web_search", {"query": "big", "debug": True, "include_raw_payload": True}
        )
    debug = outcome.structured["debug"]
    assert debug["raw_payload_truncated"] is True
    assert debug["raw_payload_original_bytes"] == len(body)
    assert len(debug["raw_payload"].encode()) <= 64 * 1024
    assert "RAW_PAYLOAD_TRUNCATED" in {w["code"] for w in outcome.structured["warnings"]}
    assert len(outcome.text.encode()) < 32 * 1024 + 70 * 1024  # text within max_bytes, plus the capped debug block
