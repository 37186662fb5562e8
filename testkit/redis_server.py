"""A real redis-server on 127.0.0.1 for tests and bench: start, stop, kill -9, pause (SIGSTOP), restart on the same
port, and the settings a fault needs (``CONFIG SET maxmemory``).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from testkit.tracked_server import free_port

START_TIMEOUT_SECONDS = 5.0


def redis_server_binary() -> str | None:
    """Path of redis-server, or None when it is not installed."""
    return shutil.which("redis-server")


def _command(port: int, *args: str, timeout: float = 0.2) -> bytes:
    """One command in Redis's wire format; the first reply line (b"" when the server does not answer)."""
    request = f"*{len(args)}\r\n".encode() + b"".join(f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(request)
            return s.recv(4096).split(b"\r\n", 1)[0]
    except OSError:
        return b""


def command(port: int, *args: str, timeout: float = 0.2) -> bytes:
    """One command to the server on ``port``; the first line of its reply (b"" when it does not answer)."""
    return _command(port, *args, timeout=timeout)


def _ping(port: int) -> bool:
    return _command(port, "PING").startswith(b"+PONG")


class RedisServer:
    """One redis-server process without persistence, bound to loopback on a fixed free port."""

    def __init__(self, port: int | None = None, *, extra: tuple[str, ...] = ()) -> None:
        binary = redis_server_binary()
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install -y redis-server)")
        self._binary = binary
        self.port = port or free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="redis-test-"))
        self._proc: subprocess.Popen[bytes] | None = None
        self._extra = extra  # more redis-server options (a cluster node's)

    @property
    def url(self) -> str:
        """redis://127.0.0.1:PORT/0"""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> RedisServer:
        """Start and wait until it answers PING (bounded)."""
        if self.running:
            raise RuntimeError("redis-server already running")
        options = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        options += ["--dir", str(self._dir), "--protected-mode", "yes", "--loglevel", "warning", *self._extra]
        self._proc = subprocess.Popen(
            [self._binary, *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if _ping(self.port):
                return self
            if self._proc.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        """SIGKILL, as a crash would (nothing flushed, connections reset)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)  # works on a paused process too
            self._proc.wait(timeout=5)
        self._proc = None

    def pause(self) -> None:
        """SIGSTOP: the process holds its connections and answers nothing (a stalled host, a long GC)."""
        if self._proc is None or self._proc.poll() is not None:
            raise RuntimeError("redis-server is not running")
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after ``pause``: the commands sent meanwhile are answered now."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)

    def config(self, name: str, value: str) -> None:
        """``CONFIG SET name value`` (e.g. ``maxmemory`` and ``maxmemory-policy`` for a full server)."""
        reply = _command(self.port, "CONFIG", "SET", name, value, timeout=2.0)
        if reply != b"+OK":
            raise RuntimeError(f"CONFIG SET {name} {value} answered {reply!r}")

    def stop(self) -> None:
        """Terminate politely (bounded), then kill."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGCONT)  # a paused server would not act on the SIGTERM
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=3)

    def restart(self) -> RedisServer:
        """Start again on the same port (state is empty: no persistence)."""
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stop and remove the working directory."""
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
