"""A threaded loopback HTTP server that knows its connections, so a fake upstream can stop at once mid-fault."""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

logger = logging.getLogger(__name__)


class TrackedServer(ThreadingHTTPServer):
    """Tracks each connection's socket and worker thread; ``drop_connections`` unblocks every worker."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    thread_name = "fake-upstream-conn"

    def __init__(self, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.stopping = threading.Event()
        self.tls: ssl.SSLContext | None = None  # set before serving to answer HTTPS (handshake in the worker thread)
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
