"""The fake's own LLM-context and place data, shaped like Brave's documented answers (brave-api.md §5.7-5.8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_FIXTURES = Path(__file__).with_name("fixtures")


def web_locations() -> list[dict[str, Any]]:
    """The location results of the fake's web answer, so their ids resolve at /local/pois and /descriptions."""
    web = json.loads((_FIXTURES / "web.json").read_text(encoding="utf-8"))
    results = web.get("locations", {}).get("results", [])
    return [item for item in results if isinstance(item, dict) and item.get("id")]


def _hours(opens: str, closes: str, days: tuple[str, ...]) -> dict[str, Any]:
    names = {"Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday", "Fri": "Friday",
             "Sat": "Saturday", "Sun": "Sunday"}  # fmt: skip
    week = [[{"abbr_name": d, "full_name": names[d], "opens": opens, "closes": closes}] for d in days]
    return {"current_day": week[0], "days": week}


def place_items() -> list[dict[str, Any]]:
    """Three places in Lisbon (ids stable), with every field brave_local_search shows."""
    weekdays = ("Mon", "Tue", "Wed", "Thu", "Fri")
    late = _hours("08:00", "18:00", weekdays)
    late["days"].append([{"abbr_name": "Sat", "full_name": "Saturday", "opens": "09:00", "closes": "14:00"}])
    return [
        {
            "type": "location_result",
            "id": "locFAKEpastelaria0001=",
            "title": "Pastelaria Exemplo &amp; Café",
            "url": "https://pastelaria.example.pt",
            "provider_url": "https://search.brave.com/local/pastelaria-exemplo",
            "coordinates": [38.6977, -9.2063],
            "postal_address": {
                "type": "PostalAddress",
                "streetAddress": "Rua de Belém 84",
                "addressLocality": "Lisboa",
                "postalCode": "1300-085",
                "country": "PT",
            },
            "contact": {"telephone": "+351 21 000 0001"},
            "rating": {"ratingValue": 4.7, "bestRating": 5, "reviewCount": 18234},
            "opening_hours": late,
            "price_range": "€",
            "distance": {"value": 1.2, "units": "kilometers"},
            "categories": ["Bakery", "Café"],
            "timezone": "Europe/Lisbon",
        },
        {
            "type": "location_result",
            "id": "locFAKEtasca0002=",
            "title": "Tasca do Teste",
            "url": "https://tasca-teste.example.pt",
            "coordinates": [38.7139, -9.1334],
            "postal_address": {"type": "PostalAddress", "displayAddress": "Largo do Exemplo 3, 1100-001 Lisboa"},
            "rating": {"ratingValue": 4.2, "bestRating": 5, "reviewCount": 1},
            "opening_hours": _hours("19:00", "02:00", ("Tue", "Wed", "Thu", "Fri", "Sat")),
            "price_range": "€€",
            "categories": ["Portuguese restaurant"],
            "timezone": "Europe/Lisbon",
        },
        {
            "type": "location_result",
            "id": "locFAKEmercado0003=",
            "title": "Mercado <b>Fictício</b>",
            "provider_url": "https://search.brave.com/local/mercado-ficticio",
            "coordinates": [38.7069, -9.1459],
            "postal_address": {"type": "PostalAddress", "displayAddress": "Av. 24 de Julho 49, Lisboa"},
            "opening_hours": _hours("00:00", "23:59", ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")),
            "categories": ["Market"],
        },
    ]


def context_body(query: str, *, local: bool, urls: int) -> dict[str, Any]:
    """An LLM-context answer for ``query``: three pages (one repeated, one passage repeated, one JSON table)."""
    topic = " ".join(query.split())[:80]
    generic = [
        {
            "url": "https://docs.example.org/guide",
            "title": f"Guide: {topic}",
            "snippets": [
                f"The guide to {topic} starts with the basics and explains each concept with an example.",
                "Install the tool, then run it once to create the configuration file.",
            ],
        },
        {
            "url": "https://blog.example.com/posts/deep-dive",
            "title": "A deep dive &amp; a few pitfalls",
            "snippets": [
                "Install the tool, then run it once to create the configuration file.",  # repeated passage
                '{"type":"table","rows":[{"option":"timeout","default":"15 s"},{"option":"retries","default":"3"}]}',
                "Pitfall: the cache key must include every parameter that changes the answer. " * 3,
            ],
        },
        {
            "url": "https://docs.example.org/guide/",  # the same page again (trailing slash)
            "title": f"Guide: {topic}",
            "snippets": ["Advanced usage covers streaming, retries and deadlines in depth."],
        },
        {
            "url": "https://qa.example.net/questions/42",
            "title": "Q&A: how do I start?",
            "snippets": ["Start small: one request, one result, then add options as you need them."],
        },
    ][: max(1, urls)]
    sources: dict[str, Any] = {
        "https://docs.example.org/guide": {
            "title": f"Guide: {topic}",
            "hostname": "docs.example.org",
            "age": ["Monday, March 2, 2026", "2026-03-02", "265 days ago", "2026-03-02T00:00:00Z"],
        },
        "https://blog.example.com/posts/deep-dive": {
            "title": "A deep dive",
            "hostname": "blog.example.com",
            "age": None,
        },
        "https://qa.example.net/questions/42": {
            "title": "Q&A",
            "hostname": "qa.example.net",
            "age": ["Friday, January 9, 2026", "2026-01-09", "318 days ago"],
        },
    }
    grounding: dict[str, Any] = {"generic": generic, "map": []}
    if local:
        grounding["poi"] = {
            "name": "Pastelaria Exemplo",
            "url": "https://pastelaria.example.pt",
            "title": "Pastelaria Exemplo – official site",
            "snippets": ['{"name":"Pastelaria Exemplo","address":"Rua de Belém 84, Lisboa","rating":4.7,"open":true}'],
        }
        grounding["map"] = [
            {
                "name": "Tasca do Teste",
                "url": "https://tasca-teste.example.pt",
                "title": "Tasca do Teste",
                "snippets": ["Small tavern with grilled fish; evenings only."],
            }
        ]
        sources["https://pastelaria.example.pt"] = {
            "title": "Pastelaria Exemplo",
            "hostname": "pastelaria.example.pt",
            "age": None,
        }
    return {"grounding": grounding, "sources": sources}
