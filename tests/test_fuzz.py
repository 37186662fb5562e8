"""Fuzzing the two doors junk comes in by: tool arguments from the agent and response bodies from Brave.

Whatever arrives, a tool answers with a v1 envelope: never a protocol error, never a traceback, never an
INTERNAL_ERROR, and text within its bounds. The MCP session (or service) is opened once per test and each
hypothesis example runs in a worker thread that calls back into the event loop (``anyio.from_thread``),
so an example costs one tool call, not one server start.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx2
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp.types import CallToolResult, TextContent

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.summarizer import MAX_FOLLOWUPS, MAX_REFERENCES, MAX_TEXT_CHARS
from brave_search_mcp.config import DEBUG_PAYLOAD_CAP_BYTES, MAX_MAX_BYTES, MAX_MAX_LINES, MIN_MAX_BYTES, MIN_MAX_LINES
from brave_search_mcp.models.errors import ErrorCode
from brave_search_mcp.tools.boundary import ToolOutcome
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.in_memory import mcp_client
from testkit.settings import make_settings
from testkit.tools import tool_boundary

pytestmark = pytest.mark.anyio

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
ARGUMENT_FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=_QUIET)  # 4 tool calls each
BODY_FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=_QUIET)
CALL_LIMIT = 10.0  # seconds any single fuzzed call may take before it counts as hung
ERROR_CODES = frozenset(code.value for code in ErrorCode)

# -- strategies: agent-side junk ----------------------------------------------------------------

control_text = st.text(st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Zs"]), max_size=20)
surrogate_text = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=4)
markup_text = st.sampled_from(
    ["<b>x</b>", "&amp;&lt;&#x27;", "<script>alert(1)</script>", "\u202eevil", "\x1b[31mred", "a\r\nb", "\ufeff"]
)
huge_text = st.builds(lambda piece, n: piece * n, st.text(min_size=1, max_size=3), st.integers(2_000, 120_000))
texts = st.one_of(st.text(max_size=60), control_text, markup_text, huge_text)

TOOL_NAMES = ("brave_web_search", "brave_summarizer", "brave_web_search_help", "brave_web_search_status")


def nested(leaf: Any, depth: int, as_dict: bool) -> Any:
    """``leaf`` wrapped ``depth`` times in lists or one-key objects."""
    for _ in range(depth):
        leaf = {"k": leaf} if as_dict else [leaf]
    return leaf


def scalars(*, wild: bool) -> st.SearchStrategy[Any]:
    """JSON scalars; ``wild`` adds what only a hand-written JSON text could carry (NaN, huge ints, surrogates)."""
    options: list[st.SearchStrategy[Any]] = [
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        texts,
    ]
    if wild:
        options += [st.floats(), st.integers(-(10**40), 10**40), surrogate_text]
    return st.one_of(options)


def values(*, wild: bool, max_depth: int) -> st.SearchStrategy[Any]:
    leaf = scalars(wild=wild)
    shallow = st.recursive(
        leaf,
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
        max_leaves=8,
    )
    deep = st.builds(nested, leaf, st.integers(20, max_depth), st.booleans())
    return st.one_of(shallow, shallow, deep)


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


# -- checks -------------------------------------------------------------------------------------

# What a healthy fake upstream can legitimately answer with, per tool, for any argument object.
ALLOWED_CODES: dict[str, frozenset[str]] = {
    "brave_web_search": frozenset({"INVALID_ARGUMENT", "NO_RESULTS"}),
    "brave_summarizer": frozenset({"INVALID_ARGUMENT", "NO_RESULTS", "SUMMARY_UNAVAILABLE"}),
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
    clock = FakeClock()
    config = make_settings()
    async with BraveClient(config, transport=fake.mock_transport(), clock=clock, sleep=clock.sleep) as brave:
        service = tool_boundary(config, brave, clock=clock, sleep=clock.sleep)

        async def call(tool: str, arguments: dict[str, Any]) -> ToolOutcome:
            with anyio.fail_after(CALL_LIMIT):
                return await service.call(tool, arguments)

        @ARGUMENT_FUZZ
        @given(every_tool_arguments(wild=True, max_depth=3000))
        def every_tool(per_tool: dict[str, dict[str, Any]]) -> None:
            for tool, arguments in per_tool.items():
                outcome = anyio.from_thread.run(call, tool, arguments)
                assert outcome.tool == tool
                check_envelope(tool, arguments, outcome.structured, outcome.text, outcome.is_error)

        await in_worker(every_tool)


# -- strategies: Brave-side junk ----------------------------------------------------------------

RESULT_FIELDS = (
    "title", "description", "age", "page_age", "meta_url", "extra_snippets", "thumbnail", "video", "properties",
    "question", "answer", "data", "breaking", "source", "profile", "long_desc", "attributes", "rating", "contact",
    "postal_address", "website_url", "provider_url", "type", "subtype", "family_friendly", "is_source_local",
)  # fmt: skip
NESTED_FIELDS = (
    "hostname", "src", "original", "duration", "views", "creator", "publisher", "width", "height", "forum_name",
    "num_answers", "score", "question", "top_comment", "url", "name", "telephone", "ratingValue", "display_address",
)  # fmt: skip
URLS = ("https://a.example/x", "https://a.example/x#frag", "http://b.example/p?q=1", "https://c.example/", "ftp://d/")

json_scalars = scalars(wild=False)
json_junk = values(wild=False, max_depth=60)
field_values = st.one_of(
    json_scalars,
    st.lists(st.one_of(json_scalars, st.lists(json_scalars, max_size=3)), max_size=4),
    st.dictionaries(st.sampled_from(NESTED_FIELDS), json_scalars, max_size=5),
)


def mostly(good: st.SearchStrategy[Any], junk: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` four times in five: most examples get past the first check and reach the deeper fields."""
    return st.integers(0, 4).flatmap(lambda roll: junk if roll == 0 else good)


