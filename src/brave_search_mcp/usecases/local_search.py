"""brave_local_search: places with address, phone, rating, readable hours and description — never a bare failure.

Two paths, chosen plainly: a location (text or coordinates) goes to ``/res/v1/local/place_search``;
a query alone goes to web search with ``result_filter=locations,web`` and enriches the location ids
through ``/local/pois`` + ``/local/descriptions`` (batches of ≤ 20 ids, at most two requests in
flight). When the plan lacks local search or nothing is found, plain web results come back with a
``LOCAL_FALLBACK`` warning; ``meta.path`` says which path answered.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

import anyio
from pydantic import AliasChoices, Field, field_validator

from brave_search_mcp.brave.arguments import Collector, Params
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.results import parse_answer
from brave_search_mcp.clock import Clock
from brave_search_mcp.models.envelopes import Result, Section, WarningItem
from brave_search_mcp.models.errors import BraveSearchError, NoResults, NotInPlan, ParseError, WarningCode
from brave_search_mcp.models.inputs import QueryInput, SafeSearch, Units, max_results_field
from brave_search_mcp.models.local import LocalEnvelope, LocalMeta, LocalPath
from brave_search_mcp.render.places_text import hours_text, is_open, render_place, render_web
from brave_search_mcp.render.text import clean_text, cut, http_url, plural, shown, site_of
from brave_search_mcp.usecases.contract import Call, CliShape, JsonFetch, Ports, ToolSpec, over_brave_json

MAX_IDS = 20  # Brave's limit per pois/descriptions request
IN_FLIGHT = 2  # batches fetched at once: enough to overlap, polite to 1-2 rps plans
DEFAULT_COUNT = 10
PLACE_MAX_COUNT = 50
WEB_MAX_COUNT = 20
FIELD_LIMIT = 200
DESCRIPTION_LIMIT = 500
_HEADING = re.compile(r"^\s*#{1,6}\s*", re.M)
_UNITS = {"miles": "mi", "mile": "mi", "mi": "mi", "kilometers": "km", "km": "km", "meters": "m", "m": "m"}


class LocalSearchArgs(QueryInput):
    """Arguments of ``brave_local_search``: what, and optionally where."""

    ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {
        "max_results": ("count",),
        "search_language": ("search_lang",),
        "safe_search": ("safesearch",),
    }

    query: str = Field(description='What to find, e.g. "coffee" or "pharmacy open now".')
    location: str | None = Field(None, description='Where, as text, e.g. "san francisco ca united states".')
    latitude: float | None = Field(None, ge=-90, le=90, description="Where, as coordinates (with longitude).")
    longitude: float | None = Field(None, ge=-180, le=180)
    radius: float | None = Field(None, gt=0, description="Search radius in metres (a bias, not a hard cut).")
    max_results: int | None = max_results_field("Places wanted (default 10).")
    country: str | None = Field(None, description="2-letter country, e.g. US.")
    search_language: str | None = Field(None, validation_alias=AliasChoices("search_language", "search_lang"))
    units: Units | None = None
    safe_search: SafeSearch | None = Field(None, validation_alias=AliasChoices("safe_search", "safesearch"))
    descriptions: bool = Field(True, description="Add Brave's place descriptions (one request per 20 places).")

    @field_validator("location")
    @classmethod
    def _location_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("location must not be empty when given")
        return value


def choose_path(args: LocalSearchArgs) -> Literal["place_search", "web_locations"]:
    """A location (text or coordinates) → place search; a query alone → web search's locations."""
    has_location = args.location is not None or args.latitude is not None
    return "place_search" if has_location else "web_locations"


def _common(args: LocalSearchArgs, out: Collector, max_count: int) -> int:
    out.send("q", out.query("query", args.query))
    count = out.clamp("max_results", args.max_results or DEFAULT_COUNT, 1, max_count) or DEFAULT_COUNT
    out.send("count", str(count))
    out.country(args.country)
    out.language(args.search_language)
    if args.units is not None:
        out.send("units", args.units)
    if args.safe_search is not None:
        out.send("safesearch", args.safe_search)
    return count


