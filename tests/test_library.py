"""``BraveSearch`` for Python callers: envelopes back, typed errors raised, one client reused."""

from __future__ import annotations

import inspect
import typing

import anyio
import pytest

from brave_search_mcp import BraveSearch, BraveSearchError, ErrorCode, SearchEnvelope
from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.compose import build_tools
from brave_search_mcp.models.errors import InvalidArgument, MissingApiKey
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.tools.registry import all_tools
from brave_search_mcp.usecases import web_search
from testkit.brave.brave import FakeBrave
from testkit.clock import FakeClock
from testkit.settings import make_settings

pytestmark = pytest.mark.anyio


async def test_web_search_returns_the_envelope_model(fake: FakeBrave) -> None:
    async with BraveSearch(settings=make_settings(), transport=fake.mock_transport()) as brave:
        result = await brave.web_search("hello world", max_results=5, search_type="news")
    assert isinstance(result, SearchEnvelope)
    assert result.meta.search_type == "news"
    assert 0 < result.meta.returned <= 5
    assert result.sections[0].results[0].url.startswith("http")


async def test_mutating_a_result_does_not_change_the_next_cached_answer(fake: FakeBrave) -> None:
    async with BraveSearch(settings=make_settings(), transport=fake.mock_transport()) as brave:
        first = await brave.web_search("shared page", result_filter=["web", "news"])
        first.sections[0].results.clear()
        first.sections[1].results[0].title = "changed"
        again = await brave.web_search("shared page", result_filter=["web", "news"])
    assert again.meta.cached is True
    assert again.sections[0].results
    assert again.sections[1].results[0].title != "changed"
    assert fake.hits("/web/search") == 1


async def test_explicit_key_overrides_the_environment(fake: FakeBrave) -> None:
    settings = make_settings(api_key=None, api_key_source=None)
    async with BraveSearch("test-key-not-real", settings=settings, transport=fake.mock_transport()) as brave:
        assert (await brave.web_search("q")).meta.returned > 0


async def test_errors_are_raised_typed(fake: FakeBrave) -> None:
    settings = make_settings(api_key=None, api_key_source=None)
    async with BraveSearch(settings=settings, transport=fake.mock_transport()) as brave:
        with pytest.raises(MissingApiKey):
            await brave.web_search("q")
    async with BraveSearch(settings=make_settings(), transport=fake.mock_transport()) as brave:
        with pytest.raises(InvalidArgument) as info:
            await brave.web_search("q", bogus=True)
        assert info.value.details["field"] == "bogus"
        fake.inject("429_quota")
        with pytest.raises(BraveSearchError) as quota:
            await brave.web_search("quota")
        assert quota.value.code is ErrorCode.QUOTA_EXCEEDED


async def test_five_identical_concurrent_calls_reach_the_upstream_once(fake: FakeBrave) -> None:
    async with BraveSearch(settings=make_settings(), transport=fake.mock_transport()) as brave:
        results: list[SearchEnvelope] = []

        async def one() -> None:
            results.append(await brave.web_search("Same   Query"))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(one)
    assert len(results) == 5
    assert fake.hits("/web/search") == 1


async def test_summarize_and_status(fake: FakeBrave) -> None:
    async with BraveSearch(settings=make_settings(), transport=fake.mock_transport()) as brave:
        summary = await brave.summarize("what is mcp")
        assert summary.summary_text
        report = await brave.status()
        assert report["status"] == "ok"


async def test_use_outside_the_context_manager_is_a_clear_error() -> None:
    brave = BraveSearch(settings=make_settings())
    with pytest.raises(RuntimeError, match="async with"):
        await brave.web_search("q")


async def test_ten_concurrent_calls_at_one_request_per_second_all_succeed_without_429() -> None:
    clock = FakeClock()
    upstream = FakeBrave(rate_per_second=1, clock=clock)
    settings = make_settings(rate_limit=None, burst=None)  # adaptive: one request alone teaches the 1/s plan
    async with BraveClient(settings, transport=upstream.mock_transport(), clock=clock, sleep=clock.sleep) as client:
        tools = build_tools(settings, client, clock=clock, sleep=clock.sleep)
        outcomes: list[bool] = []

        async def one(n: int) -> None:
            envelope, _ = await tools.execute(web_search.SPEC, WebSearchArgs(query=f"distinct query {n}"))
            outcomes.append(envelope.meta.returned > 0)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for n in range(10):
                    tg.start_soon(one, n)
    assert outcomes == [True] * 10
    assert upstream.rate_limited_count == 0
    assert upstream.hits("/web/search") == 10


def test_every_tool_has_a_typed_library_method_that_matches_its_spec() -> None:
    for spec in all_tools():
        method = getattr(BraveSearch, spec.library)
        assert inspect.iscoroutinefunction(method), spec.name
        parameters = list(inspect.signature(method).parameters.values())[1:]
        if spec.cli.positional is not None:
            assert parameters[0].name == spec.cli.positional, spec.name
        named = {p.name for p in parameters if p.kind is not p.VAR_KEYWORD}
        assert named <= set(spec.input_model.model_fields) | {"progress"}, spec.name
        takes_more = any(p.kind is p.VAR_KEYWORD for p in parameters)
        assert takes_more or set(spec.input_model.model_fields) <= named | set(_HIDDEN.get(spec.name, ())), spec.name
        returned = typing.get_args(typing.get_type_hints(spec.run)["return"])[0]
        assert typing.get_type_hints(method)["return"] == returned, spec.name


# Fields a typed wrapper leaves out on purpose.
_HIDDEN = {"brave_web_search_status": ("include_limits",)}
