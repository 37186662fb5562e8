"""brave_local_search: the path follows the inputs, places read like a listing, and a plan gap falls back to the web."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from pydantic import ValidationError

from brave_search_mcp.models import errors
from brave_search_mcp.models.errors import ErrorCode
from brave_search_mcp.models.local import LocalEnvelope
from brave_search_mcp.render.places_text import hours_text, is_open
from brave_search_mcp.usecases.local_search import LocalSearchArgs, choose_path, place_result, prepare_place_search
from brave_search_mcp.usecases.local_search import find_places as run
from testkit.brave.adapters import HttpUpstream
from testkit.brave.brave import FakeBrave
from testkit.brave.faults import fault_cases

from .conftest import BRAVE_BODIES

# Tuesday 2026-11-24 10:00 in Lisbon (UTC+0 in winter).
TUESDAY_MORNING = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)


@pytest.fixture
async def upstream(fake: FakeBrave) -> AsyncIterator[HttpUpstream]:
    async with httpx2.AsyncClient(base_url="http://brave.test", transport=fake.mock_transport()) as http:
        yield HttpUpstream(http)


async def find(upstream: HttpUpstream, now: datetime = TUESDAY_MORNING, **args: Any) -> tuple[LocalEnvelope, str]:
    return await run(
        LocalSearchArgs.model_validate({"query": "pastry", **args}),
        upstream.fetch,
        deadline=None,
        trace_id="trace-1",
        server_version="0.0.test",
        now=lambda: now,
    )


def paths(upstream: HttpUpstream) -> list[str]:
    return [path.rsplit("/", 1)[-1] for path, _, _ in upstream.fetched]


def codes(envelope: LocalEnvelope) -> list[str]:
    return [w.code for w in envelope.warnings]


def test_path_is_chosen_by_the_inputs() -> None:
    assert choose_path(LocalSearchArgs(query="q", location="lisbon portugal")) == "place_search"
    assert choose_path(LocalSearchArgs(query="q", latitude=1.0, longitude=2.0)) == "place_search"
    assert choose_path(LocalSearchArgs(query="q")) == "web_locations"


@pytest.mark.anyio
async def test_place_search_gives_readable_places(upstream: HttpUpstream) -> None:
    envelope, text = await find(upstream, location="lisboa portugal", radius=1500)
    assert envelope.meta.path == "place_search" and envelope.sections[0].key == "places"
    assert paths(upstream) == ["place_search", "descriptions"]
    assert ("radius", "1500") in upstream.fetched[0][1] and ("location", "lisboa portugal") in upstream.fetched[0][1]
    pastry, tasca, market = envelope.sections[0].results
    assert pastry.title == "Pastelaria Exemplo & Café"
    assert pastry.address == "Rua de Belém 84, Lisboa, 1300-085"
    assert (pastry.rating, pastry.rating_value, pastry.review_count) == ("4.7/5 (18,234 reviews)", 4.7, 18234)
    assert pastry.hours == "Mon–Fri 08:00–18:00; Sat 09:00–14:00" and pastry.open_now is True
    assert (pastry.price_range, pastry.distance, pastry.phone) == ("€", "1.2 km", "+351 21 000 0001")
    assert (pastry.latitude, pastry.longitude, pastry.categories) == (38.6977, -9.2063, ["Bakery", "Café"])
    assert pastry.url == "https://pastelaria.example.pt"
    assert pastry.snippet.startswith("About ") and "##" not in pastry.snippet
    assert tasca.rating == "4.2/5 (1 review)" and tasca.hours == "Tue–Sat 19:00–02:00" and tasca.open_now is False
    assert market.title == "Mercado Fictício" and market.url == "https://search.brave.com/local/mercado-ficticio"
    assert market.hours == "Mon–Sun open 24 hours" and market.open_now is None  # no time zone given
    assert text.splitlines()[0] == '3 places for "pastry" near lisboa portugal via Brave place search.'
    assert "   ★ 4.7/5 (18,234 reviews) · € · Bakery, Café · 1.2 km" in text
    assert "   Hours: Mon–Fri 08:00–18:00; Sat 09:00–14:00 (open now)" in text
    assert "{" not in text


@pytest.mark.anyio
async def test_coordinates_win_over_location_text(upstream: HttpUpstream) -> None:
    envelope, _ = await find(upstream, latitude=38.7, longitude=-9.1, location="lisboa", max_results=2)
    sent = dict(upstream.fetched[0][1])
    assert (sent["latitude"], sent["longitude"], sent["count"]) == ("38.7", "-9.1", "2") and "location" not in sent
    assert codes(envelope) == ["PARAM_IGNORED"] and envelope.meta.returned == 2
    assert envelope.meta.location == "lisboa"


@pytest.mark.anyio
async def test_query_alone_uses_web_locations_then_pois_and_descriptions(upstream: HttpUpstream) -> None:
    envelope, text = await find(upstream, descriptions=True)
    assert envelope.meta.path == "web_locations"
    assert paths(upstream) == ["search", "pois", "descriptions"]
    assert ("result_filter", "locations,web") in upstream.fetched[0][1]
    ids = [v for k, v in upstream.fetched[1][1] if k == "ids"]
    assert len(ids) == 2 and ids == [v for k, v in upstream.fetched[2][1] if k == "ids"]
    first = envelope.sections[0].results[0]
    assert first.title == "Async Coworking Loft" and first.phone == "+1 412-555-0134"
    assert first.distance == "0.8 mi" and first.snippet.startswith("About Async Coworking Loft")
    assert "via Brave web search locations" in text


@pytest.mark.anyio
async def test_plan_without_local_falls_back_to_web_results_with_a_warning(
    fake: FakeBrave, upstream: HttpUpstream
) -> None:
    fake.plan_lacks = {"local"}
    envelope, text = await find(upstream, location="lisboa  portugal")
    assert envelope.meta.path == "web_fallback" and envelope.sections[0].key == "web"
    assert codes(envelope) == ["LOCAL_FALLBACK"] and "not in this key's plan" in envelope.warnings[0].message
    assert paths(upstream) == ["place_search", "search"]
    assert dict(upstream.fetched[1][1])["q"] == "pastry lisboa portugal"
    assert envelope.sections[0].results and "plain web results" in text and "LOCAL_FALLBACK" in text


@pytest.mark.anyio
async def test_web_path_without_pois_in_plan_keeps_web_place_summaries(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.plan_lacks = {"local"}
    envelope, _ = await find(upstream)
    assert envelope.meta.path == "web_locations"
    assert codes(envelope) == ["LOCAL_FALLBACK", "LOCAL_FALLBACK"]  # no details, no descriptions
    assert envelope.sections[0].results[0].address == "4720 Forbes Ave, Pittsburgh, PA 15213"


@pytest.mark.anyio
async def test_no_place_found_falls_back_to_web(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.local.no_places_for = {"PASTRY"}
    envelope, _ = await find(upstream, location="lisboa")
    assert envelope.meta.path == "web_fallback" and codes(envelope) == ["LOCAL_FALLBACK"]
    assert "found no place" in envelope.warnings[0].message


@pytest.mark.anyio
async def test_web_answer_without_locations_uses_its_web_results_without_another_request() -> None:
    calls: list[str] = []

    async def fetch(path: str, params: list[tuple[str, str]], *, deadline: float | None, **kw: Any) -> dict[str, Any]:
        calls.append(path)
        return {
            "type": "search",
            "web": {"results": [{"title": "A <b>page</b>", "url": "https://a.example/", "description": "d"}]},
        }

    envelope, text = await run(LocalSearchArgs(query="q"), fetch, deadline=None, trace_id="t", server_version="v")
    assert calls == ["/res/v1/web/search"] and envelope.meta.path == "web_fallback"
    assert envelope.sections[0].results[0].title == "A page" and "1. A page\n   https://a.example/" in text


@pytest.mark.anyio
async def test_ids_go_in_batches_of_twenty_with_at_most_two_in_flight() -> None:
    locations = [{"id": f"loc{i}", "title": f"Place {i}", "url": f"https://p{i}.example/"} for i in range(45)]
    in_flight = peak = 0
    batches: list[int] = []

    async def fetch(path: str, params: list[tuple[str, str]], *, deadline: float | None, **kw: Any) -> dict[str, Any]:
        nonlocal in_flight, peak
        if path.endswith("/web/search"):
            return {"type": "search", "locations": {"results": locations}}
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        in_flight -= 1
        ids = [v for k, v in params if k == "ids"]
        batches.append(len(ids))
        if path.endswith("/pois"):
            return {"results": [{"id": i, "title": f"Detailed {i}", "url": "https://d.example/"} for i in ids]}
        return {"results": [None, *({"id": i, "description": f"about {i}"} for i in ids)]}

    envelope, _ = await run(
        LocalSearchArgs(query="q", max_results=45), fetch, deadline=None, trace_id="t", server_version="v"
    )
    assert sorted(batches) == [5, 5, 20, 20, 20, 20] and peak <= 2
    first = envelope.sections[0].results[0]
    assert first.title == "Detailed loc0" and first.snippet == "about loc0" and envelope.meta.returned == 45


@pytest.mark.parametrize(
    ("fault", "code"),
    fault_cases(
        "404_subscription", "422_token", "422_validation", "429", "429_quota", "502", "invalid_json", "refused"
    ),
)
@pytest.mark.anyio
async def test_each_brave_error_becomes_its_envelope_code(
    fake: FakeBrave, upstream: HttpUpstream, fault: str, code: ErrorCode
) -> None:
    fake.inject(fault, path="/place_search")
    with pytest.raises(errors.BraveSearchError) as info:
        await find(upstream, location="lisboa")
    assert info.value.code is code
    fake.inject(fault, path="/web/search")
    with pytest.raises(errors.BraveSearchError) as info:
        await find(upstream)
    assert info.value.code is code


@pytest.mark.parametrize("fault", ["400_not_in_plan", "403"])
@pytest.mark.anyio
async def test_plan_errors_never_fail_the_call(fake: FakeBrave, upstream: HttpUpstream, fault: str) -> None:
    fake.inject(fault, path="/place_search")
    envelope, _ = await find(upstream, location="lisboa")
    assert envelope.meta.path == "web_fallback" and codes(envelope) == ["LOCAL_FALLBACK"]


@pytest.mark.anyio
async def test_nothing_anywhere_is_no_results(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.local.no_places_for = {"nothing"}
    fake.no_results_for = {"nothing lisboa"}  # the fallback searches the query with the place
    with pytest.raises(errors.NoResults):
        await find(upstream, query="nothing", location="lisboa")


@pytest.mark.anyio
async def test_fake_validates_local_params_like_brave(upstream: HttpUpstream) -> None:
    with pytest.raises(errors.UpstreamValidation):
        await upstream.fetch("/res/v1/local/place_search", [("q", "x")], deadline=None)  # no location
    with pytest.raises(errors.UpstreamValidation):
        await upstream.fetch("/res/v1/local/pois", [("ids", str(i)) for i in range(21)], deadline=None)
    with pytest.raises(errors.UpstreamValidation):
        await upstream.fetch("/res/v1/local/place_search", [("latitude", "95"), ("longitude", "0")], deadline=None)


def test_inputs_are_strict() -> None:
    for bad in (
        {"query": ""},
        {"query": "q", "latitude": 1.0},
        {"query": "q", "longitude": 200, "latitude": 0},
        {"query": "q", "radius": 0},
        {"query": "q", "location": "  "},
        {"query": "q", "units": "parsecs"},
        {"query": "q", "near": "x"},
    ):
        with pytest.raises(ValidationError):
            LocalSearchArgs.model_validate(bad)
    params, warnings = prepare_place_search(
        LocalSearchArgs.model_validate({"query": "q", "location": "x", "count": 99})
    )
    assert ("count", "50") in params and [w.code for w in warnings] == ["COUNT_CLAMPED"]


def test_hours_text_and_open_now() -> None:
    def day(name: str, *spans: tuple[str, str]) -> list[dict[str, str]]:
        key = "full_name" if len(name) > 3 else "abbr_name"
        return [{key: name, "opens": a, "closes": b} for a, b in spans]

    split = (("09:00", "12:00"), ("14:00", "18:00"))
    week = {"days": [day("Mon", *split), day("Wed", *split), day("Thursday", *split), day("Fri", ("bad", "18:00"))]}
    assert hours_text(week) == "Mon 09:00–12:00, 14:00–18:00; Wed–Thu 09:00–12:00, 14:00–18:00"
    assert hours_text({"current_day": [{"abbr_name": "Tue", "opens": "07:00", "closes": "21:00"}]}) == "Tue 07:00–21:00"
    assert hours_text({}) is None and hours_text("9-5") is None
    monday_lunch = datetime(2026, 11, 23, 12, 30, tzinfo=UTC)
    assert is_open(week, "Europe/Lisbon", monday_lunch) is False
    assert is_open(week, "Europe/Lisbon", monday_lunch.replace(hour=15)) is True
    assert is_open(week, "Asia/Tokyo", monday_lunch.replace(hour=1)) is True  # 10:00 Monday in Tokyo
    assert is_open(week, "Europe/Lisbon", datetime(2026, 11, 24, 10, tzinfo=UTC)) is None  # Tuesday unknown
    assert is_open(week, "Not/AZone", monday_lunch) is None and is_open(week, None, monday_lunch) is None
    night = {"days": [[{"abbr_name": "Tue", "opens": "19:00", "closes": "02:00"}]]}
    assert is_open(night, "UTC", datetime(2026, 11, 24, 23, 30, tzinfo=UTC)) is True
    assert is_open(night, "UTC", datetime(2026, 11, 24, 1, 30, tzinfo=UTC)) is True  # same-day early hours
    assert is_open(night, "UTC", datetime(2026, 11, 24, 12, 0, tzinfo=UTC)) is False


@pytest.mark.parametrize("name", ["place_search.json", "local_pois.json"])
def test_documented_shapes_map_to_places(name: str) -> None:
    item = json.loads((BRAVE_BODIES / name).read_text(encoding="utf-8"))["results"][0]
    described = json.loads((BRAVE_BODIES / "local_descriptions.json").read_text(encoding="utf-8"))["results"][0]
    place = place_result(item, described["description"], now=TUESDAY_MORNING)
    assert place is not None and place.rating and place.hours
    assert place.address == item["postal_address"]["displayAddress"]
    assert place.snippet == "About Hand-painted azulejo tiles, made and fired on site"  # the markdown heading flattened


@pytest.mark.anyio
async def test_a_failing_detail_batch_raises_its_own_error_not_a_group(fake: FakeBrave, upstream: HttpUpstream) -> None:
    fake.inject("429_quota", path="/pois")
    with pytest.raises(errors.QuotaExceeded):
        await find(upstream)
