"""Readers for Brave Answers' stream: its events through httpx2's bounded SSE reader, then Brave's tags inside the
answer text.

The events are httpx2's ``EventSource`` (the WHATWG rules, linear in what arrives), bounded twice: one event
(a line not yet ended included) by ``EVENT_CAP_BYTES``, the whole stream by ``STREAM_CAP_RESPONSES`` times the
response cap, counted as the bytes decode (a gzip stream is counted by what it inflates to, never by its wire size);
either cap ends the stream with ``UPSTREAM_ERROR`` naming it, having held no more than the cap. The tag reader takes
the text in arbitrary pieces (a delta may end inside a ``<citation>…</citation>`` tag) and gives the same result
however it was cut.
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
MAX_PENDING_CHARS = 256 * 1024  # a JSON tag with this much content is dropped (its end still awaited), never held
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
    decoded = response.headers.copy()
    decoded.pop("content-encoding", None)  # ``_Counted`` gives the bytes decoded: they must not be decoded twice
    counted = httpx2.Response(
        response.status_code, headers=decoded, stream=_Counted(response, cap), request=response.request
    )
    try:
        async for event in httpx2.EventSource(counted, max_event_size=EVENT_CAP_BYTES):
            yield event.data
    except httpx2.SSEError:  # the content type was checked above: the one SSEError left is the event's size
        raise _over_cap(f"an event over the {EVENT_CAP_BYTES:,}-byte cap for one event", EVENT_CAP_BYTES) from None


class _Counted(httpx2.AsyncByteStream):
    """A response's body decoded (httpx2 inflates it in pieces of at most 1 MiB), refused once ``cap`` bytes came out
    (events and comments alike) and more would come; the bytes up to the cap are given first."""

    def __init__(self, response: httpx2.Response, cap: int) -> None:
        self._response, self._cap = response, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._response.aiter_bytes():
            room = self._cap - received
            if len(chunk) > room:  # what fits is read first: the events it completes are kept
                if room:
                    yield chunk[:room]
                raise _over_cap(f"more than the {self._cap:,}-byte cap for one answer's stream", self._cap)
            received += len(chunk)
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
    """Answer text → an ordered stream of text pieces and Brave's tags, however the text was split.

    Linear in the text however it is cut (``scanned`` counts the characters its searches look at): text is scanned
    once from where the last scan stopped, a tag's ``>`` is looked for only as far as the longest tag reaches, and a
    JSON tag's content is held piece by piece, each new piece searched for the closing tag with just the few
    characters before it where that tag could have begun.
    """

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._buffer = ""  # between feeds: at most the start of a tag (``_LONGEST_TAG`` characters)
        self._inside: str | None = None  # the research phase whose content is not answer text
        self._json: str | None = None  # the JSON tag whose content is held until its closing tag
        self._held: list[str] = []
        self._held_chars = 0
        self._tail = ""  # the held content's last characters: a closing tag cut by a delta begins there
        self.scanned = 0

    def feed(self, delta: str) -> None:
        """Consume one content delta."""
        if self._json is not None:
            after = self._hold(delta)
            if after is None:
                return
            delta = after
        self._buffer += delta
        self._drain(final=False)

    def close(self) -> None:
        """End of content: a tag left open is dropped; a lone ``<`` is text."""
        if self._json is not None:
            self._drop()
        self._drain(final=True)

    def _emit(self, text: str) -> None:
        if text and self._inside is None:
            self._sink("text", text)

    def _could_be_tag(self, pending: str) -> bool:
        name = pending[2:] if pending.startswith("</") else pending[1:]
        return len(pending) <= _LONGEST_TAG and any(tag.startswith(name) for tag in KNOWN_TAGS)

    def _hold(self, delta: str) -> str | None:
        """Add ``delta`` to the open JSON tag's content: once its closing tag came, the tag goes to the sink (unless
        its content reached ``MAX_PENDING_CHARS``: dropped) and what follows it is returned; until then None."""
        assert self._json is not None
        closing = f"</{self._json}>"
        window = self._tail + delta
        self.scanned += len(window)
        end = window.find(closing)
        if end < 0:
            self._held_chars += len(delta)
            self._tail = window[1 - len(closing) :]
            if self._held_chars - len(self._tail) < MAX_PENDING_CHARS:
                self._held.append(delta)
            else:  # too large to keep: its end is still looked for, its content is not held
                self._held = []
            return None
        size = self._held_chars - len(self._tail) + end
        name, held = self._json, self._held
        self._drop()
        if size < MAX_PENDING_CHARS:
            self._sink(name, ("".join(held) + delta)[:size])
        return window[end + len(closing) :]

    def _drop(self) -> None:
        """Forget the open JSON tag and what it held (its end came, never came, or it grew past the bound)."""
        self._json, self._held, self._held_chars, self._tail = None, [], 0, ""

    def _drain(self, *, final: bool) -> None:
        buffer, at = self._buffer, 0
        self._buffer = ""
        while at < len(buffer):
            lt = buffer.find("<", at)
            self.scanned += (len(buffer) if lt < 0 else lt) - at
            if lt < 0:
                self._emit(buffer[at:])
                return
            self._emit(buffer[at:lt])
            gt = buffer.find(">", lt, lt + _LONGEST_TAG)  # no known tag reaches further
            self.scanned += min(len(buffer), lt + _LONGEST_TAG) - lt
            if gt < 0:
                if not final and len(buffer) - lt <= _LONGEST_TAG and self._could_be_tag(buffer[lt:]):
                    self._buffer = buffer[lt:]  # wait for the rest of the tag
                    return
                self._emit("<")
                at = lt + 1
                continue
            name = buffer[lt + 1 : gt]
            closing = name.startswith("/")
            bare = name[1:] if closing else name
            if bare not in KNOWN_TAGS:
                self._emit("<")
                at = lt + 1
                continue
            at = gt + 1
            if closing:
                if self._inside == bare:
                    self._inside = None
            elif bare in JSON_TAGS:
                end = buffer.find(f"</{bare}>", at)
                self.scanned += (len(buffer) if end < 0 else end) - at
                if end >= 0:  # the whole tag is here: read in place
                    if end - at < MAX_PENDING_CHARS:
                        self._sink(bare, buffer[at:end])
                    at = end + len(bare) + 3
                    continue
                if not final:  # its content goes on in the next deltas
                    self._json, self._tail = bare, ""
                    self._hold(buffer[at:])
                return
            elif bare in PHASE_TAGS:
                self._inside = bare
                self._sink("phase", bare)
            elif bare == "answer":
                self._sink("phase", "answer")
            else:
                self._sink(bare, "")


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None when it is anything else."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
