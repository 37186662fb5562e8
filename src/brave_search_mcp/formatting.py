"""Brave JSON to sections, and envelopes to the compact text the model reads, within byte/line bounds.

The text is what the model pays for on every call, so it is terse: one title line, one URL line,
one snippet line per result, numbered across sections so a result can be cited as "result 12".
Parsing never trusts Brave's shapes: a field of the wrong type is skipped, never raised, so one
odd result cannot cost the agent the whole answer.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .config import MAX_MAX_BYTES, MAX_MAX_LINES
from .errors import ERROR_ADVICE, ErrorCode, ParseError, WarningCode
from .models import ErrorEnvelope, Result, SearchEnvelope, SearchType, Section, SummaryEnvelope, WarningItem

TITLE_LIMIT = 200
SNIPPET_LIMIT = 400
EXTRA_SNIPPET_LIMIT = 300
MAX_EXTRA_SNIPPETS = 5
FIELD_LIMIT = 200
MAX_ATTRIBUTES = 8
WARNING_LINE_LIMIT = 300
MAX_RENDERED_WARNINGS = 20

# Top-level ``type`` of each endpoint's answer (reference/brave-api.md §2).
ANSWER_TYPES: Mapping[str, str] = MappingProxyType(
    {"web": "search", "news": "news", "videos": "videos", "images": "images"}
)
# Web answer sections in the order they are shown.
WEB_SECTIONS: tuple[str, ...] = ("web", "news", "videos", "discussions", "faq", "infobox", "locations")
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
# (singular, plural) nouns for the summary line.
_NOUNS: dict[str, tuple[str, str]] = {
    "web": ("web result", "web results"),
    "news": ("news result", "news results"),
    "videos": ("video result", "video results"),
    "images": ("image result", "image results"),
    "discussions": ("discussion", "discussions"),
    "faq": ("FAQ entry", "FAQ entries"),
    "infobox": ("infobox", "infoboxes"),
    "locations": ("location", "locations"),
}

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
# Only real HTML tag names are stripped, so titles such as "Vec<T> in Rust" and "Vec&lt;T&gt;" survive.
_TAG = re.compile(
    r"</?(?:a|abbr|article|b|big|blockquote|body|br|button|center|cite|code|dd|del|details|div|dl|dt|em|figure|"
    r"font|footer|form|h[1-6]|head|header|hr|html|i|iframe|img|input|ins|kbd|label|li|link|main|mark|meta|nav|"
    r"noscript|ol|option|p|picture|pre|q|s|samp|script|section|select|small|source|span|strike|strong|style|sub|"
    r"summary|sup|svg|table|tbody|td|textarea|tfoot|th|thead|time|title|tr|tt|u|ul|var|video|wbr)\b[^<>]*>"
    r"|<![^<>]*>|<\?[^<>]*>",
    re.I,
)
_BOLD = re.compile(r"</?(?:strong|b)(?:\s[^<>]*)?>", re.I)
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
# Control characters (Cc), lone surrogates (Cs) and bidi overrides: invisible, or able to disguise text.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# A netloc with any of these needs urllib's full parse (user info, port, IPv6, a zone id kept in its case).
_NOT_PLAIN_HOST = re.compile(r"[@:\[\]%]")
# A usable URL has no white space, control characters or lone surrogates.
_URL_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_LINE_BREAKS = str.maketrans(dict.fromkeys("\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


@dataclass
class ParsedAnswer:
    """Sections extracted from one Brave answer, before truncation."""

    sections: list[Section]
    warnings: list[WarningItem] = field(default_factory=list)
    altered_query: str | None = None
    more_available: bool | None = None
    summarizer_key: str | None = None


# ------------------------------------------------------------------------------------------ text cleanup


def _cut(text: str, limit: int) -> str:
    """Shorten to ``limit`` characters at a word boundary, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[: max(limit, 0)]
    head = text[: limit - 1]
    if text[limit - 1] != " ":
        space = head.rfind(" ")
        if space >= limit // 2:
            head = head[:space]
    return head.rstrip() + "…"


def _strip_invisible(text: str) -> str:
    return _INVISIBLE.sub("", _ANSI.sub("", text))


