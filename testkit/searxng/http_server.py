"""A real local HTTP server in front of ``FakeSearxng``, so timeouts and sockets are tested for real."""

from __future__ import annotations

import contextlib
import logging
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from testkit.tracked_server import TrackedServer

from .fake import FakeSearxng, Reply

__all__ = ["FakeSearxngServer"]

logger = logging.getLogger(__name__)

_JOIN_BUDGET = 2.0  # seconds, in total, that stopping may spend waiting for threads
_IDLE_TIMEOUT = 30.0  # seconds an idle keep-alive connection may stay open


class _Server(TrackedServer):
    """ThreadingHTTPServer that tracks its connections and threads so ``stop()`` is prompt even mid-delay."""

    thread_name = "fake-searxng-conn"

    def __init__(self, fake: FakeSearxng, port: int) -> None:
        super().__init__(port, _Handler)
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
        reply = self.server.fake.handle(self.command, split.path, params, dict(self.headers.items()), form)
        self._send(reply)

    def _send(self, reply: Reply) -> None:
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


class FakeSearxngServer:
    """Runs ``FakeSearxng`` on 127.0.0.1 (a free port) in daemon threads; ``with`` starts and stops it."""

    def __init__(self, fake: FakeSearxng | None = None, *, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        self.fake = fake if fake is not None else FakeSearxng()
        self._port = port
        self._tls = tls  # answer HTTPS with this server context (a test CA's certificate)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https://`` with TLS) of the running server."""
        if self._server is None:
            raise RuntimeError("server is not running")
        host, port = self._server.server_address[:2]
        return f"{'https' if self._tls is not None else 'http'}://{host!s}:{port}"

    def start(self) -> FakeSearxngServer:
        """Bind and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("server already started")
        self._server = _Server(self.fake, self._port)
        self._server.tls = self._tls
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-searxng", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop promptly: wake delayed replies, close connections, join threads for a bounded time."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        deadline = time.monotonic() + _JOIN_BUDGET
        server.stopping.set()
        server.shutdown()
        server.drop_connections()
        server.server_close()
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        with server.track_lock:
            workers = list(server.threads)
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FakeSearxngServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
