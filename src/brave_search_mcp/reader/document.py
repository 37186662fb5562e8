"""A read page as a value: its metadata, its content as markdown, its headings, sections, and cache bytes.

The document is what the shared cache keeps (``to_bytes`` / ``from_bytes``), so paging through a long
page and picking one of its sections never fetch the page again. Headings are found in the markdown
outside code fences; a section runs from its heading to the next heading of the same or a higher level.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from brave_search_mcp.models import errors
from brave_search_mcp.reader.content import Kind
from brave_search_mcp.reader.links import Link

Format = Literal["markdown", "text"]
FORMAT_VERSION = 3  # 2: the hosts and addresses a page was read from, its links; 3: drawn and render_note
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_QUOTE = re.compile(r"^[ \t]{0,3}> ?", re.M)
_TABLE_RULE = re.compile(r"^\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Heading:
    """One heading of the page: its level (1-6), its text, and where its line starts in the markdown."""

    level: int
    text: str
    start: int


@dataclass(frozen=True)
class Document:
    """A page as read: where it came from, what it says about itself, and its main content as markdown."""

    url: str
    final_url: str
    kind: Kind
    content_type: str
    markdown: str
    title: str | None = None
    site: str | None = None
    published: str | None = None
    truncated: bool = False  # the content was longer than the reader keeps (MAX_DOCUMENT_CHARS)
    notes: tuple[str, ...] = field(default=())  # what the reader could not do (PDF pages it could not read)
    hops: tuple[tuple[str, tuple[str, ...]], ...] = ()  # hosts on the way and the addresses each was read from
    links: tuple[Link, ...] = ()  # an HTML page's links in page order (``links.page_links``)
    content_links: tuple[Link, ...] = ()  # the links its main text kept, in the text's order
    drawn: bool = False  # rendered in a headless browser (an app shell: ``shell.py``), extracted from its DOM
    render_note: str | None = None  # an app shell left unrendered: why, and how to have it rendered

    def to_bytes(self) -> bytes:
        """Compact UTF-8 JSON for the shared cache (a version field lets a new layout ignore old entries)."""
        data = asdict(self)
        data["notes"] = list(self.notes)
        return json.dumps({"v": FORMAT_VERSION, **data}, ensure_ascii=False, separators=(",", ":")).encode()

    @staticmethod
    def from_bytes(raw: bytes) -> Document | None:
        """The document ``to_bytes`` wrote, or None for anything else (an old layout, a damaged entry)."""
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.pop("v", None) != FORMAT_VERSION:
                return None
            data["notes"] = tuple(data.get("notes") or ())
            data["hops"] = tuple((str(host), tuple(map(str, addresses))) for host, addresses in data.get("hops") or ())
            for name in ("links", "content_links"):
                data[name] = tuple(Link(**link) for link in data.get(name) or ())
            return Document(**data)
        except (ValueError, TypeError):
            return None

    def headings(self) -> list[Heading]:
        """The page's outline: markdown headings outside code fences (plain text and JSON have none)."""
        if self.kind in ("text", "json"):
            return []
        return find_headings(self.markdown)

    def section(self, wanted: str) -> tuple[Heading, str]:
        """The heading that best matches ``wanted`` and its section's markdown; INVALID_ARGUMENT if none does."""
        headings = self.headings()
        key = _key(wanted)
        exact = [h for h in headings if _key(h.text) == key]
        loose = exact or [h for h in headings if key and key in _key(h.text)]
        if not loose:
            names = ", ".join(f'"{h.text[:60]}"' for h in headings[:20]) or "none"
            raise errors.InvalidArgument(
                f"No heading matches section {wanted[:80]!r}. Headings on this page: {names}.",
                field="section",
                headings=[h.text for h in headings[:50]],
            )
        chosen = loose[0]
        end = len(self.markdown)
        for later in headings:
            if later.start > chosen.start and later.level <= chosen.level:
                end = later.start
                break
        return chosen, self.markdown[chosen.start : end].rstrip("\n")

    def rendered(self, markdown: str, fmt: Format) -> str:
        """``markdown`` (the whole content or one section) in the format asked for."""
        if fmt == "markdown":
            return markdown
        if self.kind == "text":
            return markdown
        if self.kind == "json":
            return strip_fences(markdown)
        return markdown_to_text(markdown)


def _key(text: str) -> str:
    """How headings are compared: case-folded, white space folded, markdown decoration dropped."""
    plain = _INLINE_CODE.sub(r"\1", _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", text)))
    return _SPACE.sub(" ", plain).strip().strip(":").casefold()


def fence_walk(markdown: str) -> Iterator[tuple[str, str | None, bool]]:
    """Each line, the opening line of the fenced code block open after it (None outside one), and whether the line
    opened or closed that block (a fence-looking line of another kind inside a block is content)."""
    fence: str | None = None
    opener_line: str | None = None
    for line in markdown.split("\n"):
        match = _FENCE.match(line)
        toggles = False
        if match is not None:
            marker = match.group(1)
            if fence is None:
                fence, opener_line, toggles = marker, line.strip(), True
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence, opener_line, toggles = None, None, True
        yield line, opener_line, toggles


def find_headings(markdown: str) -> list[Heading]:
    """Every ATX heading outside fenced code, with the offset of its line."""
    found: list[Heading] = []
    offset = 0
    for line, opener, toggles in fence_walk(markdown):
        match = _HEADING.match(line) if opener is None and not toggles else None
        if match is not None:
            text = _LINK.sub(r"\1", match.group(2)).strip()
            if text:
                found.append(Heading(len(match.group(1)), text, offset))
        offset += len(line) + 1
    return found


def open_fence(markdown: str, end: int) -> str | None:
    """The opening line of the fenced code block still open at offset ``end``, or None."""
    last = deque(fence_walk(markdown[:end]), maxlen=1)  # the state after the last line is the answer
    return last[0][1] if last else None


def strip_fences(markdown: str) -> str:
    """Fenced code without its fence lines (what a JSON document is in text format)."""
    return "\n".join(line for line in markdown.split("\n") if _FENCE.match(line) is None)


def markdown_to_text(markdown: str) -> str:
    """Plain text from the reader's markdown: headings, links, emphasis, quotes and fences lose their marks.

    Code inside fences is kept exactly; list markers stay (they carry structure a reader needs).
    """
    out: list[str] = []
    for line, opener, toggles in fence_walk(markdown):
        if toggles:
            continue
        if opener is not None:
            out.append(line)
            continue
        heading = _HEADING.match(line)
        if heading is not None:
            line = heading.group(2)
        if _TABLE_RULE.match(line) and "-" in line:
            continue
        line = _QUOTE.sub("", line)
        line = _INLINE_CODE.sub(r"\1", _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", line)))
        if line.startswith("|") and line.rstrip().endswith("|"):
            line = " | ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
        out.append(line)
    return "\n".join(out)


def heading_entries(headings: list[Heading], limit: int = 200) -> list[dict[str, Any]]:
    """The outline for the structured answer: level and text of up to ``limit`` headings."""
    return [{"level": h.level, "text": h.text} for h in headings[:limit]]
