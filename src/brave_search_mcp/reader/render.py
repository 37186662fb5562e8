"""One part of a read page for the model: the arguments, the character budget, paging, and the text it reads.

``max_chars`` bounds the content of one part (the outline included); a few header lines and the
"next part" line come on top. A part ends at a paragraph, line or word boundary when one lies in its
second half, so a word is never split. A code block cut by the part boundary is closed at the end of
the part and reopened (with its language) at the start of the next one, so each part is valid markdown.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from brave_search_mcp.models import errors
from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.models.inputs import StrictInput
from brave_search_mcp.reader.document import Document, Format, Heading, heading_entries, open_fence
from brave_search_mcp.render.text import clean_text, one_line

# 500 characters hold a heading and a paragraph or two: less cannot show a page usefully. 50,000 (about
# 12,000 tokens) is a whole long documentation page; past that an agent should page or pick a section
# rather than spend a turn's context on one page. The default 8,000 matches brave_llm_context's budget.
DEFAULT_MAX_CHARS = 8_000
MIN_MAX_CHARS = 500
MAX_MAX_CHARS = 50_000
OUTLINE_SHARE = 4  # the outline takes at most a quarter of a part's budget...
OUTLINE_MAX_CHARS = 2_000  # ...and never more than this
_LABELS = {"html": "web page", "pdf": "PDF", "text": "plain text", "markdown": "markdown", "json": "JSON"}


class ReadArgs(StrictInput):
    """Arguments of ``read_url`` (strict like every tool's input: unknown fields and wrong types are refused)."""

    url: str = Field(min_length=1, max_length=4096, description="The http(s) page to read.")
    start_char: int = Field(0, ge=0, description="Where to start: next_start_char of the previous part.")
    max_chars: int = Field(DEFAULT_MAX_CHARS, ge=1, description="Characters per part (500-50000).")
    format: Literal["markdown", "text"] = Field(
        "markdown", description="markdown keeps headings, lists, links and code; text drops the marks."
    )
    section: str | None = Field(
        None, min_length=1, max_length=300, description="A heading's text: read only that section."
    )


def effective_max_chars(value: int, warnings: list[dict[str, str]]) -> int:
    """``max_chars`` inside 500-50,000, with an OUTPUT_LIMIT_CLAMPED warning when it was moved."""
    clamped = min(max(value, MIN_MAX_CHARS), MAX_MAX_CHARS)
    if clamped != value:
        warnings.append(
            {
                "code": WarningCode.OUTPUT_LIMIT_CLAMPED.value,
                "message": f"max_chars {value} is outside {MIN_MAX_CHARS}-{MAX_MAX_CHARS}; {clamped} was used.",
            }
        )
    return clamped


def render_read(
    document: Document,
    *,
    start_char: int = 0,
    max_chars: int = DEFAULT_MAX_CHARS,
    format: Format = "markdown",
    section: str | None = None,
) -> tuple[dict[str, Any], str]:
    """One part of ``document`` as ``(structured answer, text for the model)``; pure, so paging is cheap.

    Raises INVALID_ARGUMENT for a ``section`` no heading matches or a ``start_char`` past the end.
    """
    warnings: list[dict[str, str]] = []
    budget = effective_max_chars(max_chars, warnings)
    headings = document.headings()
    chosen: Heading | None = None
    markdown = document.markdown
    if section is not None:
        chosen, markdown = document.section(section)
    body = document.rendered(markdown, format)
    total = len(body)
    if start_char > total or (start_char == total and total > 0):
        raise errors.InvalidArgument(
            f"start_char {start_char} is past the end: this {'section' if chosen else 'page'} has {total} characters.",
            field="start_char",
            total_chars=total,
        )
    outline = ""
    if start_char == 0 and chosen is None and total > budget and len(headings) > 1:
        outline = _outline(headings, min(budget // OUTLINE_SHARE, OUTLINE_MAX_CHARS))
    end = _cut_point(body, start_char, budget - len(outline))
    part = body[start_char:end]
    if format == "markdown":
        reopened = open_fence(body, start_char) if start_char else None
        if reopened is not None:
            part = f"{reopened}\n{part}"
        still_open = open_fence(body, end) if end < total else None
        if still_open is not None:
            part = f"{part.rstrip(chr(10))}\n{_closing(still_open)}"
    next_start = end if end < total else None
    if document.truncated or document.notes:
        warnings.append({"code": WarningCode.PAGE_INCOMPLETE.value, "message": _incomplete(document)})
    structured: dict[str, Any] = {
        "title": document.title,
        "url": document.url,
        "final_url": document.final_url,
        "site": document.site,
        "published": document.published,
        "content_type": document.content_type,
        "format": format,
        "section": chosen.text if chosen else None,
        "start_char": start_char,
        "end_char": end,
        "total_chars": total,
        "next_start_char": next_start,
        "headings": heading_entries(headings),
        "content": part,
        "warnings": warnings,
    }
    return structured, _text(document, structured, outline, part, warnings)


def _cut_point(body: str, start: int, room: int) -> int:
    """Where a part that starts at ``start`` ends: within ``room`` characters, at the best boundary in its 2nd half."""
    room = max(room, 1)
    if start + room >= len(body):
        return len(body)
    window = body[start : start + room]
    floor = room // 2
    for mark in ("\n\n", "\n", " "):
        at = window.rfind(mark)
        if at >= floor:
            return start + at + len(mark)
    return start + room


def _closing(opener: str) -> str:
    """The fence that closes a block opened by ``opener`` (same character, same length)."""
    char = opener[0]
    return char * (len(opener) - len(opener.lstrip(char)))


def _outline(headings: list[Heading], limit: int) -> str:
    """The page's headings as an indented list, cut to ``limit`` characters with a count of what was left out."""
    lines = ["Outline (pass a heading as section to read just that part):"]
    used = len(lines[0]) + 1
    top = min(heading.level for heading in headings)
    for index, heading in enumerate(headings):
        line = f"{'  ' * (heading.level - top)}- {clean_text(heading.text, limit=100)}"
        rest = len(headings) - index
        if used + len(line) + 1 > limit - 24:
            lines.append(f"  … {rest} more heading{'s' if rest != 1 else ''}")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) + "\n\n"


def _incomplete(document: Document) -> str:
    what = list(document.notes)
    if document.truncated:
        what.append("the page is longer than the reader keeps; its end is missing")
    return "; ".join(what)[:300] + "."


def _text(document: Document, answer: dict[str, Any], outline: str, part: str, warnings: list[dict[str, str]]) -> str:
    """The compact rendering the model reads: header lines, outline, the part, how to get the next part."""
    title = clean_text(document.title or "", limit=200) or "(untitled)"
    lines = [f"# {title}" if answer["format"] == "markdown" else title, f"URL: {one_line(document.final_url)}"]
    if document.final_url != document.url:
        lines.append(f"Redirected from: {one_line(document.url)}")
    facts = [f"Site: {clean_text(document.site, limit=80)}" if document.site else ""]
    facts.append(f"Published: {document.published}" if document.published else "")
    facts.append(f"Type: {_LABELS.get(document.kind, document.kind)}")
    lines.append(" · ".join(fact for fact in facts if fact))
    if answer["section"]:
        lines.append(f"Section: {clean_text(answer['section'], limit=120)}")
    start, end, total = answer["start_char"], answer["end_char"], answer["total_chars"]
    if start > 0 or answer["next_start_char"] is not None:
        lines.append(f"Part: characters {start}-{end} of {total}")
    out = "\n".join(lines) + "\n\n" + outline + part
    if answer["next_start_char"] is not None:
        scope = f", section={answer['section']!r}" if answer["section"] else ""
        out += (
            f"\n\n[{total - end} more characters. For the next part call read_url with the same url and "
            f"format={answer['format']!r}{scope}, start_char={end}.]"
        )
    for warning in warnings:
        out += f"\n! {warning['code']}: {warning['message']}"
    return out