def clean_text(value: Any, *, limit: int, decorations: bool = False) -> str:
    """Plain, single-line, bounded text from Brave's HTML-ish strings, safe to show the model."""
    if not isinstance(value, str) or limit <= 0:
        return ""
    text = value
    if "<" in text:  # every markup pattern starts with "<": skip the regex passes for plain text
        text = _COMMENT.sub("", text)
        if decorations:
            text = _BOLD.sub("**", text)
        text = _TAG.sub("", text)
    if "&" in text:
        text = html.unescape(text)
        if "<" in text:
            text = _TAG.sub("", _COMMENT.sub("", text))
    if text.isprintable():
        # No control, format, surrogate or separator characters but the space: nothing to strip or
        # translate, and the space is the only white space left to collapse.
        text = " ".join(text.split())
    else:
        text = " ".join(_strip_invisible(text.replace("\t", " ").translate(_LINE_BREAKS)).split())
    if decorations:
        text = text.replace("****", "")
    out = _cut(text, limit)
    if decorations and out.endswith("…") and out.count("**") % 2 and limit > 3:
        shorter = _cut(text, limit - 2)  # close the bold span the cut opened
        out = shorter[:-1] + "**…" if shorter.endswith("…") and shorter.count("**") % 2 else shorter
    return out


def _text(value: Any, limit: int = FIELD_LIMIT, *, decorations: bool = False) -> str:
    """Like ``clean_text`` but also accepts numbers, which Brave sometimes sends for text fields."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        value = f"{value:g}" if isinstance(value, float) else str(value)
    return clean_text(value, limit=limit, decorations=decorations)


def _one_line(text: str) -> str:
    """One rendered line: no line breaks (line counts stay exact) and no lone surrogates (UTF-8 stays valid)."""
    if text.isascii():
        return text if "\n" not in text and "\r" not in text else text.translate(_LINE_BREAKS)
    return text.translate(_LINE_BREAKS).encode("utf-8", errors="ignore").decode("utf-8")


# ------------------------------------------------------------------------------------------ URLs


def _plain_host(netloc: str) -> str | None:
    """``netloc`` lower-cased when it is a bare host (no user, port, IPv6 brackets or zone), else None.

    For such a netloc this is exactly urllib's ``hostname`` (and ``port``, ``username`` and
    ``password`` are None), without the re-parsing each of those properties does on every access.
    """
    if not netloc or _NOT_PLAIN_HOST.search(netloc):
        return None
    return netloc.lower()


def normalize_url(url: str) -> str:
    """A comparison key so the same page found in two sections is shown once."""
    text = url.strip() if isinstance(url, str) else ""
    try:
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            return text
        plain = _plain_host(parts.netloc)
        if plain is not None:
            return urlunsplit((scheme, plain, parts.path.rstrip("/"), parts.query, ""))
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return text
    if parts.username is not None or parts.password is not None:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        host = f"{userinfo}@{host}"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    if port is not None and port != {"http": 80, "https": 443}[scheme]:
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, host, path, parts.query, ""))


def _http_url(value: Any) -> str | None:
    """The value if it is a usable absolute http(s) URL, else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or _URL_FORBIDDEN.search(text):
        return None
    try:
        parts = urlsplit(text)
        if parts.scheme.lower() not in ("http", "https"):
            return None
        if _plain_host(parts.netloc) is not None:
            return text
        if not parts.hostname:
            return None
        _ = parts.port
    except ValueError:
        return None
    return text