urls = mostly(st.one_of(st.sampled_from(URLS), st.sampled_from(URLS).map(lambda u: u + "\u00e9/<b>")), json_scalars)
small_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30), markup_text)


def brave_results(address: st.SearchStrategy[Any], fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    item = st.fixed_dictionaries({"url": address}, optional=dict.fromkeys(RESULT_FIELDS, fields))
    return mostly(item, json_scalars)


results = brave_results(urls, field_values)
# A huge list: one small result repeated (a list of distinct huge results would not fit in a response).
small_result = st.fixed_dictionaries(
    {"url": st.sampled_from(URLS)},
    optional={"title": small_scalars, "description": small_scalars, "age": small_scalars, "type": small_scalars},
)
huge_results = st.builds(lambda item, n: [item] * n, small_result, st.integers(200, 2_500))
result_lists = st.one_of(st.lists(results, max_size=8), st.lists(results, min_size=1, max_size=8), huge_results)
sections = mostly(
    st.fixed_dictionaries(
        {"results": result_lists}, optional={"type": json_scalars, "mutated_by_goggles": json_scalars}
    ),
    field_values,
)
query_objects = st.one_of(
    field_values,
    st.fixed_dictionaries(
        {},
        optional={
            "original": json_scalars,
            "altered": json_scalars,
            "more_results_available": json_scalars,
            "spellcheck_off": json_scalars,
        },
    ),
)
WEB_SECTIONS = ("web", "news", "videos", "discussions", "faq", "infobox", "locations")
ANSWER_TYPES = {"web": "search", "news": "news", "videos": "videos", "images": "images"}


@st.composite
def search_bodies(draw: st.DrawFn, search_type: str) -> Any:
    """A Brave-shaped answer for ``search_type`` with fields missing, mistyped, null, huge or hostile."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_junk)
    body: dict[str, Any] = {}
    kind = draw(st.integers(0, 7))
    if kind < 6:
        body["type"] = ANSWER_TYPES[search_type]
    elif kind == 6:
        body["type"] = draw(json_scalars)
    if draw(st.booleans()):
        body["query"] = draw(query_objects)
    if search_type == "web":
        for name in WEB_SECTIONS:
            if name == "web" or draw(st.booleans()):
                body[name] = draw(sections)
        if draw(st.booleans()):
            body["summarizer"] = draw(st.one_of(field_values, st.fixed_dictionaries({"key": json_scalars})))
        if draw(st.booleans()):
            body["mixed"] = draw(json_junk)
    else:
        body["results"] = draw(mostly(result_lists, field_values))
    return body


RAW_BODIES = (
    b"",
    b"   \n",
    b"null",
    b"[]",
    b'"a string"',
    b"12",
    b"{",
    b'{"web": {"results": [',
    b"\xff\xfe{}",
    b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark before the JSON
    b"<html><body>502 Bad Gateway</body></html>",
    b'{"web": {"results": [{"url": "https://a.example/", "title": NaN, "description": Infinity}]}}',
    b'{"web": {"results": [{"url": "https://a.example/\\ud800", "title": "t\\udfff"}]},'
    b' "query": {"altered": "\\ud800"}}',
    b'{"results": [{"url": "https://a.example/", "title": "x", "title": 5}]}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"web": {"results": [' + b"1" * 5_000 + b"]}}",  # an integer past Python's 4300-digit parsing limit
)


@st.composite
def wire_bodies(draw: st.DrawFn, search_type: str) -> tuple[bytes, bool]:
    """(body bytes as sent, gzip-encoded?) — JSON of a generated answer, or raw bytes Brave should never send."""
    roll = draw(st.integers(0, 15))
    if roll == 0:
        raw = draw(st.one_of(st.sampled_from(RAW_BODIES), st.binary(max_size=300)))
    else:
        document = draw(search_bodies(search_type))
        raw = json.dumps(document, ensure_ascii=draw(st.booleans())).encode("utf-8", errors="surrogatepass")
        if roll == 1:
            raw = raw[: draw(st.integers(0, max(0, len(raw) - 1)))]  # cut off mid-body
    zipped = draw(st.booleans())
    return (gzip.compress(raw, mtime=0) if zipped else raw), zipped


class Replay:
    """A MockTransport handler answering every request with the body under test."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.zipped = False
        self.requests = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        headers = {"Content-Type": "application/json"}
        if self.zipped:
            headers["Content-Encoding"] = "gzip"
        return httpx2.Response(200, content=self.body, headers=headers)


limits = st.tuples(st.integers(MIN_MAX_LINES, MAX_MAX_LINES), st.integers(MIN_MAX_BYTES, MAX_MAX_BYTES))


# -- body fuzzing -------------------------------------------------------------------------------


async def test_random_brave_bodies_through_the_whole_search_service() -> None:
    replay = Replay()
    clock = FakeClock()
    # No cache: every example must reach the transport and get its own body.
    config = make_settings(cache_size=0)
    cap = config.max_response_bytes
    async with BraveClient(config, transport=httpx2.MockTransport(replay), clock=clock, sleep=clock.sleep) as brave:
        service = tool_boundary(config, brave, clock=clock, sleep=clock.sleep)

        async def call(arguments: dict[str, Any]) -> ToolOutcome:
            with anyio.fail_after(CALL_LIMIT):
                return await service.call("brave_web_search", arguments)

        @BODY_FUZZ
        @given(st.data(), st.sampled_from(sorted(ANSWER_TYPES)), limits, st.booleans())
        def bodies(data: st.DataObject, search_type: str, bounds: tuple[int, int], debug: bool) -> None:
            wire, zipped = data.draw(wire_bodies(search_type))
            replay.body, replay.zipped = wire, zipped
            max_lines, max_bytes = bounds
            arguments: dict[str, Any] = {
                "query": "fuzzed answer",
                "search_type": search_type,
                "max_lines": max_lines,
                "max_bytes": max_bytes,
            }
            if debug:
                arguments |= {"debug": True, "include_raw_payload": True}
            before = replay.requests
            outcome = anyio.from_thread.run(call, arguments)
            assert replay.requests == before + 1  # 200 answers are never retried
            envelope = outcome.structured
            assert envelope["api_version"] == "v1"
            outcome.text.encode("utf-8")
            json.dumps(envelope, ensure_ascii=False).encode("utf-8")
            assert "Traceback" not in outcome.text
            if outcome.is_error:
                code = envelope["error"]["code"]
                decoded = gzip.decompress(wire) if zipped else wire
                expected = {"PARSE_ERROR", "NO_RESULTS"} | ({"RESPONSE_TOO_LARGE"} if len(decoded) > cap else set())
                assert code in expected, envelope["error"]
                assert envelope["error"]["retryable"] is False
                event(code)
                return
            event("results")
            returned = envelope["meta"]["returned"]
            assert returned == sum(len(s["results"]) for s in envelope["sections"]) > 0
            for section in envelope["sections"]:
                for result in section["results"]:
                    assert result["url"].startswith(("http://", "https://"))
                    assert result["title"]
                    assert "\n" not in result["title"] + result["snippet"]
            text = outcome.text
            if debug:
                text, _, debug_line = text.partition("\n[debug] ")
                assert debug_line
                raw = envelope["debug"]["raw_payload"]
                assert len(raw.encode("utf-8")) <= DEBUG_PAYLOAD_CAP_BYTES
            assert len(text.split("\n")) <= max_lines
            assert len(text.encode("utf-8")) <= max_bytes

        await in_worker(bodies)


plausible_messages = st.one_of(
    st.fixed_dictionaries({"type": st.just("token"), "data": texts}),
    st.fixed_dictionaries(
        {"type": st.just("inline_reference"), "data": st.fixed_dictionaries({"url": urls, "number": json_scalars})}
    ),
    st.fixed_dictionaries({"type": st.just("enum_start"), "data": st.sampled_from(["ol", "ul", None])}),
    st.fixed_dictionaries({"type": st.just("enum_end")}),
    st.fixed_dictionaries(
        {"type": st.just("enum_item"), "data": st.fixed_dictionaries({}, optional={"name": texts, "text": texts})}
    ),
)
junk_messages = st.one_of(
    st.fixed_dictionaries({"type": json_scalars}, optional={"data": field_values}),
    json_scalars,
)
summary_messages = st.lists(mostly(plausible_messages, junk_messages), max_size=30)
summarizer_bodies = mostly(
    st.fixed_dictionaries(
        {
            "status": mostly(st.sampled_from(["complete", "complete", "complete", "pending", "failed"]), json_scalars),
            "summary": mostly(summary_messages, field_values),
        },
        optional={
            "type": st.just("summarizer"),
            "title": field_values,
            "enrichments": st.one_of(
                field_values,
                st.fixed_dictionaries(
                    {}, optional={"raw": field_values, "context": st.lists(field_values, max_size=30)}
                ),
            ),
            "followups": st.one_of(st.lists(field_values, max_size=20), field_values),
            "entities_infos": st.one_of(field_values, json_junk),
        },
    ),
    json_junk,
)


async def test_random_summarizer_bodies_through_the_whole_service() -> None:
    replay = Replay()
    clock = FakeClock()
    config = make_settings(cache_size=0)
    async with BraveClient(config, transport=httpx2.MockTransport(replay), clock=clock, sleep=clock.sleep) as brave:
        service = tool_boundary(config, brave, clock=clock, sleep=clock.sleep)

        async def call(arguments: dict[str, Any]) -> ToolOutcome:
            with anyio.fail_after(CALL_LIMIT):
                return await service.call("brave_summarizer", arguments)

        @BODY_FUZZ
        @given(summarizer_bodies, st.booleans(), st.booleans())
        def bodies(document: Any, entity_info: bool, inline_references: bool) -> None:
            replay.body = json.dumps(document).encode()
            replay.zipped = False
            arguments = {"key": "fuzz-key", "entity_info": entity_info, "inline_references": inline_references}
            outcome = anyio.from_thread.run(call, arguments)
            envelope = outcome.structured
            assert envelope["api_version"] == "v1"
            outcome.text.encode("utf-8")
            assert "Traceback" not in outcome.text
            if outcome.is_error:
                code = envelope["error"]["code"]
                too_large = {"RESPONSE_TOO_LARGE"} if len(replay.body) > config.max_response_bytes else set()
                assert code in {"SUMMARY_UNAVAILABLE", "PARSE_ERROR"} | too_large, envelope["error"]
                event(code)
                return
            event("summary")
            assert envelope["summary_text"].strip()
            assert len(envelope["summary_text"]) <= MAX_TEXT_CHARS
            assert len(envelope["references"]) <= MAX_REFERENCES
            assert len(envelope["followups"]) <= MAX_FOLLOWUPS
            assert all(r["url"].startswith(("http://", "https://")) for r in envelope["references"])
            assert math.isfinite(envelope["meta"]["duration_ms"])

        await in_worker(bodies)
