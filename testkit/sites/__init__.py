"""Fake web sites for read_url: a real threaded HTTP(S) server on a loopback address with scripted pages.

Tests and the bench register replies per path (a page, a redirect, a status, a stream without
Content-Length, a gzip body, a stall), point the reader at ``site.url(path)`` and then check what the
site saw: every request is recorded with its headers, so a test can count fetches and prove that no
key or configured header reached the site. ``FakeSite(host="127.0.0.2")`` binds another loopback
address (Linux routes all of 127/8 to lo), so a test can run a second, "internal" site next to the first.
The pages the project owns for benchmarks live beside this file (``pages.py``, ``pages/``).
"""

from __future__ import annotations

import gzip
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from testkit.tracked_server import BackgroundServer, TrackedServer


@dataclass
class Reply:
    """What the site answers on one path."""

    status: int = 200
    body: bytes = b""
    content_type: str | None = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    stream: Callable[[], Iterable[bytes]] | None = None  # sent chunked, without Content-Length
    gzip: bool = False  # send ``body`` gzip-compressed with Content-Encoding: gzip
    raw_gzip: bytes | None = None  # send these bytes as a gzip body as they are (a bomb, a broken stream)
    stall: float = 0.0  # seconds to wait before answering (the stop of the site ends the wait)


@dataclass(frozen=True)
class Seen:
    """One request as the site received it."""

    method: str
    path: str
    headers: dict[str, str]


Handler = Reply | Callable[[Seen], Reply]


class _Server(TrackedServer):
    thread_name = "fake-site-conn"

    def __init__(self, site: FakeSite, host: str, port: int, tls: ssl.SSLContext | None) -> None:
        super().__init__(port, _Handler, host=host, tls=tls)
        self.site = site

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that give up mid-answer (caps, timeouts) are expected: stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeSite/1.0"
    sys_version = ""
    timeout = 10
    disable_nagle_algorithm = True  # headers and body go out in separate writes; avoid delayed-ACK stalls
    server: _Server

    def do_GET(self) -> None:
        """Answer from the site's script."""
        seen = Seen("GET", self.path, {k.lower(): v for k, v in self.headers.items()})
        reply = self.server.site.answer(seen)
        if reply.stall and self.server.stopping.wait(reply.stall):
            return
        try:
            self._send(reply)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        if reply.content_type is not None:
            self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.stream is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in reply.stream():
                if self.server.stopping.is_set():
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True
            return
        body = reply.body
        if reply.raw_gzip is not None:
            body = reply.raw_gzip
            self.send_header("Content-Encoding", "gzip")
        elif reply.gzip:
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: stdout and stderr stay clean in tests."""


class FakeSite(BackgroundServer):
    """A scripted site on a loopback address; use as a context manager (``with FakeSite() as site``)."""

    label = "fake-site"
    poll_interval = 0.02

    def __init__(self, host: str = "127.0.0.1", *, tls: ssl.SSLContext | None = None, name: str | None = None) -> None:
        super().__init__(host=host, tls=tls)
        self.name = name  # the host name tests resolve to this site (its URLs use it), else the address
        self.requests: list[Seen] = []
        self._routes: dict[str, Handler] = {}
        self._lock = threading.Lock()

    def make_server(self, host: str, port: int, tls: ssl.SSLContext | None) -> _Server:
        """The site behind a tracked server."""
        return _Server(self, host, port, tls)

    def url(self, path: str = "/") -> str:
        """The address of ``path`` on this site (by its name when it has one)."""
        if self.name is None:
            return f"{self.base_url}{path}"
        return f"{self.scheme}://{self.name}:{self.port}{path}"

    def route(self, path: str, reply: Handler) -> None:
        """Answer GET ``path`` (query included) with ``reply``, or with what ``reply(seen)`` returns."""
        with self._lock:
            self._routes[path] = reply

    def page(self, path: str, body: bytes | str, content_type: str = "text/html; charset=utf-8", **kw: Any) -> None:
        """Serve a page (str bodies are sent as UTF-8)."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.route(path, Reply(body=data, content_type=content_type, **kw))

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        """Answer ``path`` with a redirect to ``location``."""
        self.route(path, Reply(status=status, content_type=None, headers={"Location": location}))

    def answer(self, seen: Seen) -> Reply:
        """What the script says for a request (404 for unknown paths); the request is recorded first."""
        with self._lock:
            self.requests.append(seen)
            handler = self._routes.get(seen.path)
        if handler is None:
            return Reply(status=404, body=b"not here", content_type="text/plain")
        return handler(seen) if callable(handler) else handler

    def count(self, path: str) -> int:
        """How many requests reached ``path``."""
        with self._lock:
            return sum(1 for seen in self.requests if seen.path == path)

    def all_headers(self) -> Iterator[tuple[str, str]]:
        """Every header of every request the site received, as (lower-case name, value)."""
        with self._lock:
            seen = list(self.requests)
        for request in seen:
            yield from request.headers.items()