def prepare_place_search(args: LocalSearchArgs) -> tuple[Params, list[WarningItem]]:
    """Query parameters of ``/local/place_search``; coordinates win over location text (said in a warning)."""
    out = Collector()
    _common(args, out, PLACE_MAX_COUNT)
    if args.latitude is not None and args.longitude is not None:
        out.send("latitude", f"{args.latitude:.6g}")
        out.send("longitude", f"{args.longitude:.6g}")
        if args.location is not None:
            out.warn(
                WarningCode.PARAM_IGNORED,
                f"location {shown(args.location)} was not sent: latitude/longitude were given and take precedence.",
            )
    elif args.location is not None:
        out.send("location", " ".join(args.location.split())[:200])
    if args.radius is not None:
        out.send("radius", f"{args.radius:g}")
    return out.params, out.warnings


def prepare_web(
    args: LocalSearchArgs, result_filter: str, *, query: str | None = None
) -> tuple[Params, list[WarningItem]]:
    """Query parameters of web search for the locations path or the plain-web fallback."""
    out = Collector()
    if query is not None:
        args = args.model_copy(update={"query": query})
    _common(args, out, WEB_MAX_COUNT)
    out.send("result_filter", result_filter)
    return out.params, out.warnings


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _rating(raw: Any) -> tuple[str | None, float | None, int | None]:
    rating = _map(raw)
    value = _number(rating.get("ratingValue"))
    best = _number(rating.get("bestRating"))
    count = _number(rating.get("reviewCount"))
    reviews = int(count) if count is not None and count >= 0 else None
    if value is None:
        return None, None, reviews
    text = f"{value:g}/{best:g}" if best else f"{value:g}"
    if reviews is not None:
        text += f" ({reviews:,} review{'' if reviews == 1 else 's'})"
    return text, value, reviews


def _address(raw: Any) -> str | None:
    postal = _map(raw)
    display = clean_text(postal.get("displayAddress"), limit=FIELD_LIMIT)
    if display:
        return display
    region = " ".join(
        p
        for p in (clean_text(postal.get("addressRegion"), limit=60), clean_text(postal.get("postalCode"), limit=20))
        if p
    )
    parts = [
        clean_text(postal.get("streetAddress"), limit=FIELD_LIMIT),
        clean_text(postal.get("addressLocality"), limit=100),
        region,
    ]
    return ", ".join(p for p in parts if p) or None


def _distance(raw: Any) -> str | None:
    distance = _map(raw)
    value = _number(distance.get("value"))
    if value is None:
        return None
    units = clean_text(distance.get("units"), limit=20).lower()
    return f"{value:g} {_UNITS.get(units, units)}".strip()


