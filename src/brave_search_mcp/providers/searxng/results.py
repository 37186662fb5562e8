"""SearXNG's JSON answers → our sections (pure), kept apart from the HTTP client so each stays readable.

SearXNG already merges and ranks results from its engines; we keep that order, drop what is not a
usable http(s) URL, de-duplicate by normalized URL (across the instance's pages too: real engines' pages
overlap), and clean every string through the project's one sanitizer. A page of ours is a window of the
instance's list, which comes in pages of the instance's own size (``window``). ``answers``, ``infoboxes``
and ``suggestions``/``corrections`` of the first page become their own sections on the first page. A dated
result says its age as Brave does ("2 days ago"; a date once it is a year old) and keeps the ISO date.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from brave_search_mcp.models.envelopes import Result, Section, WarningItem
from brave_search_mcp.models.errors import NoResults, UpstreamError, WarningCode
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest, SearchTypeFailure
from brave_search_mcp.render import text

__all__ = ["PROVIDER_NAME", "EnginesUnavailable", "Window", "age", "page_failure", "past_the_end", "window_page"]

PROVIDER_NAME = "searxng"
TITLE_LIMIT = 200
SNIPPET_LIMIT = 400
ANSWER_LIMIT = 1000
FIELD_LIMIT = 200
MAX_ATTRIBUTES = 8
MAX_SUGGESTIONS = 10
MAX_ENGINES = 12
_LABELS: Mapping[str, str] = {
    "web": "Web results",
    "news": "News results",
    "images": "Image results",
    "videos": "Video results",
}
_MAGNITUDES: Mapping[str, int] = {"K": 1_000, "M": 1_000_000, "B": 1_000_000_000}


class EnginesUnavailable(UpstreamError, SearchTypeFailure):
    """SearXNG answered 200 but every engine of the search type failed: a failure of that search type (fallback,
    its breaker), not NO_RESULTS, and not of the instance (its other categories may well answer)."""

    default_retryable = True


def _iso(value: Any) -> str | None:
    """SearXNG's ``publishedDate`` as ISO-8601, or None when absent or unreadable."""
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).isoformat()
    except ValueError:
        return None


