"""A real local HTTP server in front of ``FakeSearxng``, so timeouts and sockets are tested for real."""

from __future__ import annotations

import contextlib
import logging
import ssl
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from testkit.tracked_server import BackgroundServer, TrackedServer

from .fake import FakeSearxng, Reply

__all__ = ["FakeSearxngServer"]

logger = logging.getLogger(__name__)

_IDLE_TIMEOUT = 30.0  # seconds an idle keep-alive connection may stay open
_HANG_POLL_SECONDS = 0.05  # a hung request looks this often whether the fake was let go


class _Server(TrackedServer):
    """ThreadingHTTPServer that tracks its connections and threads so ``stop()`` is prompt even mid-delay."""

    thread_name = "fake-searxng-conn"

    def __init__(self, fake: FakeSearxng, host: str, port: int, tls: ssl.SSLContext | None) -> None:
        super().__init__(port, _Handler, host=host, tls=tls)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    """Parses a request, asks the fake, waits its delay (waking on stop) and writes the reply."""

    protocol_version = "HTTP/1.1"
    server_version = "FakeSearXNG/1.0"
    sys_version = ""
    timeout = _IDLE_TIMEOUT
    server: _Server

    def do_GET(self) -> None:
        """Serve GET (what most clients send)."""
        self._dispatch()

    def do_POST(self) -> None:
        """Serve POST (a form on ``/search``, as the provider sends)."""
        self._dispatch()

    def do_PUT(self) -> None:
        """Serve PUT (405, as SearXNG answers it)."""
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        """Access logs go to logging (stderr), never stdout."""
        logger.info("fake searxng: %s - %s", self.address_string(), format % args)

    def _dispatch(self) -> None:
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        form = parse_qsl(body.decode("latin-1"), keep_blank_values=True)
        params = parse_qsl(split.query, keep_blank_values=True)
        client = self.client_address[0]
        reply = self.server.fake.handle(self.command, split.path, params, dict(self.headers.items()), form, client)
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        if reply.hang:  # a stopped instance: hold the request until it is let go (or the server stops), never answer
            while self.server.fake.hanging and not self.server.stopping.wait(_HANG_POLL_SECONDS):
                pass
            self.close_connection = True
            return
        if reply.delay > 0 and self.server.stopping.wait(reply.delay):
            self.close_connection = True
            return
        self.send_response(reply.status)
        for key, value in reply.headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def finish(self) -> None:
        """Tolerate sockets the client already dropped."""
        with contextlib.suppress(OSError):
            super().finish()


class FakeSearxngServer(BackgroundServer):
    """Runs ``FakeSearxng`` on 127.0.0.1 (a free port) in daemon threads; ``with`` starts and stops it."""

    label = "fake-searxng"

    def __init__(self, fake: FakeSearxng | None = None, *, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(port=port, tls=tls)
        self.fake = fake if fake is not None else FakeSearxng()

    def make_server(self, host: str, port: int, tls: ssl.SSLContext | None) -> _Server:
        """The fake behind a tracked server."""
        return _Server(self.fake, host, port, tls)
