"""How places read: hours as people say them ("Mon–Fri 08:00–18:00; Sat 09:00–14:00"), open now, listing lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from brave_search_mcp.models.envelopes import Result
from brave_search_mcp.render.text import clean_text

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_TIME = re.compile(r"^([01]?\d|2[0-4]):([0-5]\d)$")
MAX_HOURS_CHARS = 200


def _day(entry: Mapping[str, Any]) -> int | None:
    for key in ("abbr_name", "full_name"):
        name = clean_text(entry.get(key), limit=20).lower()[:3]
        for index, day in enumerate(DAYS):
            if name == day.lower():
                return index
    return None


def _minutes(value: Any) -> int | None:
    match = _TIME.match(clean_text(value, limit=20))
    return None if match is None else int(match.group(1)) * 60 + int(match.group(2))


def _span(entry: Mapping[str, Any]) -> str | None:
    opens, closes = _minutes(entry.get("opens")), _minutes(entry.get("closes"))
    if opens is None or closes is None:
        return None
    if opens == 0 and closes in (0, 1439, 1440):
        return "open 24 hours"
    return f"{opens // 60:02d}:{opens % 60:02d}–{closes // 60:02d}:{closes % 60:02d}"


def _entries(value: Any) -> list[Mapping[str, Any]]:
    """Brave's ``days`` is a list of per-day lists; ``current_day`` a flat list: both flattened."""
    out: list[Mapping[str, Any]] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, Mapping):
            out.append(item)
        elif isinstance(item, list):
            out.extend(entry for entry in item if isinstance(entry, Mapping))
    return out


def _week(hours: Any) -> dict[int, list[Mapping[str, Any]]]:
    week: dict[int, list[Mapping[str, Any]]] = {}
    for entry in _entries(hours.get("days") if isinstance(hours, Mapping) else None):
        day = _day(entry)
        if day is not None:
            week.setdefault(day, []).append(entry)
    return week


def hours_text(hours: Any) -> str | None:
    """Readable opening hours, consecutive days with the same hours grouped; None when Brave gave none."""
    if not isinstance(hours, Mapping):
        return None
    week = _week(hours)
    if not week:
        today = [e for e in _entries(hours.get("current_day")) if _span(e)]
        if not today:
            return None
        day = _day(today[0])
        spans = ", ".join(dict.fromkeys(s for s in map(_span, today) if s))
        return f"{DAYS[day]} {spans}" if day is not None else f"today {spans}"
    per_day = {day: ", ".join(dict.fromkeys(s for s in map(_span, entries) if s)) for day, entries in week.items()}
    groups: list[tuple[int, int, str]] = []
    for day in sorted(per_day):
        spans = per_day[day]
        if not spans:
            continue
        if groups and groups[-1][1] == day - 1 and groups[-1][2] == spans:
            groups[-1] = (groups[-1][0], day, spans)
        else:
            groups.append((day, day, spans))
    parts = [f"{DAYS[a]}{'–' + DAYS[b] if b != a else ''} {spans}" for a, b, spans in groups]
    text = "; ".join(parts)
    return text[:MAX_HOURS_CHARS] or None


def is_open(hours: Any, timezone: str | None, now: datetime) -> bool | None:
    """Whether the place is open at ``now`` in its own time zone; None when the data cannot tell."""
    if not isinstance(hours, Mapping) or not timezone:
        return None
    try:
        local = now.astimezone(ZoneInfo(timezone))
    except (ZoneInfoNotFoundError, ValueError):
        return None
    today = local.weekday()
    entries = _week(hours).get(today) or [e for e in _entries(hours.get("current_day")) if _day(e) == today]
    if not entries:
        return None
    minute = local.hour * 60 + local.minute
    known = False
    for entry in entries:
        opens, closes = _minutes(entry.get("opens")), _minutes(entry.get("closes"))
        if opens is None or closes is None:
            continue
        known = True
        if opens == 0 and closes in (0, 1439, 1440):
            return True
        if opens < closes and opens <= minute < closes:
            return True
        if closes <= opens and (minute >= opens or minute < closes):  # past midnight
            return True
    return False if known else None


def render_place(number: int, place: Result) -> list[str]:
    """One place as indented lines: name, rating and kind, address and phone, hours, URL, description."""
    lines = [f"{number}. {place.title}"]
    facts = [f"★ {place.rating}" if place.rating else "", place.price_range or "", ", ".join(place.categories or [])]
    facts.append(place.distance or "")
    if any(facts):
        lines.append("   " + " · ".join(f for f in facts if f))
    where = " · ".join(p for p in (place.address, place.phone) if p)
    if where:
        lines.append(f"   {where}")
    if place.hours:
        state = {True: " (open now)", False: " (closed now)", None: ""}[place.open_now]
        lines.append(f"   Hours: {place.hours}{state}")
    if place.url:
        lines.append(f"   {place.url}")
    if place.snippet:
        lines.append(f"   {place.snippet}")
    return lines


def render_web(number: int, result: Result) -> list[str]:
    """One fallback web result: title, URL, snippet."""
    lines = [f"{number}. {result.title}", f"   {result.url}"]
    if result.snippet:
        lines.append(f"   {result.snippet}")
    return lines
