"""One part of a read page for the model: the character budget, paging, the page's links, and the text it reads.

``max_chars`` bounds the content of one part (the outline included); a few header lines, the links asked
for and the "next part" line come on top. A part ends at a paragraph, line or word boundary when one lies
in its second half, so a word is never split. A code block cut by the part boundary is closed at the end
of the part and reopened (with its language) at the start of the next one, so each part is valid markdown.
Several pages read at once share one budget (``split_budget``).
"""

from __future__ import annotations

from typing import Any

from brave_search_mcp.models import errors
from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.models.inputs import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS, ReadArgs
from brave_search_mcp.reader.document import Document, Format, Heading, heading_entries, open_fence
from brave_search_mcp.reader.links import LinkScope, capped, links_for
from brave_search_mcp.render.text import clean_text, one_line

__all__ = ["DEFAULT_MAX_CHARS", "MAX_MAX_CHARS", "MIN_MAX_CHARS", "ReadArgs", "render_read", "split_budget"]
OUTLINE_SHARE = 4  # the outline takes at most a quarter of a part's budget...
OUTLINE_MAX_CHARS = 2_000  # ...and never more than this
_LABELS = {"html": "web page", "pdf": "PDF", "text": "plain text", "markdown": "markdown", "json": "JSON"}


def effective_max_chars(value: int, warnings: list[dict[str, str]], pages: int = 1) -> int:
    """``max_chars`` inside 500 (per page) to 50,000, with an OUTPUT_LIMIT_CLAMPED warning when it was moved."""
    low = MIN_MAX_CHARS * pages
    clamped = min(max(value, low), MAX_MAX_CHARS)
    if clamped != value:
        warnings.append(
            {
                "code": WarningCode.OUTPUT_LIMIT_CLAMPED.value,
                "message": f"max_chars {value} is outside {low}-{MAX_MAX_CHARS}; {clamped} was used.",
            }
        )
    return clamped


def split_budget(needs: list[int | None], total: int) -> list[int]:
    """Each page's share of one budget: even shares, and what a page needs less than its share goes to the others
    (a failed page, ``None``, needs nothing). Shares never add up to more than ``total``."""
    shares = [0] * len(needs)
    waiting = [index for index, need in enumerate(needs) if need is not None]
    left = total
    while waiting:
        share = left // len(waiting)
        small = [index for index in waiting if (needs[index] or 0) <= share]
        if not small:
            for index in waiting:
                shares[index] = share
            break
        for index in small:
            shares[index] = needs[index] or 0
            left -= shares[index]
        waiting = [index for index in waiting if index not in small]
    return shares


def body_length(document: Document, format: Format) -> int:
    """How many characters the whole page has in ``format``: what it needs of a shared budget to be read at once."""
    return len(document.rendered(document.markdown, format))


def render_read(
    document: Document,
    *,
    start_char: int = 0,
    max_chars: int = DEFAULT_MAX_CHARS,
    format: Format = "markdown",
    section: str | None = None,
    links: LinkScope | None = None,
    share: bool = False,
) -> tuple[dict[str, Any], str]:
    """One part of ``document`` as ``(structured answer, text for the model)``; pure, so paging is cheap.

    ``share``: ``max_chars`` is this page's share of a several-page read (not clamped; the next-part hint
    names the page's URL). Raises INVALID_ARGUMENT for a ``section`` no heading matches or a ``start_char``
    past the end.
    """
    warnings: list[dict[str, str]] = []
    budget = max(max_chars, 1) if share else effective_max_chars(max_chars, warnings)
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
    if document.truncated or (document.notes and not document.render_note):  # an unrendered shell: said below
        warnings.append({"code": WarningCode.PAGE_INCOMPLETE.value, "message": _incomplete(document)})
    if document.render_note:
        warnings.append({"code": WarningCode.JAVASCRIPT_NOT_RENDERED.value, "message": document.render_note})
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
        "rendered": document.drawn,
        "headings": heading_entries(headings),
        "content": part,
        "warnings": warnings,
    }
    link_lines: list[str] = []
    if links is not None:
        shown = links_for(document.links, document.content_links, links, document.final_url)
        link_lines, left_out = capped(shown, markdown=format == "markdown")
        structured["links"] = [{"text": link.text, "url": link.url} for link in shown[: len(link_lines)]]
        structured["links_total"] = len(shown)
        link_lines.insert(0, _links_title(links, len(shown), left_out, document.kind))
    return structured, _text(document, structured, outline, part, warnings, link_lines, share)


def _links_title(scope: LinkScope, total: int, left_out: int, kind: str) -> str:
    """The line above the links: which ones, how many, and how many the caps left out."""
    if kind != "html":
        return "Links: none (only web pages list their links)."
    which = "in the content, on this site" if scope == "same_site" else "all, navigation and footer included"
    more = f"; {left_out} more not shown" if left_out else ""
    return f"Links ({which}): {total}{more}."


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
    what = [] if document.render_note else list(document.notes)  # a shell's empty text is JAVASCRIPT_NOT_RENDERED's
    if document.truncated:
        what.append("the page is longer than the reader keeps; its end is missing")
    return "; ".join(what)[:300] + "."


def _text(
    document: Document,
    answer: dict[str, Any],
    outline: str,
    part: str,
    warnings: list[dict[str, str]],
    link_lines: list[str],
    share: bool,
) -> str:
    """The compact rendering the model reads: header lines, outline, the part, its links, how to get the next part."""
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
    if link_lines:
        out = out.rstrip("\n") + "\n\n" + "\n".join(link_lines)
    if answer["next_start_char"] is not None:
        scope = f", section={answer['section']!r}" if answer["section"] else ""
        which = f"url={one_line(document.url)!r}" if share else "the same url"
        out += (
            f"\n\n[{total - end} more characters. For the next part call read_url with {which} and "
            f"format={answer['format']!r}{scope}, start_char={end}.]"
        )
    for warning in warnings:
        out += f"\n! {warning['code']}: {warning['message']}"
    return out
