"""Reading upstream bodies without trusting them: a byte cap checked while streaming, error bodies read short.

Shared by every provider client, so a gzip bomb or an endless body is refused the same way everywhere.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx2

from brave_search_mcp.models import errors

# Error bodies are only read this far (they are small; anything longer is not an API's error JSON).
ERROR_BODY_CAP_BYTES = 64 * 1024


async def read_capped(response: httpx2.Response, cap: int, upstream: str = "Brave") -> bytes:
    """Read a success body, refusing it as soon as it is known to exceed the cap."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > cap:
        raise _too_large(upstream, cap, int(declared))
    buffer = bytearray()
    async with contextlib.aclosing(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            buffer += chunk
            if len(buffer) > cap:
                raise _too_large(upstream, cap, None)
    return bytes(buffer)


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


def decode_json_object(body: bytes, upstream: str = "Brave", hint: str = "") -> dict[str, Any]:
    """Parse a success body; anything but a JSON object is a ``ParseError`` naming ``upstream`` (plus ``hint``)."""
    after = f" {hint}" if hint else ""
    if not body or body.isspace():  # what ``not body.strip()`` means, without copying the body
        raise errors.ParseError(f"{upstream} answered with an empty body.{after}", details={"body_bytes": len(body)})
    try:
        document = json.loads(body)
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
