"""Readers for Brave Answers' stream: its events through httpx2's bounded SSE reader, then Brave's tags inside the
answer text.

The events are httpx2's ``EventSource`` (the WHATWG rules, linear in what arrives), bounded twice: one event
(a line not yet ended included) by ``EVENT_CAP_BYTES``, the whole stream by ``STREAM_CAP_RESPONSES`` times the
response cap, counted as the bytes arrive; either cap ends the stream with ``UPSTREAM_ERROR`` naming it, having
held no more than the cap. The tag reader takes the text in arbitrary pieces (a delta may end inside a
``<citation>…</citation>`` tag) and gives the same result however it was cut.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2

from brave_search_mcp.models import errors
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.upstream.bodies import EVENT_CAP_BYTES, STREAM_CAP_RESPONSES, read_capped

# Brave's tags (reference/brave-api.md §3.12): JSON payload tags, research-phase tags whose content is
# not part of the answer, and bare markers.
JSON_TAGS = frozenset({"citation", "usage", "enum_item"})
PHASE_TAGS = frozenset({"thinking", "queries", "analyzing", "progress", "blindspots"})
MARKER_TAGS = frozenset({"answer", "enum_start", "enum_end"})
KNOWN_TAGS = JSON_TAGS | PHASE_TAGS | MARKER_TAGS
_LONGEST_TAG = max(len(name) for name in KNOWN_TAGS) + 3  # "</" + name + ">"
MAX_PENDING_CHARS = 256 * 1024  # an unclosed JSON tag larger than this is dropped, not buffered forever
EVENT_STREAM = "text/event-stream"


async def answer_payloads(response: httpx2.Response, max_response_bytes: int) -> AsyncIterator[str]:
    """Each event's ``data`` as it arrives; a JSON answer (Brave's blocking form) is read under the response cap and
    given whole, once. Any other content type is an ``UPSTREAM_ERROR`` naming it. The caller closes ``response``."""
    media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media == "application/json":
        yield (await read_capped(response, max_response_bytes)).decode("utf-8", errors="replace")
        return
    if media != EVENT_STREAM:
        shown = clean_text(media, limit=60) or "no content type"
        raise errors.UpstreamError(
            f"Brave Answers answered {shown}, not an event stream.", status=response.status_code, retryable=False
        )
    cap = STREAM_CAP_RESPONSES * max_response_bytes
    counted = httpx2.Response(
        response.status_code, headers=response.headers, stream=_Counted(response, cap), request=response.request
    )
    try:
        async for event in httpx2.EventSource(counted, max_event_size=EVENT_CAP_BYTES):
            yield event.data
    except httpx2.SSEError:  # the content type was checked above: the one SSEError left is the event's size
        raise _over_cap(f"an event over the {EVENT_CAP_BYTES:,}-byte cap for one event", EVENT_CAP_BYTES) from None


class _Counted(httpx2.AsyncByteStream):
    """A response's body as received, refused as soon as more than ``cap`` bytes came (events and comments alike)."""

    def __init__(self, response: httpx2.Response, cap: int) -> None:
        self._response, self._cap = response, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._response.aiter_raw():
            received += len(chunk)
            if received > self._cap:
                raise _over_cap(f"more than the {self._cap:,}-byte cap for one answer's stream", self._cap)
            yield chunk


def _over_cap(what: str, cap: int) -> errors.UpstreamError:
    return errors.UpstreamError(
        f"Brave Answers sent {what}; the stream was cut there.",
        status=200,
        retryable=False,
        details={"limit_bytes": cap},
    )


Sink = Callable[[str, str], None]  # (kind, value): ("text", s), ("phase", name) or (tag, inner JSON / "")


class TagReader:
    """Answer text → an ordered stream of text pieces and Brave's tags, however the text was split."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._buffer = ""
        self._inside: str | None = None  # the research phase whose content is not answer text

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