def _host(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = _plain_host(parts.netloc) or parts.hostname or ""
    except ValueError:
        return ""
    return host.removeprefix("www.")


# ------------------------------------------------------------------------------------------ parsing


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


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
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        number = int(value.strip())
    else:
        return None
    return number if 0 <= number < 10**15 else None


def _source(item: Mapping[str, Any], url: str) -> str | None:
    hostname = _text(_map(item.get("meta_url")).get("hostname")).lower().removeprefix("www.")
    return hostname or _host(url) or None


def _extra_snippets(value: Any, decorations: bool) -> list[str] | None:
    if not isinstance(value, list):
        return None
    cleaned = [_text(v, EXTRA_SNIPPET_LIMIT, decorations=decorations) for v in value]
    kept = [v for v in cleaned if v][:MAX_EXTRA_SNIPPETS]
    return kept or None


def _age(item: Mapping[str, Any]) -> str | None:
    return _text(item.get("age")) or _text(item.get("page_age")) or None


def _base(item: Mapping[str, Any], decorations: bool, *, title: Any = None, snippet: Any = None) -> Result | None:
    url = _http_url(item.get("url"))
    if url is None:
        return None
    source = _source(item, url)
    title_text = _text(item.get("title") if title is None else title, TITLE_LIMIT, decorations=decorations)
    raw_snippet = item.get("description") if snippet is None else snippet
    return Result(
        title=title_text or source or url,
        url=url,
        snippet=_text(raw_snippet, SNIPPET_LIMIT, decorations=decorations),
        source=source,
    )


def _web_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    result = _base(item, decorations)
    if result is not None:
        result.age = _age(item)
        result.extra_snippets = _extra_snippets(item.get("extra_snippets"), decorations)
    return result


def _news_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    result = _web_result(item, decorations)
    if result is not None and item.get("breaking") is True:
        result.breaking = True
    return result


def _video_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    result = _base(item, decorations)
    if result is None:
        return None
    video = _map(item.get("video"))
    result.age = _age(item)
    result.duration = _text(video.get("duration"), 40) or None
    result.views = _int(video.get("views"))
    result.creator = _text(video.get("creator")) or None
    result.publisher = _text(video.get("publisher")) or None
    result.thumbnail = _http_url(_map(item.get("thumbnail")).get("src"))
    return result


def _image_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    result = _base(item, decorations, snippet="")
    if result is None:
        return None
    props, thumb = _map(item.get("properties")), _map(item.get("thumbnail"))
    result.image_url = _http_url(props.get("url"))
    result.thumbnail = _http_url(thumb.get("src"))
    width, height = _int(props.get("width")), _int(props.get("height"))
    if width is None or height is None:
        width, height = _int(thumb.get("width")), _int(thumb.get("height"))
    if width is not None and height is not None:
        result.width, result.height = width, height
    result.source = _text(item.get("source")).lower().removeprefix("www.") or result.source
    return result


def _discussion_result(item: Mapping[str, Any], decorations: bool) -> Result | None:
    data = _map(item.get("data"))
    snippet = item.get("description") if _text(item.get("description")) else data.get("top_comment")
    title = data.get("title") if _text(data.get("title")) else item.get("title")
    result = _base(item, decorations, title=title, snippet=snippet)
    if result is None:
        return None
    result.age = _age(item)
    result.forum = _text(data.get("forum_name")) or None
    result.answers = _int(data.get("num_answers"))
    result.votes = _text(data.get("score"), 40) or None
    result.question = _text(data.get("question"), SNIPPET_LIMIT, decorations=decorations) or None
    return result


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
    url = _http_url(item.get("website_url")) or _http_url(item.get("url"))
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
    url = _http_url(item.get("url")) or _http_url(item.get("provider_url"))
    if url is None:
        return None
    result = _base({**item, "url": url}, decorations)
    if result is None:
        return None
    result.address = _text(_map(item.get("postal_address")).get("displayAddress")) or None
    result.phone = _text(_map(item.get("contact")).get("telephone"), 60) or None
    result.rating = _rating(item.get("rating"))
    return result


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
        shown = _cut(_text(answer_type, 60) or type(answer_type).__name__, 60)
        raise ParseError(f'Brave answered with type "{shown}" to a {search_type} search (expected "{expected}").')

    sources = [(key, data.get(key)) for key in WEB_SECTIONS] if search_type == "web" else [(search_type, data)]
    seen: set[str] = set()
    duplicates = 0
    sections: list[Section] = []
    for key, container in sources:
        build = _BUILDERS[key]
        results: list[Result] = []
        for item in _items(container):
            if not isinstance(item, Mapping):
                continue
            result = build(item, text_decorations)
            if result is None:
                continue
            identity = normalize_url((result.image_url or result.url) if key == "images" else result.url)
            if identity in seen:
                duplicates += 1
                continue
            seen.add(identity)
            results.append(result)
        if results:
            sections.append(Section(key=key, label=SECTION_LABELS[key], results=results))

    parsed = ParsedAnswer(sections=sections)
    query = _map(data.get("query"))
    altered = query.get("altered")
    original = query.get("original")
    if isinstance(altered, str) and altered.strip() and altered != original:
        parsed.altered_query = _text(altered, 400) or None
        if parsed.altered_query:
            was = f' instead of "{_cut(_text(original, 400), 100)}"' if _text(original) else ""
            parsed.warnings.append(
                WarningItem(
                    code=WarningCode.QUERY_ALTERED.value,
                    message=f'Brave searched for "{_cut(parsed.altered_query, 100)}"{was}; '
                    "set spellcheck: false to search the exact text.",
                )
            )
    if duplicates:
        parsed.warnings.append(
            WarningItem(
                code=WarningCode.DEDUPLICATED.value,
                message=f"Dropped {duplicates} duplicate result{'' if duplicates == 1 else 's'} "
                "(same URL in an earlier section).",
            )
        )
    more = query.get("more_results_available")
    if isinstance(more, bool):
        parsed.more_available = more
    summarizer_key = _map(data.get("summarizer")).get("key")
    if isinstance(summarizer_key, str) and summarizer_key.strip() and not _INVISIBLE.search(summarizer_key):
        parsed.summarizer_key = summarizer_key
    return parsed


# ------------------------------------------------------------------------------------------ summary line


def _summary_text(
    query: str, search_type: str, offset: int, has_more: bool, counts: list[tuple[str, int]], total: int
) -> str:
    if len(counts) > 1:
        head = f'{total} result{"" if total == 1 else "s"} for "{query}": ' + ", ".join(
            f"{n} {key}" for key, n in counts
        )
    else:
        key = counts[0][0] if counts else search_type
        singular, plural = _NOUNS.get(key, (f"{key} result", f"{key} results"))
        head = f'{total} {singular if total == 1 else plural} for "{query}"'
    notes = [] if search_type == "images" else [f"offset {offset}"]
    if has_more:
        notes.append("more available")
    return _one_line(head + (f" ({', '.join(notes)})" if notes else "") + ".")


def summary_line(envelope: SearchEnvelope) -> str:
    """One sentence: how many results of what, for which query, and whether more exist."""
    meta = envelope.meta
    counts = [(s.key, len(s.results)) for s in envelope.sections if s.results]
    return _summary_text(meta.query, meta.search_type, meta.offset, meta.has_more, counts, meta.returned)


# ------------------------------------------------------------------------------------------ rendering


def _views(views: int) -> str:
    return f"{views:,} view{'' if views == 1 else 's'}"


def _render_result(result: Result, number: int) -> list[str]:
    """The lines of one result; called once per result so truncation stays linear."""
    head = [result.title]
    if result.breaking:
        head.append("BREAKING")
    if result.duration:
        head.append(result.duration)
    if result.views is not None:
        head.append(_views(result.views))
    if result.creator:
        head.append(result.creator)
    if result.width is not None and result.height is not None:
        head.append(f"{result.width}x{result.height}")
    if result.forum:
        head.append(result.forum)
    if result.answers is not None:
        head.append(f"{result.answers} answer{'' if result.answers == 1 else 's'}")
    if result.age:
        head.append(result.age)
    if result.source and result.source != _host(result.url):  # the URL line already names its host
        head.append(result.source)
    lines = [f"{number}. " + " · ".join(head)]
    lines.append(result.url + (f" | image: {result.image_url}" if result.image_url else ""))
    detail = [part for part in (result.snippet, result.address, result.phone, result.rating) if part]
    if detail:
        lines.append(" · ".join(detail))
    lines.extend(f"  + {extra}" for extra in result.extra_snippets or [])
    if result.attributes:
        lines.append("; ".join(f"{pair[0]}: {pair[1]}" for pair in result.attributes if len(pair) >= 2))
    return [_one_line(line) for line in lines]


def _warning_line(warning: WarningItem) -> str:
    return _cut(_one_line(f"! {warning.code}: {warning.message}"), WARNING_LINE_LIMIT)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


@dataclass
class _Part:
    """Lines of text with their byte total (newlines between lines excluded)."""

    lines: list[str]
    nbytes: int

    @classmethod
    def of(cls, lines: list[str]) -> _Part:
        return cls(lines, sum(_utf8_len(line) for line in lines))


def _cut_bytes(text: str, max_bytes: int) -> str:
    if _utf8_len(text) <= max_bytes:
        return text
    return text.encode("utf-8")[: max(max_bytes, 0)].decode("utf-8", errors="ignore")


def _hard_cut(text: str, max_lines: int, max_bytes: int) -> str:
    """Last-resort guarantee for absurd limits: at most ``max_lines`` lines and ``max_bytes`` bytes."""
    if max_lines <= 0:
        return ""
    lines = text.split("\n")[:max_lines]
    return _cut_bytes("\n".join(lines), max_bytes)


def fit_to_limits(envelope: SearchEnvelope, max_lines: int, max_bytes: int) -> tuple[SearchEnvelope, str]:
    """Render the text; drop whole trailing results until it fits; keep structured and text in agreement."""
    meta = envelope.meta
    sections = [s for s in envelope.sections if s.results]

    # Render every result exactly once; the search below only adds up these sizes.
    blocks: list[_Part] = []
    block_section: list[int] = []
    section_start = [0]
    for index, section in enumerate(sections):
        for result in section.results:
            blocks.append(_Part.of(_render_result(result, len(blocks) + 1)))
            block_section.append(index)
        section_start.append(len(blocks))
    total = len(blocks)
    prefix_bytes, prefix_lines = [0], [0]
    for block in blocks:
        prefix_bytes.append(prefix_bytes[-1] + block.nbytes)
        prefix_lines.append(prefix_lines[-1] + len(block.lines))
    headers = [_one_line(f"## {section.label}") for section in sections]
    header_bytes = [0]
    for header in headers:
        header_bytes.append(header_bytes[-1] + _utf8_len(header))

    key_line = _one_line(f"Summarizer key: {envelope.summarizer_key}") if envelope.summarizer_key else None
    warning_lines = [_warning_line(w) for w in envelope.warnings]

    def used_sections(k: int) -> int:
        return block_section[k - 1] + 1 if k else 0

    def with_headers(used: int) -> bool:
        return used > 1 or (used == 1 and sections[0].key != meta.search_type)

    def summary_for(k: int) -> str:
        counts = [
            (section.key, min(len(section.results), k - section_start[index]))
            for index, section in enumerate(sections[: used_sections(k)])
        ]
        return _summary_text(meta.query, meta.search_type, meta.offset, meta.has_more or k < total, counts, k)

    def truncation_for(k: int) -> WarningItem:
        return WarningItem(
            code=WarningCode.OUTPUT_TRUNCATED.value,
            message=f"Showing {k} of {total} results to fit max_lines={max_lines}/max_bytes={max_bytes}; "
            f"raise them (max {MAX_MAX_LINES} lines / {MAX_MAX_BYTES} bytes) or request fewer results.",
        )

    def tail(k: int, n_warnings: int, with_key: bool) -> list[str]:
        lines = [key_line] if key_line and with_key else []
        cut = k < total
        lines.extend(warning_lines[: min(n_warnings, MAX_RENDERED_WARNINGS - (1 if cut else 0))])
        if cut:
            lines.append(_warning_line(truncation_for(k)))
        return lines

    def size(k: int, n_warnings: int, with_key: bool) -> tuple[int, int]:
        fixed = _Part.of([summary_for(k), *tail(k, n_warnings, with_key)])
        used = used_sections(k)
        nbytes = fixed.nbytes + prefix_bytes[k]
        nlines = len(fixed.lines) + prefix_lines[k]
        if with_headers(used):
            nbytes += header_bytes[used]
            nlines += used
        return nbytes + nlines - 1, nlines  # + the newlines between lines

    def fits(k: int, n_warnings: int, with_key: bool) -> bool:
        nbytes, nlines = size(k, n_warnings, with_key)
        return nbytes <= max_bytes and nlines <= max_lines

    n_warnings, with_key = len(warning_lines), True
    shown_count = total
    if not fits(total, n_warnings, with_key):
        # The size only grows with k, so binary-search the longest prefix that fits: O(log n) size checks.
        lo, hi = -1, total - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid, n_warnings, with_key):
                lo = mid
            else:
                hi = mid - 1
        shown_count = max(lo, 0)
        if lo < 0:  # not even the header fits: shed warnings, then the summarizer key line
            while n_warnings and not fits(0, n_warnings, with_key):
                n_warnings -= 1
            if not fits(0, n_warnings, with_key):
                with_key = False

    cut = shown_count < total
    used = used_sections(shown_count)
    new_sections: list[Section] = []
    body: list[str] = []
    for index, section in enumerate(sections[:used]):
        keep = min(len(section.results), shown_count - section_start[index])
        if keep < len(section.results):
            section = section.model_copy(update={"results": section.results[:keep], "section_limit_reached": True})
        new_sections.append(section)
        if with_headers(used):
            body.append(headers[index])
        for block in blocks[section_start[index] : section_start[index] + keep]:
            body.extend(block.lines)

    summary = summary_for(shown_count)
    warnings = list(envelope.warnings)
    if cut:
        warnings.append(truncation_for(shown_count))
    new_meta = meta.model_copy(update={"returned": shown_count, "has_more": meta.has_more or cut})
    fitted = envelope.model_copy(
        update={"sections": new_sections, "meta": new_meta, "summary": summary, "warnings": warnings}
    )

    rest = tail(shown_count, n_warnings, with_key)
    first = summary
    if not fits(shown_count, n_warnings, with_key):  # last resort: cut the summary line
        others = _Part.of(body + rest)
        room = max_bytes - others.nbytes - len(others.lines) - len("…".encode())
        first = _cut_bytes(summary, room) + "…" if room > 0 else ""
    text = "\n".join([first, *body, *rest])
    return fitted, _hard_cut(text, max_lines, max_bytes)


