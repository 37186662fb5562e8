"""The local endpoints: place search by name and area, then points of interest and descriptions by id."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testkit.brave.errors import field_error
from testkit.brave.exchange import Exchange
from testkit.brave.params import folded_in
from testkit.brave.reply import Reply

from .local_data import place_items, web_locations
from .query_params import Allowed, check_query_params, q_error

PLACE_PATH = "/res/v1/local/place_search"
POIS_PATH = "/res/v1/local/pois"
DESCRIPTIONS_PATH = "/res/v1/local/descriptions"
_PLACE_PARAMS: Allowed = {
    "q": None, "latitude": None, "longitude": None, "location": None, "radius": None, "count": (1, 50),
    "country": None, "search_lang": None, "ui_lang": None, "units": None, "safesearch": None, "spellcheck": None,
    "geoloc": None,
}  # fmt: skip
_POIS_PARAMS: Allowed = {"ids": None, "search_lang": None, "ui_lang": None, "units": None}
_DESCRIPTIONS_PARAMS: Allowed = {"ids": None}


class LocalRoute:
    """The three local paths; a key without the "local" feature gets 400 OPTION_NOT_IN_PLAN."""

    paths = (PLACE_PATH, POIS_PATH, DESCRIPTIONS_PATH)
    methods: frozenset[str] | None = None  # the plan is checked before the method, as on Brave's newer endpoints
    bearer = False

    def __init__(self) -> None:
        self.no_places_for: set[str] = set()  # place-search queries answered with no result (compared folded)
        self._places = place_items()
        self._by_id = {item["id"]: item for item in (*self._places, *web_locations())}

    def answer(self, ex: Exchange) -> Reply:
        """Plan, method and parameters checked, then the places, points of interest or descriptions."""
        refused = ex.not_in_plan("local", "Free") or ex.only_get()
        if refused is not None:
            return refused
        path = ex.request.path
        allowed = {PLACE_PATH: _PLACE_PARAMS, POIS_PATH: _POIS_PARAMS}.get(path, _DESCRIPTIONS_PARAMS)
        values, ids, errors = check_query_params(ex.request.params, allowed)
        problem = _place_problem(values) if path == PLACE_PATH else _ids_problem(ids)
        errors += [problem] if problem else []
        if errors:
            return ex.validation(errors)
        ex.bill()
        if path == PLACE_PATH:
            body = self._place_search(values)
        elif path == POIS_PATH:
            body = {"type": "local_pois", "results": [self._by_id.get(i) for i in ids]}
        else:
            body = {"type": "local_descriptions", "results": [_description(self._by_id.get(i)) for i in ids]}
        return ex.json(200, body)

    def _place_search(self, values: Mapping[str, str]) -> dict[str, Any]:
        q = values.get("q", "")
        count = int(values.get("count", "20"))
        empty = folded_in(q, self.no_places_for)
        return {
            "type": "locations",
            "query": {"original": q, "altered": None, "spellcheck_off": False, "show_strict_warning": False},
            "results": [] if empty else [dict(item) for item in self._places[:count]],
            "location": {"name": values.get("location", "coordinates"), "country": "PT"},
        }


def _place_problem(values: Mapping[str, str]) -> dict[str, Any] | None:
    problem = q_error(values.get("q"), required=False)
    has_coords = "latitude" in values or "longitude" in values
    if has_coords and not ("latitude" in values and "longitude" in values):
        return field_error("value_error", "latitude", "Value error, give latitude and longitude", None)
    if not has_coords and "location" not in values:
        return field_error("value_error", "location", "Value error, location or coordinates required", None)
    return problem


def _ids_problem(ids: list[str]) -> dict[str, Any] | None:
    if 1 <= len(ids) <= 20:
        return None
    return field_error("value_error", "ids", "Value error, between 1 and 20 ids are required", len(ids))


def _description(item: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if item is None:
        return None
    town = item.get("postal_address", {}).get("addressLocality", "town")
    text = f"## About\n{item['title']} is a **local favourite** in {town}."
    return {"type": "local_description", "id": item["id"], "description": text}
