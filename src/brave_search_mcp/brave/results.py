"""Provider JSON to typed sections: Brave's answer shapes become clean, deduplicated results.

Parsing never trusts Brave's shapes: a field of the wrong type is skipped, never raised, so one
odd result cannot cost the agent the whole answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from brave_search_mcp.brave.facts import ANSWER_TYPES
from brave_search_mcp.models.envelopes import DIRECT_ANSWERS, Result, Section, WarningItem
from brave_search_mcp.models.errors import ParseError, WarningCode
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.render.text import clean_text, cut, dedup_key, has_invisible, http_url, number_text, site_of

TITLE_LIMIT = 200
SNIPPET_LIMIT = 400
EXTRA_SNIPPET_LIMIT = 300
MAX_EXTRA_SNIPPETS = 5
FIELD_LIMIT = 200
MAX_ATTRIBUTES = 8

# Web answer sections in the order they are shown.
WEB_SECTIONS: tuple[str, ...] = ("web", "news", "videos", "discussions", "faq", "infobox", "locations")
# Sections that list pages: a page twice in them is a duplicate. An FAQ entry, an infobox or a place says something
# else about a page a web result may also link (Brave's infobox is usually the first web result's page).
PAGE_SECTIONS: frozenset[str] = frozenset({"web", "news", "videos", "discussions", "images"})
SECTION_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "web": "Web results",
        "news": "News results",
        "videos": "Video results",
        "images": "Image results",
        "discussions": "Discussions",
        "faq": "FAQ",
        "infobox": "Infobox",
        "locations": "Locations",
    }
)


@dataclass
class ParsedAnswer:
    """Sections extracted from one Brave answer, before truncation."""

    sections: list[Section]
    warnings: list[WarningItem] = field(default_factory=list)
    duplicates: dict[str, int] = field(default_factory=dict)  # per section: results dropped as repeats of a page
    altered_query: str | None = None
    more_available: bool | None = None
    summarizer_key: str | None = None


def _text(value: Any, limit: int = FIELD_LIMIT, *, decorations: bool = False) -> str:
    if type(value) is not str:  # most fields are text: number_text would hand them back unchanged
        value = number_text(value)
    return clean_text(value, limit=limit, decorations=decorations)


def _is_map(value: Any) -> bool:
    if isinstance(value, dict):  # decoded JSON: the dict check answers at once, before the abstract one
        return True
    return value is not None and isinstance(value, Mapping)


def _map(value: Any) -> Mapping[str, Any]:
    return value if _is_map(value) else {}


def _items(container: Any) -> list[Any]:
    results = _map(container).get("results")
    return results if isinstance(results, list) else []


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and len(value) < 64 and value.strip().isascii() and value.strip().isdigit():
        number = int(value.strip())
    else:
        return None
    return number if 0 <= number < 10**15 else None


def _source(item: Mapping[str, Any], url: str) -> str | None:
    hostname = _text(_map(item.get("meta_url")).get("hostname")).lower().removeprefix("www.")
    return hostname or site_of(url) or None


def _extra_snippets(value: Any, decorations: bool) -> list[str] | None:
    if not isinstance(value, list):
        return None
    cleaned = [_text(v, EXTRA_SNIPPET_LIMIT, decorations=decorations) for v in value]
    kept = [v for v in cleaned if v][:MAX_EXTRA_SNIPPETS]
    return kept or None


def _age(item: Mapping[str, Any]) -> str | None:
    return _text(item.get("age")) or _text(item.get("page_age")) or None


def _base(
    item: Mapping[str, Any],
    decorations: bool,
    *,
    title: Any = None,
    snippet: Any = None,
    site: str | None = None,
    **more: Any,
) -> Result | None:
    """The fields every result has, plus ``more`` (already clean); None without a usable URL.

    ``site`` names the site when the answer says it better than the URL's host (images).
    """
    url = http_url(item.get("url"))
    if url is None:
        return None
    source = _source(item, url)
    title_text = _text(item.get("title") if title is None else title, TITLE_LIMIT, decorations=decorations)
    raw_snippet = item.get("description") if snippet is None else snippet
    # Every value is already clean text, a checked URL or None: no second validation.
    return Result.checked(
        title_text or source or url,
        url,
        snippet=_text(raw_snippet, SNIPPET_LIMIT, decorations=decorations),
        site=site or source,
        provider="brave",
        **more,
    )


def _web_result(item: Mapping[str, Any], decorations: bool, **more: Any) -> Result | None:
    extra = _extra_snippets(item.get("extra_snippets"), decorations)
    return _base(item, decorations, age=_age(item), extra_snippets=extra, **more)


def _news_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    return _web_result(item, decorations, breaking=item.get("breaking") is True or None)


def _video_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    video = _map(item.get("video"))
    return _base(
        item,
        decorations,
        age=_age(item),
        duration=_text(video.get("duration"), 40) or None,
        views=_int(video.get("views")),
        creator=_text(video.get("creator")) or None,
        publisher=_text(video.get("publisher")) or None,
        thumbnail=http_url(_map(item.get("thumbnail")).get("src")),
    )


def _image_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    props, thumb = _map(item.get("properties")), _map(item.get("thumbnail"))
    width, height = _int(props.get("width")), _int(props.get("height"))
    if width is None or height is None:
        width, height = _int(thumb.get("width")), _int(thumb.get("height"))
    if width is None or height is None:  # a size is both numbers or neither
        width = height = None
    return _base(
        item,
        decorations,
        snippet="",
        site=_text(item.get("source")).lower().removeprefix("www.") or None,
        image_url=http_url(props.get("url")),
        thumbnail=http_url(thumb.get("src")),
        width=width,
        height=height,
    )


def _discussion_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    data = _map(item.get("data"))
    snippet = item.get("description") if _text(item.get("description")) else data.get("top_comment")
    title = data.get("title") if _text(data.get("title")) else item.get("title")
    return _base(
        item,
        decorations,
        title=title,
        snippet=snippet,
        age=_age(item),
        forum=_text(data.get("forum_name")) or None,
        answers=_int(data.get("num_answers")),
        votes=_text(data.get("score"), 40) or None,
        question=_text(data.get("question"), SNIPPET_LIMIT, decorations=decorations) or None,
    )


def _faq_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    question = _text(item.get("question"), TITLE_LIMIT, decorations=decorations)
    answer = _text(item.get("answer"), SNIPPET_LIMIT, decorations=decorations)
    result = _base(item, decorations, title=item.get("question") if question else None, snippet="")
    if result is None:
        return None
    result.snippet = answer
    result.question = question or None
    result.answer = answer or None
    return result


def _infobox_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    url = http_url(item.get("website_url")) or http_url(item.get("url"))
    if url is None:
        return None
    title = item.get("title") if _text(item.get("title")) else item.get("label")
    snippet = item.get("long_desc") if _text(item.get("long_desc")) else item.get("description")
    result = _base({**item, "url": url}, decorations, title=title, snippet=snippet)
    if result is None:
        return None
    attributes: list[list[str]] = []
    raw = item.get("attributes")
    for pair in raw if isinstance(raw, list) else []:
        if isinstance(pair, list) and len(pair) >= 2:
            key, value = _text(pair[0], 80), _text(pair[1])
            if key and value:
                attributes.append([key, value])
        if len(attributes) >= MAX_ATTRIBUTES:
            break
    result.attributes = attributes or None
    return result


def _rating(value: Any) -> str | None:
    rating = _map(value)
    score = rating.get("ratingValue")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        return None
    text = f"{score:g}"
    best = rating.get("bestRating")
    if not isinstance(best, bool) and isinstance(best, (int, float)) and math.isfinite(best):
        text += f"/{best:g}"
    reviews = _int(rating.get("reviewCount"))
    if reviews is not None:
        text += f" ({reviews} review{'' if reviews == 1 else 's'})"
    return text


def _location_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    url = http_url(item.get("url")) or http_url(item.get("provider_url"))
    if url is None:
        return None
    return _base(
        {**item, "url": url},
        decorations,
        address=_text(_map(item.get("postal_address")).get("displayAddress")) or None,
        phone=_text(_map(item.get("contact")).get("telephone"), 60) or None,
        rating=_rating(item.get("rating")),
    )


_BUILDERS = {
    "web": _web_result,
    "news": _news_result,
    "videos": _video_result,
    "images": _image_result,
    "discussions": _discussion_result,
    "faq": _faq_result,
    "infobox": _infobox_result,
    "locations": _location_result,
}


def parse_answer(search_type: SearchType, data: Mapping[str, Any], *, text_decorations: bool = False) -> ParsedAnswer:
    """Extract clean, deduplicated sections; raise ``ParseError`` if ``data`` is not Brave's shape."""
    if not isinstance(data, Mapping):
        raise ParseError(f"Brave's answer is not a JSON object (got {type(data).__name__}).")
    expected = ANSWER_TYPES.get(search_type)
    if expected is None:
        raise ParseError(f"Unknown search type {search_type!r}.")
    answer_type = data.get("type")
    if answer_type is not None and answer_type != expected:
        shown = cut(_text(answer_type, 60) or type(answer_type).__name__, 60)
        raise ParseError(f'Brave answered with type "{shown}" to a {search_type} search (expected "{expected}").')

    sources = [(key, data.get(key)) for key in WEB_SECTIONS] if search_type == "web" else [(search_type, data)]
    seen: set[str] = set()
    duplicates: dict[str, int] = {}
    sections: list[Section] = []
    for key, container in sources:
        build = _BUILDERS[key]
        results: list[Result] = []
        for item in _items(container):
            if not _is_map(item):
                continue
            result = build(item, text_decorations)
            if result is None:
                continue
            if key in PAGE_SECTIONS:
                identity = dedup_key((result.image_url or result.url) if key == "images" else result.url)
                if identity in seen:
                    duplicates[key] = duplicates.get(key, 0) + 1
                    continue
                seen.add(identity)
            results.append(result)
        if results:
            sections.append(Section(key=key, label=SECTION_LABELS[key], results=results))

    parsed = ParsedAnswer(sections=sections, duplicates=duplicates)
    query = _map(data.get("query"))
    altered = query.get("altered")
    original = query.get("original")
    if isinstance(altered, str) and altered.strip() and altered != original:
        parsed.altered_query = _text(altered, 400) or None
        if parsed.altered_query:
            was = f' instead of "{cut(_text(original, 400), 100)}"' if _text(original) else ""
            parsed.warnings.append(
                WarningItem(
                    code=WarningCode.QUERY_ALTERED.value,
                    message=f'Brave searched for "{cut(parsed.altered_query, 100)}"{was}; '
                    "set spellcheck: false to search the exact text.",
                )
            )
    more = query.get("more_results_available")
    if isinstance(more, bool):
        parsed.more_available = more
    summarizer_key = _map(data.get("summarizer")).get("key")
    if isinstance(summarizer_key, str) and summarizer_key.strip() and not has_invisible(summarizer_key):
        parsed.summarizer_key = summarizer_key
    return parsed


