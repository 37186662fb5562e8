"""The one way a fake serves HTTP: a threaded loopback server that knows its connections, run in a daemon thread.

Every fake (Brave, SearXNG, the sites the URL reader fetches) is a ``BackgroundServer``: ``with`` starts it on a
free port and stops it at once, even mid-fault (stalled replies wake on ``stopping``, open sockets are shut, worker
threads are joined for a bounded time). ``tls`` makes it answer HTTPS (the handshake runs in the worker thread).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

logger = logging.getLogger(__name__)

JOIN_BUDGET = 2.0  # seconds, in total, that stopping may spend waiting for threads


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (for programs that must be told their port before they bind)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class TrackedServer(ThreadingHTTPServer):
    """Tracks each connection's socket and worker thread; ``drop_connections`` unblocks every worker."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    thread_name = "fake-upstream-conn"

    def __init__(
        self,
        port: int,
        handler: type[BaseHTTPRequestHandler],
        *,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__((host, port), handler)
        self.tls = tls  # answer HTTPS with this context (the handshake runs in the worker thread)
        self.stopping = threading.Event()
        self.track_lock = threading.Lock()
        self.connections: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept a connection, wrapped in TLS when the server has a context."""
        conn, address = super().get_request()
        if self.tls is not None:
            conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, address

    def process_request(self, request: Any, client_address: Any) -> None:
        """Track each connection's socket and thread before handing it to a worker thread."""
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), name=self.thread_name, daemon=True
        )
        with self.track_lock:
            self.connections.add(request)
            self.threads.add(thread)
        thread.start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Run one connection, then forget it."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.track_lock:
                self.connections.discard(request)
                self.threads.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connection errors are expected (faults, clients giving up): log them quietly."""
        logger.debug("%s: connection error from %s", self.thread_name, client_address, exc_info=True)

    def drop_connections(self) -> None:
        """Shut every open socket so worker threads blocked on I/O return at once."""
        with self.track_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class BackgroundServer:
    """Starts a ``TrackedServer`` (built by ``make_server``) in a daemon thread; ``with`` starts and stops it."""

    label = "fake-server"  # the serving thread's name, and the label of log lines
    poll_interval = 0.05

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        self.host = host
        self._port = port
        self._tls = tls  # answer HTTPS with this server context (a test CA's certificate)
        self._server: TrackedServer | None = None
        self._thread: threading.Thread | None = None

    def make_server(self, host: str, port: int, tls: ssl.SSLContext | None) -> TrackedServer:
        """The server to run (bound, not yet serving)."""
        raise NotImplementedError

    @property
    def server(self) -> TrackedServer:
        """The running server."""
        if self._server is None:
            raise RuntimeError("server is not running")
        return self._server

    @property
    def port(self) -> int:
        """The port the running server listens on."""
        return int(self.server.server_address[1])

    @property
    def scheme(self) -> str:
        """``https`` with TLS, else ``http``."""
        return "https" if self._tls is not None else "http"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` (``https://`` with TLS) of the running server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def start(self) -> Self:
        """Bind and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("server already started")
        self._server = self.make_server(self.host, self._port, self._tls)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": self.poll_interval},
            name=self.label,
            daemon=True,
        )
        self._thread.start()
        logger.debug("%s listening on %s", self.label, self.base_url)
        return self

    def stop(self) -> None:
        """Stop promptly: wake stalled replies, close open connections, join threads for a bounded time."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        deadline = time.monotonic() + JOIN_BUDGET
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
        logger.debug("%s stopped", self.label)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
