"""SearXNG's JSON answer → our sections (pure), kept apart from the HTTP client so each stays readable.

SearXNG already merges and ranks results from its engines; we keep that order, drop what is not a
usable http(s) URL, de-duplicate by normalized URL, and clean every string through the project's one
sanitizer. ``answers``, ``infoboxes`` and ``suggestions``/``corrections`` become their own sections.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from brave_search_mcp.models.envelopes import Result, Section, WarningItem
from brave_search_mcp.models.errors import NoResults, UpstreamError, WarningCode
from brave_search_mcp.providers.protocol import ProviderPage, SearchRequest
from brave_search_mcp.render import text

__all__ = ["PROVIDER_NAME", "EnginesUnavailable", "page_from_answer"]

PROVIDER_NAME = "searxng"
TITLE_LIMIT = 200
SNIPPET_LIMIT = 400
ANSWER_LIMIT = 1000
FIELD_LIMIT = 200
MAX_ATTRIBUTES = 8
MAX_SUGGESTIONS = 10
MAX_ENGINES = 12
_LABELS: Mapping[str, str] = {"web": "Web results", "news": "News results", "images": "Image results"}


class EnginesUnavailable(UpstreamError):
    """SearXNG answered 200 but every engine failed: a provider failure (fallback, breaker), not NO_RESULTS."""

    default_retryable = True


def _iso(value: Any) -> str | None:
    """SearXNG's ``publishedDate`` as ISO-8601, or None when absent or unreadable."""
    if not isinstance(value, str) or not value.strip() or len(value) > 64:
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).isoformat()
    except ValueError:
        return None


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


def _result(item: Any, search_type: str) -> Result | None:
    if not isinstance(item, Mapping):
        return None
    url = text.http_url(item.get("url"))
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
    thumbnail = text.http_url(item.get("thumbnail_src")) or text.http_url(item.get("thumbnail"))
    if search_type == "images":
        result.image_url = text.http_url(item.get("img_src"))
        if result.image_url is None:
            return None  # an image result without an image is not worth showing
        result.width, result.height = _resolution(item.get("resolution"))
    else:
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


def _unresponsive(raw: Any) -> list[str]:
    """``[["bing", "timeout"], …]`` → ``["bing (timeout)", …]``."""
    out: list[str] = []
    for pair in raw if isinstance(raw, list) else []:
        if isinstance(pair, list | tuple) and pair:
            name = text.clean_text(pair[0], limit=60)
            reason = text.clean_text(pair[1], limit=120) if len(pair) > 1 else ""
            if name:
                out.append(f"{name} ({reason})" if reason else name)
    return out


def _main_results(raw: Any, request: SearchRequest) -> tuple[list[Result], int]:
    """Mapped, de-duplicated results in SearXNG's order, and how many duplicates were dropped."""
    seen: set[str] = set()
    kept: list[Result] = []
    dropped = 0
    for item in raw if isinstance(raw, list) else []:
        result = _result(item, request.search_type)
        if result is None:
            continue
        key = text.dedup_key(result.url)
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(result)
    return kept, dropped


def page_from_answer(data: Mapping[str, Any], request: SearchRequest, warnings: list[WarningItem]) -> ProviderPage:
    """Map one SearXNG JSON answer; raise NoResults or EnginesUnavailable when there is nothing to show."""
    found, dropped = _main_results(data.get("results"), request)
    failed_engines = _unresponsive(data.get("unresponsive_engines"))
    answers, infoboxes, suggestions = (
        _answers(data.get("answers")),
        _infoboxes(data.get("infoboxes")),
        _suggestions(data),
    )
    if not found and not answers and not infoboxes:
        if failed_engines:
            raise EnginesUnavailable(
                "SearXNG answered, but its engines failed and returned nothing: " + ", ".join(failed_engines) + ".",
                status=200,
                retryable=True,
                details={"provider": PROVIDER_NAME, "unresponsive_engines": failed_engines},
            )
        details: dict[str, Any] = {"provider": PROVIDER_NAME}
        if suggestions:
            details["suggestions"] = suggestions
        raise NoResults(f"No {request.search_type} results found on SearXNG.", details=details)
    page_results = found[: request.count]
    first_rank = request.offset * request.count + 1
    for position, result in enumerate(page_results):
        result.rank = first_rank + position
    key = request.search_type
    sections = [Section(key=key, label=_LABELS.get(key, "Results"), results=page_results)]
    sections[0].section_limit_reached = len(found) > request.count
    if infoboxes:
        sections.append(Section(key="infobox", label="Infobox", results=infoboxes))
    if answers:
        sections.append(Section(key="answers", label="Answers", results=answers))
    if suggestions:
        suggested = [Result(title=s, url="", provider=PROVIDER_NAME) for s in suggestions]
        sections.append(Section(key="suggestions", label="Suggested searches", results=suggested))
    out = list(warnings)
    if failed_engines:
        out.append(
            WarningItem(
                code=WarningCode.ENGINES_UNRESPONSIVE,
                message="SearXNG engines did not answer: " + ", ".join(failed_engines) + "; results may be fewer.",
            )
        )
    if dropped:
        out.append(
            WarningItem(code=WarningCode.DEDUPLICATED, message=f"{dropped} result(s) repeating a URL were dropped.")
        )
    return ProviderPage(
        provider=PROVIDER_NAME,
        sections=[s for s in sections if s.results],
        warnings=out,
        more_available=len(found) >= request.count,
    )
