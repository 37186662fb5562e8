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

from brave_search_mcp.tools.registry import all_tools
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


TOOLS = {tool.name: tool.input_model for tool in all_tools()}
TOOL_NAMES = tuple(TOOLS)

# URLs read_url refuses or cannot parse, and never fetches (the fuzz reaches no network): loopback, private,
# metadata and odd forms, other schemes, junk.
BLOCKED_URLS = (
    "http://127.0.0.1:1/page", "https://[::1]/x", "http://169.254.169.254/latest", "http://localhost./",
    "http://10.0.0.1/", "http://0.0.0.0/", "file:///etc/passwd", "ftp://127.0.0.1/x", "javascript:alert(1)",
    "not a url", "http://", "https://user:pw@127.0.0.1/", "http://2130706433/", "HTTP://LOCALHOST/x",
)  # fmt: skip

# Values each field accepts (and a few it soft-corrects), so most examples get past validation to the upstream.
_bools = st.booleans()
_counts = st.integers(0, 120)
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
    "language": st.sampled_from(["en", "de", "xx", "pt-br", ""]),
    "ui_language": st.sampled_from(["en-US", "de-DE", "xx-YY", "en-us"]),
    "ui_lang": st.sampled_from(["en-GB", "fr-FR"]),
    "safe_search": st.sampled_from(["off", "moderate", "strict"]),
    "safesearch": st.sampled_from(["off", "moderate", "strict"]),
    "units": st.sampled_from(["metric", "imperial"]),
    "freshness": st.sampled_from(["pd", "pw", "pm", "py", "2024-01-01to2024-02-01", "1w", "2024-13-01to2024-01-01"]),
    "goggles": st.lists(st.sampled_from(["https://x.example/g", "$discard\n$site=a.example", "http://x"]), max_size=4),
    "max_lines": st.integers(0, 500),
    "max_bytes": st.integers(0, 200_000),
    "max_chars": st.integers(0, 200_000),
    "start_char": st.integers(-5, 2_000_000),
    "key": st.text(min_size=1, max_size=40),
    "query": st.one_of(st.text(min_size=1, max_size=80), texts),
    "question": st.one_of(st.text(min_size=1, max_size=80), texts),
    "url": st.one_of(st.sampled_from(BLOCKED_URLS), st.text(max_size=30)),
    "urls": st.lists(st.one_of(st.sampled_from(BLOCKED_URLS), st.text(max_size=30)), max_size=7),
    "links": st.sampled_from(["same_site", "all", "none", "bogus"]),
    "render": st.sampled_from(["auto", "never", "always", "bogus"]),  # the fuzzed urls never reach a browser
    **dict.fromkeys(
        ("sites", "exclude_sites"),
        st.lists(
            st.one_of(
                st.sampled_from(["docs.python.org", "*.example.com", "a.example/docs", "https://x.example", "*"]),
                st.text(max_size=20),
            ),
            max_size=12,
        ),
    ),
    "section": st.one_of(st.text(max_size=30), texts),
    "format": st.sampled_from(["markdown", "text", "html"]),
    "deadline_seconds": st.floats(0.01, 200),
    "topic": st.sampled_from(["params", "examples", "limits", "errors", "all", "bogus"]),
    "context_threshold_mode": st.sampled_from(["strict", "balanced", "lenient", "disabled", "bogus"]),
    "latitude": st.floats(-100, 100),
    "longitude": st.floats(-200, 200),
    "radius": st.floats(-1, 200_000),
    "location": st.one_of(st.sampled_from(["Berlin", "San Francisco, CA", ""]), texts),
    "city": st.sampled_from(["Berlin", "Paris", ""]),
    "state": st.sampled_from(["CA", "BY", "x" * 40]),
    "state_name": st.sampled_from(["California", "Bavaria", ""]),
    "location_country": st.sampled_from(["US", "DE", "XX"]),
    "postal_code": st.sampled_from(["94107", "10115", "!!"]),
    **dict.fromkeys(
        (
            "maximum_number_of_urls", "maximum_number_of_tokens", "maximum_number_of_snippets",
            "maximum_number_of_tokens_per_url", "maximum_number_of_snippets_per_url",
            "research_maximum_number_of_tokens_per_query", "research_maximum_number_of_queries",
            "research_maximum_number_of_iterations", "research_maximum_number_of_seconds",
            "research_maximum_number_of_results_per_query",
        ),
        _counts,
    ),
    **dict.fromkeys(
        (
            "spellcheck", "extra_snippets", "text_decorations", "summary", "debug", "include_raw_payload",
            "include_request_url", "disable_cache", "disable_throttle", "entity_info", "inline_references",
            "probe_connectivity", "verbose", "include_limits", "enable_local", "descriptions", "research",
            "research_allow_thinking", "enable_citations",
        ),
        _bools,
    ),
}  # fmt: skip


def fields_of(model: Any) -> tuple[str, ...]:
    """A tool's argument names as an agent may spell them: its fields and their aliases."""
    aliases = [alias for names in getattr(model, "ALIASES", {}).values() for alias in names]
    return (*model.model_fields, *aliases)


TOOL_FIELDS = {tool: fields_of(model) for tool, model in TOOLS.items()}
REQUIRED: dict[str, tuple[str, ...]] = {
    tool: tuple(name for name, field in model.model_fields.items() if field.is_required())
    for tool, model in TOOLS.items()
}
REQUIRED["brave_summarizer"] = ("key", "query")  # exactly one of them
REQUIRED["read_url"] = ("url", "urls")  # exactly one of them


def test_every_argument_of_every_tool_has_plausible_values() -> None:
    """A new tool or argument cannot slip past the fuzz: every one needs values here."""
    missing = {tool: [f for f in names if f not in PLAUSIBLE] for tool, names in TOOL_FIELDS.items()}
    assert {tool: names for tool, names in missing.items() if names} == {}
    assert len(TOOL_NAMES) == 8


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
