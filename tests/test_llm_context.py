"""brave_llm_context: clamps to Brave's true limits, dedups, renders places readably, and never exceeds max_chars."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from brave_search_mcp.brave.facts import PARAM_RANGES, Endpoint
from brave_search_mcp.models import errors
from brave_search_mcp.models.errors import ErrorCode
from brave_search_mcp.models.llm_context import LlmContextEnvelope
from brave_search_mcp.usecases.llm_context import LlmContextArgs, location_headers, parse_and_render, prepare
from brave_search_mcp.usecases.llm_context import fetch_context as run
from testkit.brave.adapters import HttpUpstream
from testkit.brave.brave import FakeBrave
from testkit.brave.faults import fault_cases
from testkit.brave.routes.llm_context import context_body
from tests.fuzz.checks import examples

from .conftest import BRAVE_BODIES


@pytest.fixture
async def upstream(fake: FakeBrave) -> AsyncIterator[HttpUpstream]:
    async with httpx2.AsyncClient(base_url="http://brave.test", transport=fake.mock_transport()) as http:
        yield HttpUpstream(http)


async def ground(upstream: HttpUpstream, **args: Any) -> tuple[LlmContextEnvelope, str]:
    return await run(
        LlmContextArgs(query=args.pop("query", "rust async runtime"), **args),
        upstream.fetch,
        deadline=None,
        trace_id="trace-1",
        server_version="0.0.test",
    )


def codes(envelope: LlmContextEnvelope) -> list[str]:
    return [w.code for w in envelope.warnings]


@pytest.mark.anyio
async def test_sources_are_deduplicated_dated_and_readable(upstream: HttpUpstream) -> None:
    envelope, text = await ground(upstream)
    assert [s.url for s in envelope.sources] == [
        "https://docs.example.org/guide",
        "https://blog.example.com/posts/deep-dive",
        "https://qa.example.net/questions/42",
    ]  # the trailing-slash repeat of the guide merged into the first
    guide, blog, qa = envelope.sources
    assert guide.age == "2026-03-02 (265 days ago)" and guide.published_date == "2026-03-02"
    assert "Advanced usage covers streaming" in guide.snippets[-1]  # the repeat's passage joined its page
    assert blog.title == "A deep dive & a few pitfalls"  # entities decoded once
    assert blog.age is None
    install = "Install the tool, then run it once to create the configuration file."
    assert guide.snippets.count(install) == 1 and install not in blog.snippets  # repeated passage shown once
    assert "type: table\noption: timeout; default: 15 s\noption: retries; default: 3" in blog.snippets  # JSON table
    assert '{"type"' not in text
    assert text.startswith('3 sources of grounding context for "rust async runtime".')
    assert "[1] Guide: rust async runtime\nhttps://docs.example.org/guide\ndocs.example.org · 2026-03-02" in text
    assert envelope.meta.chars == len(text) and envelope.meta.max_chars == 8000 and codes(envelope) == []
    assert qa.site == "qa.example.net"


@pytest.mark.anyio
async def test_location_goes_in_headers_and_local_recall_renders_places(
    fake: FakeBrave, upstream: HttpUpstream
) -> None:
    envelope, text = await ground(upstream, latitude=38.7, longitude=-9.14, city="Lisboa", location_country="pt")
    sent = fake.requests[-1].headers
    assert (sent["x-loc-lat"], sent["x-loc-long"], sent["x-loc-city"], sent["x-loc-country"]) == (
        "38.7",
        "-9.14",
        "Lisboa",
        "PT",
    )
    assert [p.title for p in envelope.places] == ["Pastelaria Exemplo", "Tasca do Teste"]
    assert (
        envelope.places[0].snippet
        == "name: Pastelaria Exemplo; address: Rua de Belém 84, Lisboa; rating: 4.7; open: yes"
    )
    assert "Places:\n[P1] Pastelaria Exemplo — Pastelaria Exemplo – official site" in text
    assert '{"name"' not in text
    assert envelope.summary.startswith("3 sources and 2 places")


def test_no_location_no_headers_and_non_ascii_values_are_not_sent_as_headers() -> None:
    assert location_headers(LlmContextArgs(query="q")) == {}
    headers = location_headers(LlmContextArgs(query="q", city="Zürich", state="ZH", postal_code="8001"))
    assert headers == {"X-Loc-State": "ZH", "X-Loc-Postal-Code": "8001"}


def test_budgets_are_clamped_to_braves_true_limits_with_warnings() -> None:
    args = LlmContextArgs.model_validate(
        {
            "query": "q",
            "count": 80,
            "maximum_number_of_tokens": 100,
            "maximum_number_of_snippets": 500,
            "maximum_number_of_tokens_per_url": 9000,
            "maximum_number_of_urls": 20,
            "context_threshold_mode": "strict",
            "country": "uk",
            "search_lang": "pt_BR",
            "enable_local": False,
        }
    )
    params, warnings = prepare(args)
    assert params == [
        ("q", "q"),
        ("count", "50"),
        ("maximum_number_of_urls", "20"),
        ("maximum_number_of_tokens", "1024"),
        ("maximum_number_of_snippets", "100"),
        ("maximum_number_of_tokens_per_url", "8192"),
        ("context_threshold_mode", "strict"),
        ("country", "GB"),
        ("search_lang", "pt-br"),
        ("enable_local", "false"),
    ]
    # the same rule as web search: an alias is rewritten and said, in one message shape for every tool
    assert [w.code for w in warnings] == ["COUNT_CLAMPED"] * 4 + ["VALUE_NORMALIZED"]
    assert warnings[4].message == 'country "uk" was sent as GB.'
    assert "maximum_number_of_tokens 100 is outside Brave's 1024-32768; 1024 was sent." in warnings[1].message


@given(values=st.lists(st.integers(min_value=1, max_value=10**6), min_size=6, max_size=6))
def test_no_budget_outside_braves_range_is_ever_sent(values: list[int]) -> None:
    names = [
        "max_results",
        "maximum_number_of_urls",
        "maximum_number_of_tokens",
        "maximum_number_of_snippets",
        "maximum_number_of_tokens_per_url",
        "maximum_number_of_snippets_per_url",
    ]
    params, _ = prepare(LlmContextArgs.model_validate({"query": "q", **dict(zip(names, values, strict=True))}))
    for name, value in params[1:]:
        low, high = PARAM_RANGES[Endpoint.LLM_CONTEXT][name]
        assert low <= int(value) <= high


def test_long_query_is_cut_to_braves_limit() -> None:
    params, warnings = prepare(LlmContextArgs(query="word " * 80))
    assert len(dict(params)["q"].split()) == 50 and [w.code for w in warnings] == ["QUERY_TRUNCATED"]


def test_inputs_are_strict() -> None:
    for bad in (
        {"query": " "},
        {"query": "q", "latitude": 1.0},
        {"query": "q", "latitude": 91, "longitude": 0},
        {"query": "q", "context_threshold_mode": "loose"},
        {"query": "q", "unknown": 1},
        {"query": "q", "count": 0},
        {"query": "q", "count": 3, "max_results": 3},
    ):
        with pytest.raises(ValidationError):
            LlmContextArgs.model_validate(bad)


@pytest.mark.anyio
async def test_small_budget_cuts_whole_snippets_and_says_what(upstream: HttpUpstream) -> None:
    envelope, text = await ground(upstream, max_chars=1000)
    assert len(text) <= 1000
    assert codes(envelope) == ["CONTEXT_TRUNCATED"]
    assert "max_chars=1000" in envelope.warnings[0].message and "dropped" in envelope.warnings[0].message
    assert envelope.meta.snippets_dropped > 0
    shown = [s for source in envelope.sources for s in source.snippets]
    assert all(s in text for s in shown)  # the envelope holds exactly what the text shows
    clamped, _ = await ground(upstream, max_chars=10)
    assert codes(clamped)[0] == "OUTPUT_LIMIT_CLAMPED" and clamped.meta.max_chars == 1000


@settings(max_examples=examples(40), deadline=None)
@given(max_chars=st.integers(min_value=1000, max_value=6000), local=st.booleans(), urls=st.integers(1, 4))
def test_text_never_exceeds_max_chars(max_chars: int, local: bool, urls: int) -> None:
    body = context_body("budget " * 30, local=local, urls=urls)
    envelope, text = parse_and_render(body, max_chars, query="q", trace_id="t", server_version="v")
    assert len(text) <= max_chars
    assert envelope.meta.chars == len(text)


@pytest.mark.anyio
async def test_nothing_found_is_no_results(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.llm_context.no_context_for = {"RUST async runtime"}
    with pytest.raises(errors.NoResults):
        await ground(upstream)


def test_odd_shapes_are_skipped_or_a_parse_error() -> None:
    with pytest.raises(errors.ParseError):
        parse_and_render({"type": "search"}, 8000, query="q", trace_id="t", server_version="v")
    odd = {
        "grounding": {
            "generic": [
                None,
                {"url": "javascript:alert(1)"},
                {"url": "https://ok.example/", "snippets": [3, None, "kept"]},
            ]
        },
        "sources": [],
    }
    envelope, _ = parse_and_render(odd, 8000, query="q", trace_id="t", server_version="v")
    assert [s.url for s in envelope.sources] == ["https://ok.example/"] and envelope.sources[0].title == "ok.example"
    assert envelope.sources[0].snippets == ["kept"]


@pytest.mark.parametrize(
    ("fault", "code"),
    fault_cases(
        "400_not_in_plan",
        "403",
        "404_subscription",
        "422_token",
        "422_validation",
        "429",
        "429_quota",
        "500",
        "invalid_json",
        "refused",
    ),
)
@pytest.mark.anyio
async def test_each_brave_error_becomes_its_envelope_code(
    fake: FakeBrave, upstream: HttpUpstream, fault: str, code: ErrorCode
) -> None:
    fake.inject(fault, path="/llm/context")
    with pytest.raises(errors.BraveSearchError) as info:
        await ground(upstream)
    assert info.value.code is code


@pytest.mark.anyio
async def test_plan_control_and_fake_validation(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.plan_lacks = {"llm_context"}
    with pytest.raises(errors.NotInPlan) as info:
        await ground(upstream)
    assert info.value.details["plan_needed"] == "Search"
    fake.plan_lacks = set()
    with pytest.raises(errors.UpstreamValidation) as bad:
        await upstream.fetch("/res/v1/llm/context", [("q", "q"), ("maximum_number_of_tokens", "10")], deadline=None)
    assert bad.value.details["errors"][0]["field"] == "maximum_number_of_tokens"


@pytest.mark.anyio
async def test_deadline_and_headers_reach_the_fetch_and_a_non_object_is_a_parse_error() -> None:
    calls: list[tuple[float | None, Any]] = []

    async def fetch(path: str, params: list[tuple[str, str]], *, deadline: float | None, **kw: Any) -> Any:
        calls.append((deadline, kw.get("headers")))
        return ["not", "an", "object"]

    with pytest.raises(errors.ParseError):
        await run(LlmContextArgs(query="q"), fetch, deadline=12.5, trace_id="t", server_version="v")
    with pytest.raises(errors.ParseError):
        await run(LlmContextArgs(query="q", postal_code="1000"), fetch, deadline=None, trace_id="t", server_version="v")
    assert calls == [(12.5, None), (None, {"X-Loc-Postal-Code": "1000"})]


@pytest.mark.parametrize("name", ["llm_context.json", "llm_context_local.json", "llm_context_item.json"])
def test_documented_shapes_parse(name: str) -> None:
    body = json.loads((BRAVE_BODIES / name).read_text(encoding="utf-8"))
    envelope, text = parse_and_render(body, 8000, query="q", trace_id="t", server_version="v")
    assert envelope.sources or envelope.places
    assert "{" not in text
    grounding = body["grounding"]
    named = [item["url"] for item in grounding["generic"] + grounding["map"]] + [grounding.get("poi", {}).get("url")]
    for url in filter(None, named):
        assert url in text  # every page and place Brave grounded the answer on reaches the model
    for source in body["sources"].values():
        if source["age"]:
            assert source["age"][1] in text  # and the page's date, as Brave gives it


@pytest.mark.anyio
async def test_fake_keeps_its_other_routes(fake: FakeBrave) -> None:
    async with httpx2.AsyncClient(base_url="http://brave.test", transport=fake.mock_transport()) as http:
        token = {"X-Subscription-Token": "test-key-not-real"}
        assert (await http.get("/res/v1/web/search", params={"q": "x"}, headers=token)).status_code == 200
        assert (await http.post("/res/v1/web/search", headers=token)).status_code == 405
        assert (await http.get("/res/v1/nowhere", headers=token)).status_code == 404
        assert (await http.post("/res/v1/llm/context", headers=token)).status_code == 405
        missing = await http.get("/res/v1/llm/context", params={"q": "x"})
    assert (
        missing.status_code == 422 and missing.json()["error"]["meta"]["errors"][0]["loc"][1] == "x-subscription-token"
    )


def test_a_page_that_only_repeats_earlier_passages_is_left_out() -> None:
    body = {
        "grounding": {
            "generic": [
                {"url": "https://a.example/", "title": "A", "snippets": ["Same words, same order."]},
                {"url": "https://b.example/", "title": "B", "snippets": ["same words - same order!"]},
            ]
        }
    }
    envelope, text = parse_and_render(body, 8000, query="q", trace_id="t", server_version="v")
    assert [s.url for s in envelope.sources] == ["https://a.example/"] and "b.example" not in text


def test_every_tool_says_the_same_about_the_same_bad_country_and_language() -> None:
    """One argument collector: INVALID_COUNTRY / INVALID_SEARCH_LANGUAGE read alike whichever tool dropped them."""
    from brave_search_mcp.brave.params import prepare_search
    from brave_search_mcp.models.inputs import WebSearchArgs
    from brave_search_mcp.usecases.local_search import LocalSearchArgs, prepare_place_search
    from testkit.settings import make_settings

    bad: dict[str, Any] = {"country": "XX", "search_language": "klingon"}
    web = prepare_search(WebSearchArgs.model_validate({"query": "q", **bad}), make_settings()).warnings
    _, context = prepare(LlmContextArgs.model_validate({"query": "q", **bad}))
    _, local = prepare_place_search(LocalSearchArgs.model_validate({"query": "q", "location": "berlin", **bad}))
    said = [[(w.code, w.message) for w in warnings] for warnings in (web, context, local)]
    assert said[0] == said[1] == said[2]
    assert [code for code, _ in said[0]] == ["INVALID_COUNTRY", "INVALID_SEARCH_LANGUAGE"]