def _description(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    return clean_text(_HEADING.sub("", raw), limit=DESCRIPTION_LIMIT) or None


def place_result(item: Mapping[str, Any], description: Any = None, *, now: datetime | None = None) -> Result | None:
    """One Brave location result as a place ``Result``: every place field readable, numbers kept beside."""
    title = clean_text(item.get("title"), limit=FIELD_LIMIT)
    if not title:
        return None
    url = http_url(item.get("url")) or http_url(item.get("provider_url")) or ""
    rating, rating_value, reviews = _rating(item.get("rating"))
    coordinates = item.get("coordinates")
    lat = lon = None
    if isinstance(coordinates, list) and len(coordinates) == 2:
        lat, lon = _number(coordinates[0]), _number(coordinates[1])
    categories = item.get("categories")
    names = [clean_text(c, limit=60) for c in categories[:5]] if isinstance(categories, list) else []
    hours = item.get("opening_hours")
    zone = item.get("timezone")
    return Result(
        title=title,
        url=url,
        snippet=_description(description) or "",
        site=site_of(url) or None,
        address=_address(item.get("postal_address")),
        phone=clean_text(_map(item.get("contact")).get("telephone"), limit=60) or None,
        rating=rating,
        rating_value=rating_value,
        review_count=reviews,
        hours=hours_text(hours),
        open_now=is_open(hours, zone if isinstance(zone, str) else None, now) if now is not None else None,
        price_range=clean_text(item.get("price_range"), limit=20) or None,
        latitude=lat,
        longitude=lon,
        distance=_distance(item.get("distance")),
        categories=[n for n in names if n] or None,
    )


def _results(data: Any) -> list[Mapping[str, Any]]:
    items = _map(data).get("results")
    return [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


def _ids(items: list[Mapping[str, Any]]) -> list[str]:
    ids = [item["id"] for item in items if isinstance(item.get("id"), str) and item["id"]]
    return list(dict.fromkeys(ids))


async def _by_id(fetch: JsonFetch, path: str, ids: list[str], deadline: float | None) -> dict[str, Mapping[str, Any]]:
    """Fetch ``path`` for ``ids`` in batches of ≤ 20, at most two in flight; results keyed by id."""
    batches = [ids[i : i + MAX_IDS] for i in range(0, len(ids), MAX_IDS)]
    found: dict[str, Mapping[str, Any]] = {}
    limiter = anyio.CapacityLimiter(IN_FLIGHT)

    failures: list[BraveSearchError] = []

    async def one(batch: list[str]) -> None:
        try:
            async with limiter:
                data = await fetch(path, [("ids", i) for i in batch], deadline=deadline)
        except BraveSearchError as exc:  # the first failure ends the others and is raised as itself
            failures.append(exc)
            group.cancel_scope.cancel()
            return
        for item in _results(data):
            if isinstance(item.get("id"), str):
                found[item["id"]] = item

    async with anyio.create_task_group() as group:
        for batch in batches:
            group.start_soon(one, batch)
    if failures:
        raise failures[0]
    return found


def _fallback_warning(reason: str) -> WarningItem:
    return WarningItem(code=WarningCode.LOCAL_FALLBACK.value, message=reason)


class _Run:
    """State of one local search: warnings in order, the clock, and the envelope at the end."""

    def __init__(self, args: LocalSearchArgs, fetch: JsonFetch, deadline: float | None, now: datetime | None) -> None:
        self.args = args
        self.fetch = fetch
        self.deadline = deadline
        self.now = now
        self.warnings: list[WarningItem] = []
        self.count = min(max(args.max_results or DEFAULT_COUNT, 1), PLACE_MAX_COUNT)

    async def descriptions(self, ids: list[str]) -> dict[str, Mapping[str, Any]]:
        if not self.args.descriptions or not ids:
            return {}
        try:
            return await _by_id(self.fetch, Endpoint.LOCAL_DESCRIPTIONS, ids, self.deadline)
        except BraveSearchError as exc:
            self.warnings.append(
                _fallback_warning(f"Place descriptions are missing ({exc.code.value}: {cut(exc.message, 120)}).")
            )
            return {}

    def places(self, items: list[Mapping[str, Any]], extra: dict[str, Mapping[str, Any]]) -> list[Result]:
        out: list[Result] = []
        for item in items[: self.count]:
            key = item.get("id")
            described = extra.get(key) if isinstance(key, str) else None
            result = place_result(item, _map(described).get("description"), now=self.now)
            if result is not None:
                out.append(result)
        return out

    async def place_search(self) -> tuple[LocalPath, list[Section]] | None:
        params, warnings = prepare_place_search(self.args)
        self.warnings += warnings
        try:
            data = await self.fetch(Endpoint.PLACE_SEARCH, params, deadline=self.deadline)
        except NotInPlan as exc:
            self.warnings.append(
                _fallback_warning(
                    f"Place search is not in this key's plan ({cut(exc.message, 120)}); showing web results instead."
                )
            )
            return None
        items = _results(data)
        places = self.places(items, await self.descriptions(_ids(items[: self.count])))
        if not places:
            self.warnings.append(
                _fallback_warning("Brave's place search found no place here; showing web results instead.")
            )
            return None
        return "place_search", [Section(key="places", label="Places", results=places)]

    async def web_locations(self) -> tuple[LocalPath, list[Section]]:
        params, warnings = prepare_web(self.args, "locations,web")
        self.warnings += warnings
        data = await self.fetch(Endpoint.WEB, params, deadline=self.deadline)
        items = _results(_map(data).get("locations"))[: self.count]
        if not items:
            self.warnings.append(
                _fallback_warning(
                    "Brave found no place for this query; showing web results instead. Add a location for place search."
                )
            )
            return "web_fallback", _web_sections(data)
        ids = _ids(items)
        try:
            pois = await _by_id(self.fetch, Endpoint.LOCAL_POIS, ids, self.deadline) if ids else {}
        except NotInPlan as exc:
            pois = {}
            self.warnings.append(
                _fallback_warning(
                    f"Place details are not in this key's plan ({cut(exc.message, 120)}); "
                    "showing web search's place summaries."
                )
            )
        merged = [pois.get(str(item.get("id")), item) for item in items]
        places = self.places(merged, await self.descriptions(ids))
        if not places:
            return "web_fallback", _web_sections(data)
        return "web_locations", [Section(key="places", label="Places", results=places)]

    async def web_fallback(self) -> tuple[LocalPath, list[Section]]:
        near = f" {' '.join(self.args.location.split())}" if self.args.location else ""
        params, _ = prepare_web(self.args, "web", query=f"{self.args.query}{near}")
        data = await self.fetch(Endpoint.WEB, params, deadline=self.deadline)
        return "web_fallback", _web_sections(data)


def _web_sections(data: Any) -> list[Section]:
    if not isinstance(data, Mapping):
        raise ParseError("Brave's web answer is not a JSON object.")
    parsed = parse_answer("web", data)
    return [section for section in parsed.sections if section.key == "web"]


_PATH_LABEL: Mapping[str, str] = {
    "place_search": "Brave place search",
    "web_locations": "Brave web search locations",
    "web_fallback": "plain web results (no place data)",
}


async def find_places(
    args: LocalSearchArgs,
    fetch: JsonFetch,
    *,
    deadline: float | None,
    trace_id: str,
    server_version: str,
    now: Callable[[], datetime] | None = None,
    clock: Clock = time.monotonic,
) -> tuple[LocalEnvelope, str]:
    """Find places for ``args`` by the path its inputs choose; fall back to web results, never to a bare failure."""
    started = clock()
    state = _Run(args, fetch, deadline, (now or (lambda: datetime.now(UTC)))())
    outcome: tuple[LocalPath, list[Section]] | None = None
    if choose_path(args) == "place_search":
        outcome = await state.place_search()
    else:
        outcome = await state.web_locations()
    if outcome is None:
        outcome = await state.web_fallback()
    path, sections = outcome
    if path == "web_fallback" and sections:
        sections = [Section(key="web", label="Web results", results=sections[0].results[: state.count])]
    results = [r for s in sections for r in s.results]
    if not results:
        raise NoResults(f'No places and no web results for "{cut(args.query, 100)}"; rephrase or broaden the query.')
    where = args.location or (f"{args.latitude:.4f},{args.longitude:.4f}" if args.latitude is not None else None)
    kind = "place" if path != "web_fallback" else "web result"
    near = f" near {cut(' '.join(where.split()), 80)}" if where else ""
    summary = f'{plural(len(results), kind)} for "{cut(args.query, 100)}"{near} via {_PATH_LABEL[path]}.'
    meta = LocalMeta(
        query=args.query,
        path=path,
        location=where,
        requested=state.count,
        returned=len(results),
        duration_ms=max(0, int((clock() - started) * 1000)),
        trace_id=trace_id,
        server_version=server_version,
    )
    envelope = LocalEnvelope(summary=summary, sections=sections, meta=meta, warnings=state.warnings)
    render = render_web if path == "web_fallback" else render_place
    lines = [summary, ""]
    for number, result in enumerate(results, 1):
        lines += [*render(number, result), ""]
    if state.warnings:
        lines += ["Warnings:", *(f"- {w.code}: {w.message}" for w in state.warnings)]
    return envelope, "\n".join(lines).rstrip("\n")


async def run(args: LocalSearchArgs, ports: Ports, call: Call) -> tuple[LocalEnvelope, str]:
    """The tool: find places through the one client, the plan figures stamped."""
    return await over_brave_json(find_places, args, ports, call)


SPEC = ToolSpec(
    name="brave_local_search",
    title="Brave local search",
    description=(
        "Places (address, phone, rating, hours, open now, price, coordinates, description). Give location or "
        "latitude/longitude for place search; a query alone uses web locations."
    ),
    help=(
        "With location text or coordinates (radius in metres) the tool calls Brave place search; with a query "
        "alone, web search's locations enriched by /local/pois and /local/descriptions (≤20 ids per request). "
        "meta.path says which: place_search, web_locations or web_fallback. Without local in the plan, or with no "
        "place found, plain web results come back with LOCAL_FALLBACK."
    ),
    guide="places with address, phone, rating and opening hours, near a location or coordinates",
    input_model=LocalSearchArgs,
    run=run,
    cli=CliShape(
        "local",
        "places: by query, near a location or coordinates",
        positional="query",
        options={"latitude": "--lat", "longitude": "--lon", "max_results": "--count"},
    ),
    library="local",
    endpoints=(Endpoint.PLACE_SEARCH, Endpoint.LOCAL_POIS, Endpoint.LOCAL_DESCRIPTIONS),
    needs_brave=True,
)
