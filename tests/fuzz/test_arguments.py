"""Fuzzing the agent's door: random and wild tool arguments, through the MCP client and the tool boundary.

Any argument object gets a v1 envelope: never a protocol error, a traceback or INTERNAL_ERROR.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import CallToolResult

from testkit.in_memory import mcp_client
from testkit.settings import make_settings
from tests.fuzz.checks import (
    ARGUMENT_FUZZ,
    CALL_LIMIT,
    check_envelope,
    check_mcp_result,
    fuzzed_boundary,
    healthy_fake,
    in_worker,
)
from tests.fuzz.strategies import surrogate_text, texts, values

pytestmark = pytest.mark.anyio


TOOL_NAMES = ("brave_web_search", "brave_summarizer", "brave_web_search_help", "brave_web_search_status")


# Values each field accepts (and a few it soft-corrects), so most examples get past validation to the upstream.
_bools = st.booleans()
PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "search_type": st.sampled_from(["web", "news", "images", "videos"]),
    "result_filter": st.one_of(
        st.lists(st.sampled_from(["web", "news", "faq", "discussions", "videos", "infobox", "bogus"]), max_size=4),
        st.just("web,discussions"),
    ),
    "max_results": st.integers(1, 250),
    "count": st.integers(1, 250),
    "offset": st.integers(0, 12),
    "country": st.sampled_from(["US", "de", "ALL", "XX", "gb", ""]),
    "search_language": st.sampled_from(["en", "zh-hant", "de", "xx", "EN"]),
    "search_lang": st.sampled_from(["en", "jp", "pt-br"]),
    "ui_language": st.sampled_from(["en-US", "de-DE", "xx-YY", "en-us"]),
    "ui_lang": st.sampled_from(["en-GB", "fr-FR"]),
    "safe_search": st.sampled_from(["off", "moderate", "strict"]),
    "safesearch": st.sampled_from(["off", "moderate", "strict"]),
    "units": st.sampled_from(["metric", "imperial"]),
    "freshness": st.sampled_from(["pd", "pw", "pm", "py", "2024-01-01to2024-02-01", "1w", "2024-13-01to2024-01-01"]),
    "goggles": st.lists(st.sampled_from(["https://x.example/g", "$discard\n$site=a.example", "http://x"]), max_size=4),
    "max_lines": st.integers(0, 500),
    "max_bytes": st.integers(0, 200_000),
    "key": st.text(min_size=1, max_size=40),
    "query": st.one_of(st.text(min_size=1, max_size=80), texts),
    "deadline_seconds": st.floats(0.01, 200),
    "topic": st.sampled_from(["params", "examples", "limits", "errors", "all", "bogus"]),
    **dict.fromkeys(
        (
            "spellcheck", "extra_snippets", "text_decorations", "summary", "debug", "include_raw_payload",
            "include_request_url", "disable_cache", "disable_throttle", "entity_info", "inline_references",
            "probe_connectivity", "verbose", "include_limits",
        ),
        _bools,
    ),
}  # fmt: skip
TOOL_FIELDS: dict[str, tuple[str, ...]] = {
    "brave_web_search": (
        "search_type", "result_filter", "max_results", "count", "offset", "country", "search_language",
        "search_lang", "ui_language", "ui_lang", "safe_search", "safesearch", "units", "freshness", "spellcheck",
        "extra_snippets", "text_decorations", "goggles", "summary", "max_lines", "max_bytes", "debug",
        "include_raw_payload", "include_request_url", "disable_cache", "disable_throttle",
    ),
    "brave_summarizer": (
        "entity_info", "inline_references", "country", "search_language", "search_lang", "deadline_seconds",
    ),
    "brave_web_search_help": ("topic",),
    "brave_web_search_status": ("probe_connectivity", "verbose", "include_limits"),
}  # fmt: skip
REQUIRED: dict[str, tuple[str, ...]] = {
    "brave_web_search": ("query",),
    "brave_summarizer": ("key", "query"),  # exactly one of them
    "brave_web_search_help": (),
    "brave_web_search_status": (),
}


def tool_arguments(tool: str, *, wild: bool, max_depth: int) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for ``tool``: a few of its fields, each plausible four times in five, else any junk at all."""
    junk = values(wild=wild, max_depth=max_depth)
    keys = st.one_of(st.text(max_size=12), st.text(max_size=12), surrogate_text) if wild else st.text(max_size=12)

    def field_value(name: str) -> st.SearchStrategy[Any]:
        return st.integers(0, 4).flatmap(lambda roll: junk if roll == 0 else PLAUSIBLE[name])

    def pick(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries({name: field_value(name) for name in names})

    optional = st.lists(st.sampled_from(TOOL_FIELDS[tool]), max_size=4, unique=True).flatmap(pick)
    required = REQUIRED[tool]
    if required:
        source = st.sampled_from(required).flatmap(lambda name: pick([name]))
        typical = st.builds(lambda head, rest: {**head, **rest}, source, optional)
    else:
        typical = optional
    with_extra = st.builds(lambda args, extra: {**args, **extra}, typical, st.dictionaries(keys, junk, max_size=2))
    anything = st.dictionaries(keys, junk, max_size=4)
    return st.one_of(typical, typical, typical, typical, with_extra, anything)


def every_tool_arguments(*, wild: bool, max_depth: int) -> st.SearchStrategy[dict[str, dict[str, Any]]]:
    """One argument object per tool."""
    return st.fixed_dictionaries({tool: tool_arguments(tool, wild=wild, max_depth=max_depth) for tool in TOOL_NAMES})


# -- argument fuzzing ---------------------------------------------------------------------------


async def test_random_arguments_through_the_mcp_client_always_get_an_envelope() -> None:
    fake = healthy_fake()
    config = make_settings()
    async with (
        mcp_client(config, fake.mock_transport()) as (mcp, _clock),
    ):

        async def call(tool: str, arguments: dict[str, Any]) -> CallToolResult:
            with anyio.fail_after(CALL_LIMIT):
                return await mcp.call_tool(tool, arguments)

        # Nesting stays under ~250 levels: deeper, the SDK client itself refuses to serialize the request.
        @ARGUMENT_FUZZ
        @given(every_tool_arguments(wild=False, max_depth=120))
        def every_tool(per_tool: dict[str, dict[str, Any]]) -> None:
            for tool, arguments in per_tool.items():
                result = anyio.from_thread.run(call, tool, arguments)
                check_mcp_result(tool, arguments, result)

        await in_worker(every_tool)
        # After all that, the server still answers a plain call correctly.
        after = await call("brave_web_search", {"query": "still alive"})
        assert not after.is_error
        assert after.structured_content is not None
        assert after.structured_content["meta"]["returned"] > 0


async def test_wild_arguments_at_the_tool_boundary_always_get_an_envelope() -> None:
    """What only a hand-written JSON text can carry (NaN, 40-digit ints, lone surrogates, 3000-deep nesting)."""
    fake = healthy_fake()
    async with fuzzed_boundary(fake.mock_transport()) as boundary:

        @ARGUMENT_FUZZ
        @given(every_tool_arguments(wild=True, max_depth=3000))
        def every_tool(per_tool: dict[str, dict[str, Any]]) -> None:
            for tool, arguments in per_tool.items():
                outcome = anyio.from_thread.run(boundary.call, tool, arguments)
                assert outcome.tool == tool
                check_envelope(tool, arguments, outcome.structured, outcome.text, outcome.is_error)

        await in_worker(every_tool)
