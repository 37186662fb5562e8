"""The API key travels only in the X-Subscription-Token header: never in tool output, a log line or a file.

A distinctive fake key (which the fake Brave accepts) is run through every tool and every error path, twice:
in memory through the MCP client with every logger at DEBUG (caplog), and as the real stdio subprocess with
temporary HOME, TMPDIR and working directory, its stderr captured and every file under those directories read
afterwards. Each run also proves it exercised what it claims (DEBUG lines present, every expected code seen),
so an empty log cannot pass for a clean one.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx2
import pytest
from mcp.types import TextContent
from pydantic import SecretStr

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.logs import JsonLineFormatter
from testkit.brave.http_server import FakeBraveServer
from testkit.clock import FakeClock
from testkit.in_memory import mcp_client
from testkit.settings import make_settings
from testkit.tools import tool_boundary
from tests.leak_scenario import CALL_LIMIT, EXPECTED_CODES, KEY, RETRIES, assert_no_key, fake_brave, run_scenario

pytestmark = pytest.mark.anyio


# -- in memory, every logger at DEBUG ------------------------------------------------------------

LOGGERS = ("", "brave_search_mcp", "httpx2", "httpcore", "mcp", "tests", "asyncio")


def assert_logs_clean(caplog: pytest.LogCaptureFixture) -> None:
    formatter = JsonLineFormatter()
    for record in caplog.records:
        where = f"log record {record.name}:{record.lineno}"
        assert_no_key(record.getMessage(), where)
        assert_no_key(formatter.format(record), where)
        assert_no_key(repr(vars(record)), where)
        if record.exc_info:
            assert_no_key(formatter.formatException(record.exc_info), where)
    assert_no_key(caplog.text, "the captured log text")


@pytest.mark.parametrize("face", ["mock", "server"])
async def test_no_key_in_tool_output_or_logs_in_memory(face: str, caplog: pytest.LogCaptureFixture) -> None:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    fake = fake_brave()
    with FakeBraveServer(fake) as server:
        overrides: dict[str, Any] = {
            "api_key": SecretStr(KEY),
            "retries": RETRIES,
            "timeout_seconds": 0.2,
            "call_deadline_seconds": 5.0,
            "max_response_bytes": 64 * 1024,
            "summarizer_deadline_seconds": 1.0,
        }
        if face == "server":
            overrides["base_url"] = server.base_url
        settings = make_settings(**overrides)
        transport = fake.mock_transport() if face == "mock" else None
        async with (
            mcp_client(settings, transport) as (mcp, _clock),
        ):

            async def call(tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
                with anyio.fail_after(CALL_LIMIT):
                    result = await mcp.call_tool(tool, arguments)
                block = result.content[0]
                assert isinstance(block, TextContent)
                assert result.structured_content is not None
                return result.structured_content, block.text

            seen = await run_scenario(fake, call)
    assert seen.codes >= EXPECTED_CODES, EXPECTED_CODES - seen.codes
    for output in seen.outputs:
        assert_no_key(output, "a tool result")
    # The run really logged at DEBUG: one line per attempt from the client, one per call from the service.
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("brave request endpoint=") for m in messages)
    assert sum(m == "tool call" for m in messages) >= len(seen.outputs) // 2
    assert_logs_clean(caplog)


# -- an upstream (or proxy) that echoes the key back ---------------------------------------------


def _error_json(status: int, code: str, detail: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "ErrorResponse",
        "error": {"id": "e", "status": status, "code": code, "detail": detail, "meta": meta},
    }


def echoing_replies(token: str) -> dict[str, httpx2.Response]:
    """Error answers that repeat the token wherever Brave's error shapes have room for text."""
    return {
        "validation": httpx2.Response(
            422,
            json=_error_json(
                422,
                "VALIDATION",
                f"bad {token}",
                {"errors": [{"loc": ["query", token], "msg": f"no {token}", "input": token}], "component": token},
            ),
        ),
        "rate-limited": httpx2.Response(
            429, json=_error_json(429, "RATE_LIMITED", f"slow {token}", {"plan": token}), headers={"Retry-After": token}
        ),
        "quota": httpx2.Response(429, json=_error_json(429, "QUOTA_LIMITED", f"quota {token}", {"plan": token})),
        "token-invalid": httpx2.Response(
            422, json=_error_json(422, "SUBSCRIPTION_TOKEN_INVALID", f"token {token} is invalid", {"plan": token})
        ),
        "not-in-plan": httpx2.Response(400, json=_error_json(400, "OPTION_NOT_IN_PLAN", token, {"plan": token})),
        "plain-500": httpx2.Response(500, text=f"upstream said {token}"),
        "proxy-403": httpx2.Response(403, text=f"<html><p>blocked {token}</p></html>"),
        "bad-json-200": httpx2.Response(200, text=f'{{"type": "search", "echo": "{token}"'),
        "unknown-error-json": httpx2.Response(418, json=_error_json(418, "TEAPOT", token, {"component": token})),
    }


@pytest.mark.parametrize("reply", sorted(echoing_replies("x")))
@pytest.mark.parametrize("tool", ["brave_web_search", "brave_summarizer"])
async def test_an_upstream_echoing_the_key_does_not_leak_it(
    reply: str, tool: str, caplog: pytest.LogCaptureFixture
) -> None:
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return echoing_replies(request.headers["x-subscription-token"])[reply]

    settings = make_settings(api_key=SecretStr(KEY), retries=RETRIES)
    clock = FakeClock()
    async with BraveClient(settings, transport=httpx2.MockTransport(handler), clock=clock, sleep=clock.sleep) as brave:
        service = tool_boundary(settings, brave, clock=clock, sleep=clock.sleep)
        arguments = {"query": "echo"} if tool == "brave_web_search" else {"key": "echo"}
        with anyio.fail_after(CALL_LIMIT):
            outcome = await service.call(tool, arguments)
    assert outcome.is_error
    assert_no_key(outcome.text, "the tool's text")
    assert_no_key(json.dumps(outcome.structured, ensure_ascii=False), "the tool's envelope")
    assert_logs_clean(caplog)


async def test_an_upstream_echoing_the_key_as_its_error_code_does_not_leak_it() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        token = request.headers["x-subscription-token"]
        return httpx2.Response(401, json=_error_json(401, token, "unauthorized", {}))

    settings = make_settings(api_key=SecretStr(KEY), retries=0)
    clock = FakeClock()
    async with BraveClient(settings, transport=httpx2.MockTransport(handler), clock=clock, sleep=clock.sleep) as brave:
        outcome = await tool_boundary(settings, brave, clock=clock, sleep=clock.sleep).call(
            "brave_web_search", {"query": "echo"}
        )
    assert outcome.structured["error"]["code"] == "AUTH_FAILED"
    assert_no_key(outcome.text, "the tool's text")
    assert_no_key(json.dumps(outcome.structured), "the tool's envelope")
