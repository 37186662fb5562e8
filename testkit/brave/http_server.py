"""A real local HTTP server in front of ``FakeBrave``, so end-to-end tests exercise real sockets and real faults."""

from __future__ import annotations

import contextlib
import json
import logging
import random
import socket
import ssl
import struct
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from testkit.tracked_server import BackgroundServer, TrackedServer

from .brave import FakeBrave
from .reply import Reply, reset_cut, split_chunks

logger = logging.getLogger(__name__)

CONTROL_PREFIX = "/__fake/"
Latency = float | tuple[float, float]  # seconds, or a (low, high) range each answer's latency is drawn from
_IDLE_TIMEOUT = 30.0  # seconds an idle keep-alive connection may stay open


class _Server(TrackedServer):
    """ThreadingHTTPServer that remembers its connections and threads so it can stop promptly."""

    thread_name = "fake-brave-conn"
    request_queue_size = 128

    def __init__(
        self, fake: FakeBrave, host: str, port: int, tls: ssl.SSLContext | None, latency: Latency = 0.0, seed: int = 0
    ) -> None:
        super().__init__(port, _Handler, host=host, tls=tls)
        self.fake = fake
        self.latency = latency  # seconds every Brave answer waits before its first byte (the network and Brave)
        self._rng = random.Random(seed)  # draws each answer's latency from a range, the same sequence every run
        self._rng_lock = threading.Lock()
        self.handled = threading.Condition()
        self.handled_count = 0

    def delay(self) -> float:
        """This answer's latency: the fixed one, or a draw from the range."""
        if isinstance(self.latency, tuple):
            with self._rng_lock:
                return self._rng.uniform(*self.latency)
        return self.latency

    def reseed(self, seed: int) -> None:
        """Draw the next answers' latencies from ``seed`` afresh."""
        with self._rng_lock:
            self._rng.seed(seed)

    def note_handled(self) -> None:
        """Wake anyone waiting for a request count."""
        with self.handled:
            self.handled_count += 1
            self.handled.notify_all()


