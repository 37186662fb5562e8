"""Incremental readers for Brave Answers' stream: SSE framing, then Brave's tags inside the answer text.

Both readers take input in arbitrary pieces (a network chunk may end inside a UTF-8 character, a
line, an event or a ``<citation>…</citation>`` tag) and give the same result however it was cut.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from typing import Any

_LINE_END = re.compile(r"\r\n|\r|\n")
# Brave's tags (reference/brave-api.md §3.12): JSON payload tags, research-phase tags whose content is
# not part of the answer, and bare markers.
JSON_TAGS = frozenset({"citation", "usage", "enum_item"})
PHASE_TAGS = frozenset({"thinking", "queries", "analyzing", "progress", "blindspots"})
MARKER_TAGS = frozenset({"answer", "enum_start", "enum_end"})
KNOWN_TAGS = JSON_TAGS | PHASE_TAGS | MARKER_TAGS
_LONGEST_TAG = max(len(name) for name in KNOWN_TAGS) + 3  # "</" + name + ">"
MAX_PENDING_CHARS = 256 * 1024  # an unclosed JSON tag larger than this is dropped, not buffered forever


class SseDecoder:
    """Bytes → SSE ``data`` payloads (one string per event), per the WHATWG event-stream rules."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        """Decode ``chunk`` and return the payloads of every event it completed."""
        return self._lines(self._utf8.decode(chunk), final=False)

    def close(self) -> list[str]:
        """End of stream: finish the last line; an event never ended by a blank line is dropped (per spec)."""
        return self._lines(self._utf8.decode(b"", final=True), final=True)

    def _lines(self, text: str, *, final: bool) -> list[str]:
        buffer = self._pending + text
        events: list[str] = []
        start = 0
        for match in _LINE_END.finditer(buffer):
            if match.group() == "\r" and match.end() == len(buffer) and not final:
                break  # a "\r" at the end may be the first half of "\r\n": wait for the next chunk
            self._line(buffer[start : match.start()], events)
            start = match.end()
        self._pending = buffer[start:]
        if final and self._pending:
            self._line(self._pending, events)
            self._pending = ""
        return events

    def _line(self, line: str, events: list[str]) -> None:
        if not line:
            if self._data:
                events.append("\n".join(self._data))
                self._data = []
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)


Sink = Callable[[str, str], None]  # (kind, value): ("text", s), ("phase", name) or (tag, inner JSON / "")


class TagReader:
    """Answer text → an ordered stream of text pieces and Brave's tags, however the text was split."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._buffer = ""
        self._inside: str | None = None  # the research phase whose content is not answer text
        self.dropped_tags = 0

    def feed(self, delta: str) -> None:
        """Consume one content delta."""
        self._buffer += delta
        self._drain(final=False)

    def close(self) -> None:
        """End of content: a tag left open is dropped; a lone ``<`` is text."""
        self._drain(final=True)

    def _emit(self, text: str) -> None:
        if text and self._inside is None:
            self._sink("text", text)

    def _could_be_tag(self, pending: str) -> bool:
        name = pending[2:] if pending.startswith("</") else pending[1:]
        return len(pending) <= _LONGEST_TAG and any(tag.startswith(name) for tag in KNOWN_TAGS)

    def _drain(self, *, final: bool) -> None:
        while self._buffer:
            buffer = self._buffer
            lt = buffer.find("<")
            if lt < 0:
                self._emit(buffer)
                self._buffer = ""
                return
            if lt:
                self._emit(buffer[:lt])
                buffer = self._buffer = buffer[lt:]
            gt = buffer.find(">")
            if gt < 0:
                if not final and self._could_be_tag(buffer):
                    return  # wait for the rest of the tag
                self._emit("<")
                self._buffer = buffer[1:]
                continue
            name = buffer[1:gt]
            closing = name.startswith("/")
            bare = name[1:] if closing else name
            if bare not in KNOWN_TAGS:
                self._emit("<")
                self._buffer = buffer[1:]
                continue
            rest = buffer[gt + 1 :]
            if closing:
                if self._inside == bare:
                    self._inside = None
                self._buffer = rest
                continue
            if bare in JSON_TAGS:
                end = rest.find(f"</{bare}>")
                if end < 0:
                    if not final and len(rest) < MAX_PENDING_CHARS:
                        return
                    self.dropped_tags += 1
                    self._buffer = ""
                    return
                self._sink(bare, rest[:end])
                self._buffer = rest[end + len(bare) + 3 :]
                continue
            if bare in PHASE_TAGS:
                self._inside = bare
                self._sink("phase", bare)
            elif bare == "answer":
                self._sink("phase", "answer")
            else:
                self._sink(bare, "")
            self._buffer = rest


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None when it is anything else."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
