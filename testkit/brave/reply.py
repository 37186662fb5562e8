"""What the fake saw and what it answers: the request record and the reply both faces (mock, socket) render alike."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RecordedRequest:
    """One request as the fake saw it (the token's value is never kept), so tests can assert what was sent."""

    method: str
    path: str
    params: list[tuple[str, str]]
    headers: dict[str, str]
    has_token: bool
    status: int = 0  # 0 when the fault gave no status line (refused, timeout, hang)
    fault: str | None = None
    body: bytes = b""  # request body (chat completions are POSTed)


@dataclass
class Reply:
    """What the fake answers; both faces (MockTransport and the real server) render it the same way."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    transport_fault: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    fault: str | None = None  # the injected fault that produced this reply, if any
    chunks: Callable[[], Iterator[bytes]] | None = None  # streamed body, sent without Content-Length

    @property
    def streamed(self) -> bool:
        """True when the body is produced lazily and must be sent without a Content-Length."""
        return self.chunks is not None

    def header(self, name: str) -> str | None:
        """First value of header ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    def iter_body(self) -> Iterator[bytes]:
        """The body as the wire carries it (possibly gzip), in order."""
        if self.chunks is not None:
            yield from self.chunks()
        elif self.body:
            yield self.body

    def json(self) -> Any:
        """The decoded JSON body (gunzipped when needed); for tests that call ``handle`` directly."""
        raw = b"".join(self.iter_body())
        if self.header("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        return json.loads(raw)


def json_reply(status: int, obj: Any, rate_headers: list[tuple[str, str]], gzip_ok: bool) -> Reply:
    """``obj`` as compact JSON with the given rate-limit headers, gzip-compressed when the client accepts it."""
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    headers = [("Content-Type", "application/json"), *rate_headers]
    if gzip_ok:
        body = gzip.compress(body, mtime=0)
        headers.append(("Content-Encoding", "gzip"))
    return Reply(status, headers, body)


def accepts_gzip(value: str) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip (``q=0`` refuses it)."""
    for part in value.split(","):
        name, _, rest = part.partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = rest.strip().lower()
            return not (q.startswith("q=") and float(q[2:] or "0") == 0.0)
    return False


def gzip_stream(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` compressed as one gzip member, piece by piece."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    for chunk in chunks:
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()


def split_chunks(body: bytes, size: int) -> list[bytes]:
    """``body`` cut into pieces of ``size`` bytes (at least one piece)."""
    size = max(1, size)
    return [body[i : i + size] for i in range(0, len(body), size)] or [b""]


def reset_cut(reply: Reply) -> int:
    """How many body bytes a "reset" fault sends before the connection dies."""
    return int(reply.options.get("keep", len(reply.body) // 2))
