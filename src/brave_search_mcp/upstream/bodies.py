"""Reading upstream bodies without trusting them: a byte cap checked while streaming, error bodies read short.

Shared by every provider client, so a gzip bomb or an endless body is refused the same way everywhere.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import Callable
from typing import Any

import httpx2
from pydantic_core import from_json

from brave_search_mcp.models import errors

# Error bodies are only read this far (they are small; anything longer is not an API's error JSON).
ERROR_BODY_CAP_BYTES = 64 * 1024
# One server-sent event, a line not yet ended included (httpx2's own default): Brave's are a few hundred bytes.
EVENT_CAP_BYTES = 1024 * 1024
# A whole event stream, in multiples of the configured response cap (4 MiB by default, so 32 MiB): an answer of
# 100,000 characters streamed a few characters an event is about 6 MB of SSE, research mode streams its phases too.
STREAM_CAP_RESPONSES = 8
GZIP = "gzip"


async def read_capped(response: httpx2.Response, cap: int, upstream: str = "Brave") -> bytes:
    """Read a success body, refusing it as soon as it is known to exceed the cap."""
    _refuse_declared_oversize(response, cap, upstream)
    buffer = bytearray()
    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            buffer += chunk
            if len(buffer) > cap:
                raise _too_large(upstream, cap, None)
    return bytes(buffer)


async def read_capped_gzip(response: httpx2.Response, cap: int, upstream: str = "Brave") -> tuple[bytes, bytes | None]:
    """A success body decoded, and the bytes as received when it came gzip-encoded (None otherwise).

    The gzip bytes are what a shared cache keeps (a quarter of the size, so a quarter of the pages written); they are
    decoded here in one pass per chunk, under the same cap on the decoded size as ``read_capped`` and with httpx2's
    own ``DecodingError`` for a corrupt stream, so a gzip bomb or a broken body fails exactly as before.
    """
    if response.is_stream_consumed or response.headers.get("content-encoding", "").strip().lower() != GZIP:
        return await read_capped(response, cap, upstream), None  # (a response built already read has no raw bytes)
    _refuse_declared_oversize(response, cap, upstream)
    wire, decoder = bytearray(), _GzipDecoder(cap, upstream)
    async with contextlib.aclosing(response.aiter_raw()) as chunks:
        async for chunk in chunks:
            wire += chunk
            decoder.feed(chunk)
    return decoder.finish(), bytes(wire)


def gunzip_capped(data: bytes, cap: int, upstream: str = "Brave") -> bytes:
    """Gzip bytes a cache kept, decoded under the cap (a ``ResponseTooLarge`` past it, a ``ParseError`` if corrupt)."""
    decoder = _GzipDecoder(cap, upstream)
    try:
        decoder.feed(data)
        return decoder.finish()
    except httpx2.DecodingError as exc:
        raise errors.ParseError(f"{upstream}'s stored answer could not be decompressed ({exc}).") from None


class _GzipDecoder:
    """One gzip stream decoded as it comes, never more than ``cap`` + 1 bytes out (what ``read_capped`` holds)."""

    def __init__(self, cap: int, upstream: str) -> None:
        self._cap, self._upstream = cap, upstream
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)  # gzip only, as httpx2's decoder for "gzip"
        self._out = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Decode one more piece; at most what still fits under the cap, plus one byte to know it overflowed."""
        self._keep(lambda: self._zlib.decompress(chunk, self._cap + 1 - len(self._out)))

    def finish(self) -> bytes:
        """The decoded body (a cut-off stream yields what it held, as httpx2's decoder does)."""
        self._keep(self._zlib.flush)
        return bytes(self._out)

    def _keep(self, decode: Callable[[], bytes]) -> None:
        """Add what ``decode`` gives (a corrupt stream is httpx2's ``DecodingError``), refusing it past the cap."""
        try:
            self._out += decode()
        except zlib.error as exc:
            raise httpx2.DecodingError(str(exc)) from exc
        if len(self._out) > self._cap:
            raise _too_large(self._upstream, self._cap, None)


def _refuse_declared_oversize(response: httpx2.Response, cap: int, upstream: str) -> None:
    """Refuse a body whose declared length is over the cap before reading any of it."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > cap:
        raise _too_large(upstream, cap, int(declared))


def _too_large(upstream: str, cap: int, declared: int | None) -> errors.ResponseTooLarge:
    details: dict[str, Any] = {"limit_bytes": cap}
    if declared is not None:
        details["content_length"] = declared
    size = f"{declared} bytes" if declared is not None else "more than that"
    return errors.ResponseTooLarge(
        f"{upstream}'s answer was refused: it is {size}, over the {cap}-byte cap.", details=details
    )


async def read_error_body(response: httpx2.Response) -> bytes:
    """Read at most ERROR_BODY_CAP_BYTES of an error body; an undecodable one counts as empty."""
    buffer = bytearray()
    try:
        async with contextlib.aclosing(response.aiter_bytes()) as chunks:
            async for chunk in chunks:
                buffer += chunk
                if len(buffer) >= ERROR_BODY_CAP_BYTES:
                    break
    except httpx2.DecodingError:
        return b""
    return bytes(buffer[:ERROR_BODY_CAP_BYTES])


def _loads(body: bytes) -> Any:
    """pydantic-core's parser (in Rust: half ``json``'s time on a Brave page), and ``json`` for what it refuses and
    ``json`` reads (a BOM, UTF-16, a lone surrogate escape), so the two read every body alike."""
    try:
        return from_json(body)
    except ValueError:
        return json.loads(body)


def decode_json_object(body: bytes, upstream: str = "Brave", hint: str = "") -> dict[str, Any]:
    """Parse a success body; anything but a JSON object is a ``ParseError`` naming ``upstream`` (plus ``hint``)."""
    after = f" {hint}" if hint else ""
    if not body or body.isspace():  # what ``not body.strip()`` means, without copying the body
        raise errors.ParseError(f"{upstream} answered with an empty body.{after}", details={"body_bytes": len(body)})
    try:
        document = _loads(body)
    except (ValueError, RecursionError):
        raise errors.ParseError(
            f"{upstream}'s answer was not valid JSON (perhaps a proxy page or a cut-off body).{after}",
            details={"body_bytes": len(body)},
        ) from None
    if not isinstance(document, dict):
        raise errors.ParseError(
            f"{upstream}'s answer was JSON but not an object (got {type(document).__name__}).{after}",
            details={"body_bytes": len(body)},
        )
    return document
