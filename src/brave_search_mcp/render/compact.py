"""Envelopes to the compact text the model reads, within byte and line bounds.

The text is what the model pays for on every call, so it is terse: one title line, one URL line,
one snippet line per result, numbered across sections so a result can be cited as "result 12".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brave_search_mcp.config import MAX_MAX_BYTES, MAX_MAX_LINES
from brave_search_mcp.models.envelopes import DIRECT_ANSWERS, ErrorEnvelope, Result, Section, WarningItem
from brave_search_mcp.models.errors import ErrorCode, WarningCode, advice_for
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.models.summary import SummaryEnvelope
from brave_search_mcp.render.text import clean_text, cut, number_text, one_line, site_of

WARNING_LINE_LIMIT = 300
MAX_RENDERED_WARNINGS = 20

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
    "answers": ("answer", "answers"),
    "suggestions": ("suggestion", "suggestions"),
}


# Section keys that are plural nouns, as one of them is said ("1 answer", not "1 answers").
_ONE: dict[str, str] = {
    "answers": "answer",
    "suggestions": "suggestion",
    "videos": "video",
    "images": "image",
    "discussions": "discussion",
    "locations": "location",
}


def _text(value: Any, limit: int) -> str:
    return clean_text(number_text(value), limit=limit)


# ------------------------------------------------------------------------------------------ summary line


def _summary_text(
    query: str, search_type: str, offset: int, has_more: bool, counts: list[tuple[str, int]], total: int
) -> str:
    if len(counts) > 1:
        head = f'{total} result{"" if total == 1 else "s"} for "{query}": ' + ", ".join(
            f"{n} {_ONE.get(key, key) if n == 1 else key}" for key, n in counts
        )
    else:
        key = counts[0][0] if counts else search_type
        singular, plural = _NOUNS.get(key, (f"{key} result", f"{key} results"))
        head = f'{total} {singular if total == 1 else plural} for "{query}"'
    notes = [] if search_type == "images" else [f"offset {offset}"]
    if has_more:
        notes.append("more available")
    return one_line(head + (f" ({', '.join(notes)})" if notes else "") + ".")


# ------------------------------------------------------------------------------------------ rendering


def _views(views: int) -> str:
    return f"{views:,} view{'' if views == 1 else 's'}"


def _day(published: str | None) -> str | None:
    """The day of an ISO-8601 publication time (``2025-03-14T09:30:00+00:00`` → ``2025-03-14``)."""
    day = (published or "")[:10]
    return day if len(day) == 10 and day[4] == "-" and day[7] == "-" else None


def _render_result(result: Result, number: int | None) -> list[str]:
    """The lines of one result (``number`` None: a direct answer, marked ``-``); called once per result so
    truncation stays linear."""
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
    age = result.age or _day(result.published_date)  # SearXNG gives a date where Brave gives an age
    if age:
        head.append(age)
    if result.site and result.site != site_of(result.url):  # the URL line already names its host
        head.append(result.site)
    lines = [("- " if number is None else f"{number}. ") + " · ".join(head)]
    if result.url or result.image_url:  # an answer or a suggested search has no page
        lines.append(result.url + (f" | image: {result.image_url}" if result.image_url else ""))
    detail = [part for part in (result.snippet, result.address, result.phone, result.rating) if part]
    if detail:
        lines.append(" · ".join(detail))
    lines.extend(f"  + {extra}" for extra in result.extra_snippets or [])
    if result.attributes:
        lines.append("; ".join(f"{pair[0]}: {pair[1]}" for pair in result.attributes if len(pair) >= 2))
    if "".join(lines).isprintable():  # the common case: no line break or lone surrogate in any line
        return lines
    return [one_line(line) for line in lines]


def _warning_line(warning: WarningItem) -> str:
    return cut(one_line(f"! {warning.code}: {warning.message}"), WARNING_LINE_LIMIT)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


@dataclass
class _Part:
    """Lines of text with their byte total (newlines between lines excluded)."""

    lines: list[str]
    nbytes: int

    @classmethod
    def of(cls, lines: list[str]) -> _Part:
        return cls(lines, _utf8_len("".join(lines)))


def _cut_bytes(text: str, max_bytes: int) -> str:
    if _utf8_len(text) <= max_bytes:
        return text
    return text.encode("utf-8")[: max(max_bytes, 0)].decode("utf-8", errors="ignore")


def _hardcut(text: str, max_lines: int, max_bytes: int) -> str:
    """Last-resort guarantee for absurd limits: at most ``max_lines`` lines and ``max_bytes`` bytes."""
    if max_lines <= 0:
        return ""
    if text.count("\n") < max_lines and _utf8_len(text) <= max_bytes:  # the usual case: it already fits
        return text
    lines = text.split("\n")[:max_lines]
    return _cut_bytes("\n".join(lines), max_bytes)


def _direct_part(direct: list[Section], max_lines: int, max_bytes: int) -> tuple[list[Section], list[str]]:
    """The direct answers (not results: shown above them whatever max_results says, unnumbered) and their lines,
    within half the text's lines and bytes: trailing entries go first, the results keep the other half."""
    kept = [section.model_copy(update={"results": list(section.results)}) for section in direct]
    while True:
        lines = [
            line
            for section in kept
            for line in (
                one_line(f"## {section.label}"),
                *(x for r in section.results for x in _render_result(r, None)),
            )
        ]
        if not kept or (len(lines) <= max_lines // 2 and _utf8_len("\n".join(lines)) <= max_bytes // 2):
            return kept, lines
        kept[-1].results.pop()
        kept[-1].section_limit_reached = True
        kept = [section for section in kept if section.results]


def fit_to_limits(envelope: SearchEnvelope, max_lines: int, max_bytes: int) -> tuple[SearchEnvelope, str]:
    """Render the text; drop whole trailing results until it fits; keep structured and text in agreement."""
    meta = envelope.meta
    sections = [s for s in envelope.sections if s.results]

    # Render every result exactly once; the search below only adds up these sizes.
    blocks: list[_Part] = []
    block_section: list[int] = []
    section_start = [0]
    direct, direct_lines = _direct_part([s for s in sections if s.key in DIRECT_ANSWERS], max_lines, max_bytes)
    sections = [s for s in sections if s.key not in DIRECT_ANSWERS]
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
    headers = [one_line(f"## {section.label}") for section in sections]
    header_bytes = [0]
    for header in headers:
        header_bytes.append(header_bytes[-1] + _utf8_len(header))

    key_line = one_line(f"Summarizer key: {envelope.summarizer_key}") if envelope.summarizer_key else None
    warning_lines = [_warning_line(w) for w in envelope.warnings]

    def used_sections(k: int) -> int:
        return block_section[k - 1] + 1 if k else 0

    def with_headers(used: int) -> bool:
        return used > 1 or (used == 1 and (sections[0].key != meta.search_type or bool(direct_lines)))

    summaries: dict[int, str] = {}

    def summary_for(k: int) -> str:
        if k not in summaries:
            counts = [
                (section.key, min(len(section.results), k - section_start[index]))
                for index, section in enumerate(sections[: used_sections(k)])
            ]
            query, offset, has_more = meta.query, meta.offset, meta.has_more or k < total
            if not total and direct:  # only direct answers (a filter naming them): say what is there, not "0 web"
                counts = [(section.key, len(section.results)) for section in direct]
                summaries[k] = _summary_text(
                    query, meta.search_type, offset, has_more, counts, sum(n for _, n in counts)
                )
            else:
                summaries[k] = _summary_text(query, meta.search_type, offset, has_more, counts, k)
        return summaries[k]

    def truncation_for(k: int) -> WarningItem:
        return WarningItem(
            code=WarningCode.OUTPUT_TRUNCATED.value,
            message=f"Showing {k} of {total} results to fit max_lines={max_lines}/max_bytes={max_bytes}; "
            f"raise them (max {MAX_MAX_LINES} lines / {MAX_MAX_BYTES} bytes) or request fewer results.",
        )

    def tail(k: int, n_warnings: int, with_key: bool) -> list[str]:
        lines = [key_line] if key_line and with_key else []
        trimmed = k < total
        lines.extend(warning_lines[: min(n_warnings, MAX_RENDERED_WARNINGS - (1 if trimmed else 0))])
        if trimmed:
            lines.append(_warning_line(truncation_for(k)))
        return lines

    sizes: dict[tuple[int, int, bool], tuple[int, int]] = {}  # the final check repeats the first one's question

    def size(k: int, n_warnings: int, with_key: bool) -> tuple[int, int]:
        known = sizes.get((k, n_warnings, with_key))
        if known is not None:
            return known
        fixed = _Part.of([summary_for(k), *direct_lines, *tail(k, n_warnings, with_key)])
        used = used_sections(k)
        nbytes = fixed.nbytes + prefix_bytes[k]
        nlines = len(fixed.lines) + prefix_lines[k]
        if with_headers(used):
            nbytes += header_bytes[used]
            nlines += used
        sizes[k, n_warnings, with_key] = found = (nbytes + nlines - 1, nlines)  # + the newlines between lines
        return found

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

    trimmed = shown_count < total
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
    if trimmed:
        warnings.append(truncation_for(shown_count))
    new_meta = meta.model_copy(update={"returned": shown_count, "has_more": meta.has_more or trimmed})
    fitted = envelope.model_copy(
        update={"sections": [*new_sections, *direct], "meta": new_meta, "summary": summary, "warnings": warnings}
    )

    rest = tail(shown_count, n_warnings, with_key)
    first = summary
    if not fits(shown_count, n_warnings, with_key):  # last resort: cut the summary line
        others = _Part.of(direct_lines + body + rest)
        room = max_bytes - others.nbytes - len(others.lines) - len("…".encode())
        first = _cut_bytes(summary, room) + "…" if room > 0 else ""
    text = "\n".join([first, *direct_lines, *body, *rest])
    return fitted, _hardcut(text, max_lines, max_bytes)


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
    item = first if isinstance(first, dict) else {}
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
        advice = advice_for(ErrorCode(error.code), envelope.meta.provider, envelope.meta.tool)
    except ValueError:
        advice = ""
    advice = _text(error.details.get("what_to_do"), 200) or advice  # this error's own advice wins over the code's
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
        if name in _DETAIL_ORDER or name in ("errors", "validation_errors", "what_to_do") or len(pairs) >= 8:
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
        lines.append(one_line(envelope.title))
    lines.append(envelope.summary_text)
    if envelope.references:
        lines.append("Sources:")
        lines.extend(one_line(f"[{ref.number}] {ref.url}") for ref in envelope.references)
    lines.extend(one_line(f"Follow-up: {item}") for item in envelope.followups)
    lines.extend(_warning_line(w) for w in envelope.warnings)
    return "\n".join(lines)