# Named no sections, a search shows the direct answers (models.envelopes.DIRECT_ANSWERS) above its results, within
# this many bytes of their text together.
DIRECT_ANSWER_BYTES = 2048


def _direct_answers(sections: list[Section]) -> list[Section]:
    """The direct-answer sections, first; entries past ``DIRECT_ANSWER_BYTES`` of text together are left out (the
    first always stays: each of its fields is capped already)."""
    kept: list[Section] = []
    used = 0
    for section in sections:
        if section.key not in DIRECT_ANSWERS:
            continue
        results: list[Result] = []
        for result in section.results:
            pairs = " ".join(f"{a} {b}" for a, b, *_ in result.attributes or [])
            size = len(f"{result.title} {result.url} {result.snippet or ''} {pairs}".encode())
            if used and used + size > DIRECT_ANSWER_BYTES:
                break
            used += size
            results.append(result)
        if results:
            cut_short = len(results) < len(section.results)
            kept.append(section.model_copy(update={"results": results, "section_limit_reached": True}) if cut_short
                        else section)  # fmt: skip
    return kept


def pick_sections(
    parsed: ParsedAnswer, *, limit: int, named: tuple[str, ...] | None = None
) -> tuple[list[Section], list[WarningItem]]:
    """What a search shows of its answer: the sections ``named`` (result_filter), each up to ``limit`` results;
    or, named none, ``limit`` results in all, web first and the other sections only as they fit, then the direct
    answers (bounded in bytes, whatever ``limit`` says). A DEDUPLICATED warning counts the repeats dropped from the
    sections it reached (a hidden section's repeats hid nothing)."""
    picked: list[Section] = []
    dropped = sum(parsed.duplicates.get(key, 0) for key in named) if named is not None else 0
    room = limit
    for section in parsed.sections:
        if named is not None and section.key not in named:
            continue
        if named is None and section.key in DIRECT_ANSWERS:
            continue  # added after the results, outside max_results (the text shows them above)
        if named is None:
            if room <= 0:
                break
            dropped += parsed.duplicates.get(section.key, 0)
        keep = section.results[: limit if named is not None else room]
        room -= len(keep)
        cut = len(keep) < len(section.results)
        picked.append(section.model_copy(update={"results": keep, "section_limit_reached": True}) if cut else section)
    if named is None:
        picked.extend(_direct_answers(parsed.sections))
    if not dropped:
        return picked, []
    message = f"Dropped {dropped} duplicate result{'' if dropped == 1 else 's'} (same URL in an earlier section)."
    return picked, [WarningItem(code=WarningCode.DEDUPLICATED.value, message=message)]