class _Handler(BaseHTTPRequestHandler):
    """Parses a request, asks the fake for a reply and writes it (or performs the transport fault)."""

    protocol_version = "HTTP/1.1"
    server_version = "FakeBrave/1.0"
    sys_version = ""
    timeout = _IDLE_TIMEOUT
    disable_nagle_algorithm = True  # headers and body go out in separate writes; avoid delayed-ACK stalls
    server: _Server

    def do_GET(self) -> None:
        """Serve GET."""
        self._dispatch()

    def do_POST(self) -> None:
        """Serve POST (control endpoints; Brave paths answer 405)."""
        self._dispatch()

    def do_PUT(self) -> None:
        """Serve PUT (405 from the fake)."""
        self._dispatch()

    def do_DELETE(self) -> None:
        """Serve DELETE (405 from the fake)."""
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        """Route access logs to logging (stderr), never stdout; the token travels in a header and is not logged."""
        logger.info("fake brave: %s - %s", self.address_string(), format % args)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        split = urlsplit(self.path)
        body = self._read_body()
        if split.path.startswith(CONTROL_PREFIX):
            self._control(split.path, body)
            return
        params = parse_qsl(split.query, keep_blank_values=True)
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.server.fake.handle(self.command, split.path, params, headers, body)  # counted as it arrives
        self.server.note_handled()
        delay = self.server.delay()
        if delay and self.server.stopping.wait(delay):
            self.close_connection = True
            return
        self._send(reply)

    # ------------------------------------------------------------------ control endpoints

    def _control(self, path: str, body: bytes) -> None:
        fake = self.server.fake
        name = path[len(CONTROL_PREFIX) :]
        if name == "stats" and self.command == "GET":
            self._send_json(200, fake.stats())
        elif name == "reset" and self.command == "POST":
            fake.reset()
            self._send_json(200, {"ok": True})
        elif name == "inject" and self.command == "POST":
            try:
                spec = json.loads(body or b"{}")
                if not isinstance(spec, dict):
                    raise ValueError("body must be a JSON object")
                fault = spec.pop("fault")
                fake.inject(str(fault), path=spec.pop("path", None), times=int(spec.pop("times", 1)), **spec)
            except (ValueError, KeyError, TypeError) as exc:
                self._send_json(400, {"ok": False, "error": str(exc)})
                return
            self._send_json(200, {"ok": True, "pending": fake.pending_faults()})
        else:
            self._send_json(404, {"ok": False, "error": f"unknown control endpoint {self.command} {path}"})

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # ------------------------------------------------------------------ replies and faults

    def _start(self, reply: Reply, content_length: int | None) -> None:
        self.send_response(reply.status)
        for key, value in reply.headers:
            self.send_header(key, value)
        if content_length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(content_length))
        self.end_headers()

    def _send(self, reply: Reply) -> None:
        fault = reply.transport_fault
        stopping = self.server.stopping
        if fault == "early_hints":  # an interim answer first, as a CDN in front of an API may send (RFC 8297)
            self.send_response_only(103, "Early Hints")
            self.send_header("Link", "</static/app.css>; rel=preload; as=style")
            self.end_headers()
        if fault == "refused":
            # A real refusal needs a closed listener; the nearest per-request equivalent is closing before any byte.
            self.close_connection = True
            return
        if fault in ("timeout", "hang"):
            stopping.wait(float(reply.options.get("seconds", 30.0)))
            self.close_connection = True
            return
        if reply.streamed:
            self._start(reply, None)
            for chunk in reply.iter_body():
                if stopping.is_set():
                    break
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            else:
                self.wfile.write(b"0\r\n\r\n")
                return
            self.close_connection = True
            return
        self._start(reply, len(reply.body))
        if fault == "reset":
            self.wfile.write(reply.body[: reset_cut(reply)])
            self._reset_socket()
            return
        if fault == "slow_body":
            delay = float(reply.options.get("delay", 0.05))
            for i, piece in enumerate(split_chunks(reply.body, int(reply.options.get("chunk_size", 512)))):
                if i and stopping.wait(delay):
                    self.close_connection = True
                    return
                self.wfile.write(piece)
            return
        self.wfile.write(reply.body)

    def _reset_socket(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0) after part of the body went out."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()

    def finish(self) -> None:
        """Tolerate sockets we already reset or the client already dropped."""
        with contextlib.suppress(OSError):
            super().finish()


class FakeBraveServer(BackgroundServer):
    """Runs ``FakeBrave`` on 127.0.0.1 (random port) in daemon threads; ``with`` starts it and stops it promptly."""

    label = "fake-brave-server"

    def __init__(
        self,
        fake: FakeBrave | None = None,
        *,
        port: int = 0,
        tls: ssl.SSLContext | None = None,
        latency: Latency = 0.0,
        seed: int = 0,
        **fake_kwargs: Any,
    ) -> None:
        if fake is not None and fake_kwargs:
            raise TypeError("pass either a FakeBrave or keyword arguments for one, not both")
        low, high = latency if isinstance(latency, tuple) else (latency, latency)
        if not 0 <= low <= high:
            raise ValueError("latency must be >= 0 seconds (a range: low <= high)")
        super().__init__(port=port, tls=tls)
        self.fake = fake if fake is not None else FakeBrave(**fake_kwargs)
        # Each answer waits this long, as Brave's do (~250 ms): the bench's agent session. A (low, high) range draws
        # every answer's wait from a random generator seeded with ``seed``: real answers vary (the bursts' jitter).
        self.latency = latency
        self.seed = seed

    def make_server(self, host: str, port: int, tls: ssl.SSLContext | None) -> _Server:
        """The fake behind a tracked server."""
        return _Server(self.fake, host, port, tls, self.latency, self.seed)

    def reseed(self) -> None:
        """Draw the next answers' latencies from the start of ``seed``'s sequence again: a bench's timed run after a
        warm-up draws what a run without one does, so the two compare pair by pair."""
        server = self.server
        assert isinstance(server, _Server)
        server.reseed(self.seed)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` Brave requests have been answered (or are in a fault); False on timeout."""
        server = self.server
        assert isinstance(server, _Server)
        with server.handled:
            return server.handled.wait_for(lambda: server.handled_count >= count, timeout)