def age(published: str | None, now: datetime | None) -> str | None:
    """How old an ISO date is, in Brave's words: "6 hours ago", "2 days ago", "1 month ago", else "March 4, 2022"
    (a date without an offset is taken as UTC; a date in the future is shown as a date)."""
    if published is None or now is None:
        return None
    when = datetime.fromisoformat(published)
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    seconds = (now - when).total_seconds()
    for unit, size, up_to in (("minute", 60, 3600), ("hour", 3600, 86_400), ("day", 86_400, 30 * 86_400)):
        if 0 <= seconds < up_to:
            count = max(1, int(seconds // size))
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    if 0 <= seconds < 365 * 86_400:
        months = max(1, int(seconds // (30 * 86_400)))
        return f"{months} month{'' if months == 1 else 's'} ago"
    return f"{when:%B} {when.day}, {when.year}"


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _engines(item: Mapping[str, Any]) -> list[str] | None:
    raw = item.get("engines")
    names = raw if isinstance(raw, list) else [item.get("engine")]
    cleaned = [text.clean_text(name, limit=60) for name in names[:MAX_ENGINES]]
    kept = list(dict.fromkeys(name for name in cleaned if name))
    return kept or None


def _resolution(value: Any) -> tuple[int | None, int | None]:
    """``"1920x1080"`` (or ``"1920 x 1080"``) → (1920, 1080)."""
    if not isinstance(value, str) or len(value) > 32:
        return None, None
    parts = value.lower().replace("×", "x").split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        return None, None
    return int(parts[0]), int(parts[1])


def _duration(value: Any) -> str | None:
    """SearXNG's ``length``: text such as ``"3:20"`` (most engines), or seconds as a number (a timedelta)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value < 10**7:
        minutes, seconds = divmod(round(value), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
    if isinstance(value, str):
        return text.clean_text(value, limit=20) or None
    return None


def _views(value: Any) -> int | None:
    """A view count: a number, digits, or SearXNG's humanized ``"1.5K"`` / ``"2M"``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str) or len(value) > 20:
        return None
    raw = value.strip().replace(",", "").upper()
    factor = _MAGNITUDES.get(raw[-1:], 1)
    number = raw[:-1] if factor > 1 else raw
    try:
        count = float(number) * factor
    except ValueError:
        return None
    return int(count) if math.isfinite(count) and count >= 0 else None


def _video(result: Result, item: Mapping[str, Any]) -> None:
    result.duration = _duration(item.get("length"))
    result.views = _views(item.get("views"))
    result.creator = text.clean_text(item.get("author"), limit=FIELD_LIMIT) or None
    result.publisher = text.clean_text(item.get("metadata"), limit=FIELD_LIMIT) or None


def _result(item: Any, search_type: str, now: datetime | None) -> Result | None:
    if not isinstance(item, Mapping):
        return None
    url = text.http_url(item.get("url")) or (text.http_url(item.get("iframe_src")) if search_type == "videos" else None)
    if url is None:
        return None
    source = text.site_of(url) or None
    result = Result(
        title=text.clean_text(item.get("title"), limit=TITLE_LIMIT) or source or url,
        url=url,
        snippet=text.clean_text(item.get("content"), limit=SNIPPET_LIMIT),
        site=source,
        provider=PROVIDER_NAME,
        engines=_engines(item),
        published_date=_iso(item.get("publishedDate")),
        score=_score(item.get("score")),
    )
    result.age = age(result.published_date, now)
    thumbnail = text.http_url(item.get("thumbnail_src")) or text.http_url(item.get("thumbnail"))
    if search_type == "images":
        result.image_url = text.http_url(item.get("img_src"))
        if result.image_url is None:
            return None  # an image result without an image is not worth showing
        result.width, result.height = _resolution(item.get("resolution"))
    else:
        if search_type == "videos":
            _video(result, item)
        thumbnail = thumbnail or text.http_url(item.get("img_src"))
    result.thumbnail = thumbnail
    return result


def _answers(raw: Any) -> list[Result]:
    out: list[Result] = []
    for item in raw if isinstance(raw, list) else []:
        body = item.get("answer") if isinstance(item, Mapping) else item  # older versions: plain strings
        answer = text.clean_text(body, limit=ANSWER_LIMIT)
        if not answer:
            continue
        url = text.http_url(item.get("url")) if isinstance(item, Mapping) else None
        engines = _engines(item) if isinstance(item, Mapping) else None
        out.append(Result(title="Answer", url=url or "", snippet=answer, provider=PROVIDER_NAME, engines=engines))
    return out


def _infoboxes(raw: Any) -> list[Result]:
    out: list[Result] = []
    for box in raw if isinstance(raw, list) else []:
        if not isinstance(box, Mapping):
            continue
        title = text.clean_text(box.get("infobox"), limit=TITLE_LIMIT)
        if not title:
            continue
        urls = [u.get("url") for u in box.get("urls") or [] if isinstance(u, Mapping)]
        url = next((good for good in map(text.http_url, [box.get("id"), *urls]) if good), "")
        attributes = [
            [label, value]
            for attr in (box.get("attributes") or [])[:MAX_ATTRIBUTES]
            if isinstance(attr, Mapping)
            for label, value in [
                (
                    text.clean_text(attr.get("label"), limit=FIELD_LIMIT),
                    text.clean_text(attr.get("value"), limit=FIELD_LIMIT),
                )
            ]
            if label and value
        ]
        out.append(
            Result(
                title=title,
                url=url,
                snippet=text.clean_text(box.get("content"), limit=SNIPPET_LIMIT),
                site=text.site_of(url) or None,
                provider=PROVIDER_NAME,
                engines=_engines(box),
                attributes=attributes or None,
            )
        )
    return out


def _suggestions(data: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key in ("corrections", "suggestions"):
        raw = data.get(key)
        found.extend(text.clean_text(s, limit=FIELD_LIMIT) for s in (raw if isinstance(raw, list) else []))
    return list(dict.fromkeys(s for s in found if s))[:MAX_SUGGESTIONS]


def _unresponsive(raw: Any) -> dict[str, str]:
    """``[["bing", "timeout"], …]`` → ``{"bing": "bing (timeout)", …}``: each engine once, with its first reason."""
    out: dict[str, str] = {}
    for pair in raw if isinstance(raw, list) else []:
        if isinstance(pair, list | tuple) and pair:
            name = text.clean_text(pair[0], limit=60)
            reason = text.clean_text(pair[1], limit=120) if len(pair) > 1 else ""
            if name and name not in out:
                out[name] = f"{name} ({reason})" if reason else name
    return out


@dataclass
class Window:
    """The instance's merged list as far as it was read: results in its order (de-duplicated across pages)."""

    offset: int
    count: int
    now: datetime | None = None  # ages are told against it (None: dates only)
    results: list[Result] = field(default_factory=list)
    dropped: int = 0
    failed_engines: dict[str, str] = field(default_factory=dict)  # engine -> "engine (its first reason)"
    first: Mapping[str, Any] | None = None  # page 1's answer: answers, infoboxes and suggestions live there
    exhausted: bool = False  # a page came back empty, or repeated earlier ones: the instance has nothing more
    _seen: set[str] = field(default_factory=set)

    @property
    def start(self) -> int:
        """Index of the first result of our page: Brave's offset is a page index of ``count`` results."""
        return self.offset * self.count

    @property
    def full(self) -> bool:
        """Whether every result of our page has been read."""
        return len(self.results) >= self.start + self.count

    def add(self, data: Mapping[str, Any], search_type: str) -> None:
        """Append one instance page; a page that is empty, or (after the first) adds no new result, means the end
        of the instance's list (an instance whose engines do not page answers page 1 for every page)."""
        later = self.first is not None
        if self.first is None:
            self.first = data
        raw = data.get("results")
        for name, shown in _unresponsive(data.get("unresponsive_engines")).items():
            self.failed_engines.setdefault(name, shown)
        before, repeated = len(self.results), 0
        for item in raw if isinstance(raw, list) else []:
            result = _result(item, search_type, self.now)
            if result is None:
                continue
            key = text.dedup_key(result.url)
            if key in self._seen:
                repeated += 1
                continue
            self._seen.add(key)
            self.results.append(result)
        added = len(self.results) > before
        self.dropped += repeated if added or not later else 0  # a page that only repeats is the end, not news
        self.exhausted = not (isinstance(raw, list) and raw) or (later and not added)


def page_failure(data: Mapping[str, Any], search_type: str) -> EnginesUnavailable | None:
    """The failure one instance page stands for: no results, no answer, and engines that did not answer."""
    raw = data.get("results")
    failed = list(_unresponsive(data.get("unresponsive_engines")).values())
    if (isinstance(raw, list) and raw) or not failed or _answers(data.get("answers")) or data.get("infoboxes"):
        return None
    return EnginesUnavailable(
        f"SearXNG answered, but its {search_type} engines failed and returned nothing: " + ", ".join(failed) + ".",
        status=200,
        retryable=True,
        details={"provider": PROVIDER_NAME, "search_type": search_type, "unresponsive_engines": failed},
    )


def past_the_end(window: Window) -> dict[str, Any]:
    """Details of a NO_RESULTS whose offset starts after the instance's last result: the offset that has some."""
    details: dict[str, Any] = {"provider": PROVIDER_NAME}
    if window.results and window.offset:
        last = (len(window.results) - 1) // window.count
        details["last_offset"] = last
        details["what_to_do"] = (
            f"Nothing at this offset: offset {last} is the last with results; use it or a lower one."
        )
    return details


def window_page(window: Window, request: SearchRequest, warnings: list[WarningItem]) -> ProviderPage:
    """Our page of the instance's list, ranked by its place there; raise NoResults when it is empty."""
    page_results = window.results[window.start : window.start + window.count]
    first: Mapping[str, Any] = window.first or {}
    on_first = window.offset == 0  # answers, infoboxes and suggestions belong to the first page only
    answers = _answers(first.get("answers")) if on_first else []
    infoboxes = _infoboxes(first.get("infoboxes")) if on_first else []
    suggestions = _suggestions(first)
    if not page_results and not answers and not infoboxes:
        details = past_the_end(window)
        if suggestions:
            details["suggestions"] = suggestions
        where = f" past the instance's {len(window.results)} results" if window.offset and window.results else ""
        raise NoResults(f"No {request.search_type} results found on SearXNG{where}.", details=details)
    for position, result in enumerate(page_results):
        result.rank = window.start + position + 1
    key = request.search_type
    sections = [Section(key=key, label=_LABELS.get(key, "Results"), results=page_results)]
    more = len(window.results) > window.start + window.count or not window.exhausted
    sections[0].section_limit_reached = more
    if infoboxes:
        sections.append(Section(key="infobox", label="Infobox", results=infoboxes))
    if answers:
        sections.append(Section(key="answers", label="Answers", results=answers))
    if suggestions and on_first:
        suggested = [Result(title=s, url="", provider=PROVIDER_NAME) for s in suggestions]
        sections.append(Section(key="suggestions", label="Suggested searches", results=suggested))
    out = list(warnings)
    if window.failed_engines:
        out.append(
            WarningItem(
                code=WarningCode.ENGINES_UNRESPONSIVE,
                message="SearXNG engines did not answer: " + ", ".join(window.failed_engines.values()) + "; results "
                "may be fewer.",
            )
        )
    if window.dropped:
        out.append(
            WarningItem(
                code=WarningCode.DEDUPLICATED, message=f"{window.dropped} result(s) repeating a URL were dropped."
            )
        )
    return ProviderPage(
        provider=PROVIDER_NAME, sections=[s for s in sections if s.results], warnings=out, more_available=more
    )
