"""Every tool's published schema and its validator agree: a wrong-typed value is refused naming the field,
the type expected and the type received, never coerced (``"true"`` must not turn on a probe)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from brave_search_mcp import BraveSearch
from brave_search_mcp.faces.mcp_server import compact_schema
from brave_search_mcp.models.errors import InvalidArgument
from brave_search_mcp.tools.boundary import ToolBoundary
from brave_search_mcp.tools.registry import all_tools, enabled_tools
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio

# For each JSON type a schema may declare, values of other types a careless client sends.
WRONG: dict[str, list[Any]] = {
    "integer": ["5", True, 5.5, [5]],
    "number": ["5", True, [1.0]],
    "boolean": ["true", 1, "yes", None],
    "string": [5, True, ["text"], {"a": 1}],
    "array": ["web,news", 5, {"a": 1}],
}
JSON_NAMES = {"integer": "integer", "number": "number", "boolean": "boolean", "string": "string", "array": "array"}
BASE: dict[str, dict[str, Any]] = {
    "brave_web_search": {"query": "q"},
    "brave_summarizer": {"query": "q"},
    "brave_llm_context": {"query": "q"},
    "brave_local_search": {"query": "q"},
    "brave_answer": {"question": "q"},
    "brave_web_search_help": {},
    "brave_web_search_status": {},
    "read_url": {"url": "https://example.com/"},
}


def _cases() -> list[tuple[str, str, str, Any]]:
    cases: list[tuple[str, str, str, Any]] = []
    for tool in all_tools():
        schema = compact_schema(tool.input_model)
        required = set(schema.get("required", []))
        for field, prop in schema["properties"].items():
            kinds = {prop["type"]} if "type" in prop else {p.get("type") for p in prop.get("anyOf", [])}
            kind = next((k for k in kinds if k in WRONG), None)
            if kind is None:
                continue  # enums and literals are checked by value elsewhere
            optional = field not in required
            cases.extend(
                (tool.name, field, kind, value) for value in WRONG[kind] if not _allowed(kinds, value, optional)
            )
    return cases


def _allowed(kinds: set[str | None], value: Any, optional: bool) -> bool:
    """Whether the contract admits ``value``: JSON integers are numbers, and for an optional field ``null``
    means "not given" (the compact schema leaves the null out to save the model's context)."""
    if value is None:
        return optional or "null" in kinds
    return "number" in kinds and isinstance(value, int) and not isinstance(value, bool)


def test_every_tool_has_typed_fields_to_check() -> None:
    tools = {tool for tool, *_ in _cases()}
    assert tools == {tool.name for tool in all_tools()}


@pytest.mark.parametrize(("tool", "field", "kind", "value"), _cases())
async def test_a_wrong_typed_value_is_refused_naming_field_expected_and_received(
    tool: str, field: str, kind: str, value: Any
) -> None:
    fake, clock = FakeBrave(rate_per_second=1000), FakeClock()
    settings = make_settings()
    from brave_search_mcp.brave.client import BraveClient

    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        boundary: ToolBoundary = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        assert tool in {t.name for t in enabled_tools(settings)}
        outcome = await boundary.call(tool, {**BASE[tool], field: value})
    assert outcome.is_error, (tool, field, value)
    error = outcome.structured["error"]
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["details"]["field"] == field
    assert f"expected {JSON_NAMES[kind]}" in error["message"] or "Input should be" in error["message"]
    assert fake.requests == []  # refused before anything was sent


@pytest.mark.parametrize(("tool", "field"), [("brave_summarizer", "key"), ("brave_web_search", "goggles")])
async def test_a_lone_surrogate_is_dropped_like_in_a_query_never_an_internal_error(tool: str, field: str) -> None:
    fake, clock = FakeBrave(rate_per_second=1000), FakeClock()
    settings = make_settings()
    from brave_search_mcp.brave.client import BraveClient

    value: Any = ["\ud800https://example.com/goggle"] if field == "goggles" else "\ud800not-a-key"
    arguments = {field: value} if tool == "brave_summarizer" else {**BASE[tool], field: value}
    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        outcome = await tool_boundary(settings, client, clock=clock, sleep=clock.sleep).call(tool, arguments)
    assert outcome.structured.get("error", {}).get("code") != "INTERNAL_ERROR", outcome.structured
    sent = [value for request in fake.requests for _, value in request.params]
    assert sent and not [v for v in sent if "\ud800" in v]  # what was sent is text, without the surrogate


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"key": "a-summarizer-key", "query": "   "}, "query: query must not be empty"),
        ({"query": " \t"}, "query: query must not be empty"),
        ({"key": " "}, "key: key must not be empty"),
        ({}, "give exactly one of key or query"),
        ({"key": "a-summarizer-key", "query": "q"}, "give exactly one of key or query"),
    ],
)
async def test_a_blank_summarizer_source_is_refused_like_a_blank_query_elsewhere(
    arguments: dict[str, Any], message: str
) -> None:
    fake, clock = FakeBrave(rate_per_second=1000), FakeClock()
    settings = make_settings()
    from brave_search_mcp.brave.client import BraveClient

    async with BraveClient(settings, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        boundary = tool_boundary(settings, client, clock=clock, sleep=clock.sleep)
        outcome = await boundary.call("brave_summarizer", arguments)
        blank_search = await boundary.call("brave_web_search", {"query": "  "})
    assert outcome.structured["error"]["code"] == "INVALID_ARGUMENT", outcome.structured
    assert outcome.text.startswith(f"INVALID_ARGUMENT: Invalid arguments: {message}.")
    assert "query: query must not be empty" in blank_search.text  # the words the summarizer now shares
    assert fake.requests == []
    async with BraveSearch(settings=settings, transport=fake.mock_transport()) as library:
        with pytest.raises(InvalidArgument, match=message):  # a BraveSearchError, not pydantic's own
            await library.summarize(arguments.get("query"), key=arguments.get("key"))


@pytest.mark.parametrize(
    ("key", "why"), [("BSA\u200bkey", "non-ASCII"), ("\u201cBSAkey\u201d", "non-ASCII"), ("BSA key", "white space")]
)
def test_a_key_that_cannot_be_sent_stops_the_cli_and_the_server_at_start(key: str, why: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAVE")}
    env["BRAVE_API_KEY"] = key
    for argv in (["search", "anything"], []):  # the CLI, then the server itself
        done = subprocess.run(
            [sys.executable, "-m", "brave_search_mcp", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2, done.stderr
        assert "BRAVE_API_KEY" in done.stderr and why in done.stderr
        assert key not in done.stderr + done.stdout
