"""What every fuzzed call must answer: a v1 envelope with an allowed code and clean text; the fuzz settings."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx2
from hypothesis import HealthCheck, event, settings
from mcp.types import CallToolResult, TextContent

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.config import Settings
from brave_search_mcp.models.errors import ErrorCode
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from testkit.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]


def examples(count: int) -> int:
    """A test's example count scaled by the profile: as written by default, ten times that under ``deep``
    (whose ``max_examples`` is 1000 against Hypothesis' 100; see ``tests/conftest.py``)."""
    return count * max(1, settings().max_examples // 100)  # settings(): the profile loaded now


ARGUMENT_FUZZ = settings(max_examples=examples(100), deadline=None, suppress_health_check=_QUIET)  # 8 calls each
BODY_FUZZ = settings(max_examples=examples(200), deadline=None, suppress_health_check=_QUIET)
CALL_LIMIT = 10.0  # seconds any single fuzzed call may take before it counts as hung
ERROR_CODES = frozenset(code.value for code in ErrorCode)


# -- checks -------------------------------------------------------------------------------------

# What a healthy fake upstream can legitimately answer with, per tool, for any argument object.
ALLOWED_CODES: dict[str, frozenset[str]] = {
    "brave_web_search": frozenset({"INVALID_ARGUMENT", "NO_RESULTS"}),
    "brave_summarizer": frozenset({"INVALID_ARGUMENT", "NO_RESULTS", "SUMMARY_UNAVAILABLE"}),
    "brave_llm_context": frozenset({"INVALID_ARGUMENT", "NO_RESULTS"}),
    "brave_local_search": frozenset({"INVALID_ARGUMENT", "NO_RESULTS"}),
    "brave_answer": frozenset({"INVALID_ARGUMENT"}),
    "read_url": frozenset({"INVALID_ARGUMENT", "FETCH_BLOCKED"}),  # the fuzz's URLs are never fetched
    "brave_web_search_help": frozenset({"INVALID_ARGUMENT"}),
    "brave_web_search_status": frozenset({"INVALID_ARGUMENT"}),
}


def allowed_codes(tool: str, arguments: dict[str, Any]) -> frozenset[str]:
    allowed = ALLOWED_CODES[tool]
    if tool == "brave_summarizer" and "key" in arguments:
        allowed |= {"UPSTREAM_VALIDATION"}  # a made-up summarizer key is Brave's to reject
    return allowed


def check_envelope(tool: str, arguments: dict[str, Any], structured: dict[str, Any], text: str, is_error: bool) -> None:
    """The common promise: a v1 envelope, readable text, valid UTF-8, no internals."""
    assert structured["api_version"] == "v1"
    assert "Traceback" not in text
    assert 'File "' not in text
    text.encode("utf-8")  # no lone surrogates: stdout must stay valid UTF-8
    json.dumps(structured, ensure_ascii=False).encode("utf-8")
    if is_error:
        error = structured["error"]
        assert error["code"] in ERROR_CODES
        assert error["code"] in allowed_codes(tool, arguments), (tool, error)
        assert isinstance(error["retryable"], bool)
        assert text.startswith(error["code"])
        event(f"{tool}: {error['code']}")
    else:
        assert "error" not in structured
        event(f"{tool}: ok")
        if tool == "brave_web_search_status" and structured.get("probe") is not None:
            assert structured["status"] == "ok"


def check_mcp_result(tool: str, arguments: dict[str, Any], result: CallToolResult) -> None:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert result.structured_content is not None
    check_envelope(tool, arguments, result.structured_content, block.text, result.is_error)


def healthy_fake() -> FakeBrave:
    return FakeBrave(rate_per_second=1_000_000, monthly_limit=0, summarizer_pending_polls=0)


async def in_worker(example_runner: Callable[[], None]) -> None:
    """Run a hypothesis test in a worker thread, so its examples can call back into this event loop."""
    await anyio.to_thread.run_sync(example_runner)


@dataclass(frozen=True)
class Boundary:
    """The tool boundary under fuzz and the settings it was built with."""

    settings: Settings
    service: ToolBoundary

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        """One tool call, which counts as hung after ``CALL_LIMIT`` seconds."""
        with anyio.fail_after(CALL_LIMIT):
            return await self.service.call(tool, arguments)


@asynccontextmanager
async def fuzzed_boundary(transport: httpx2.AsyncBaseTransport, **overrides: Any) -> AsyncIterator[Boundary]:
    """The enabled tools over a BraveClient on ``transport``, on a fake clock, with ``make_settings(**overrides)``."""
    clock = FakeClock()
    config = make_settings(**overrides)
    async with BraveClient(config, transport=transport, clock=clock, sleep=clock.sleep) as brave:
        yield Boundary(config, tool_boundary(config, brave, clock=clock, sleep=clock.sleep))
