"""The fake's own places, shaped like Brave's documented local answers (brave-api.md §5.8)."""

from __future__ import annotations

from typing import Any

from testkit.brave.fixtures import load


def web_locations() -> list[dict[str, Any]]:
    """The location results of the fake's web answer, so their ids resolve at /local/pois and /descriptions."""
    results = load("web").get("locations", {}).get("results", [])
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