# ------------------------------------------------------------------------------------------ other texts


def _detail_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return _text(value, 120) or None
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return _text(",".join(str(v) for v in value[:10]), 120) or None
    return None


def _first_error(value: Any) -> str | None:
    if not isinstance(value, list) or not value:
        return None
    first = value[0]
    if isinstance(first, str):
        return _text(first, 160) or None
    item = _map(first)
    message = _text(item.get("message") or item.get("msg"), 160)
    loc = item.get("loc")
    where = ".".join(str(part) for part in loc) if isinstance(loc, (list, tuple)) else _text(item.get("field"), 60)
    where = _text(where, 60)
    if message and where and where not in message:
        return f"{where}: {message}"
    return message or where or None


_DETAIL_ORDER = ("field", "status", "brave_code", "retry_after_seconds", "search_type")


def render_error_text(envelope: ErrorEnvelope) -> str:
    """One readable paragraph: code, message, what to do."""
    error = envelope.error
    try:
        advice = ERROR_ADVICE[ErrorCode(error.code)]
    except ValueError:
        advice = ""
    message = _text(error.message, 600) or "no message"
    text = f"{_text(error.code, 60)}: {message} ({'retryable' if error.retryable else 'not retryable'})"
    if advice:
        text += f" — {advice}"
    details = error.details
    pairs: list[str] = []
    for name in _DETAIL_ORDER:
        value = _detail_value(details.get(name))
        if value is not None:
            pairs.append(f"{name}={value}")
    for name in ("errors", "validation_errors"):
        first = _first_error(details.get(name))
        if first:
            pairs.append(f"error={first}")
            break
    for name in sorted(details):
        if name in _DETAIL_ORDER or name in ("errors", "validation_errors") or len(pairs) >= 8:
            continue
        value = _detail_value(details[name])
        if value is not None:
            pairs.append(f"{_text(name, 40)}={value}")
    if pairs:
        text += f" [{'; '.join(pairs)}]"
    # The request's warnings can explain the failure (a dropped filter behind NO_RESULTS, say).
    lines = [text, *(_warning_line(w) for w in envelope.warnings[:MAX_RENDERED_WARNINGS])]
    return "\n".join(lines)


def render_summary_text(envelope: SummaryEnvelope) -> str:
    """The summary as the model should read it: title, text, numbered sources, follow-ups, warnings."""
    lines: list[str] = []
    if envelope.title:
        lines.append(_one_line(envelope.title))
    lines.append(envelope.summary_text)
    if envelope.references:
        lines.append("Sources:")
        lines.extend(_one_line(f"[{ref.number}] {ref.url}") for ref in envelope.references)
    lines.extend(_one_line(f"Follow-up: {item}") for item in envelope.followups)
    lines.extend(_warning_line(w) for w in envelope.warnings)
    return "\n".join(lines)
