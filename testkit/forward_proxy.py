"""A real forward proxy for tests: Debian's ``tinyproxy`` on a free loopback port, its log read back as requests.

A corporate network puts such a proxy between the server and the internet; a test points ``HTTP_PROXY`` /
``HTTPS_PROXY`` at this one and then asks it what it forwarded: a plain ``GET http://host:port/path`` for an http
origin, a ``CONNECT host:port`` tunnel for an https one (the proxy never sees inside the TLS). ``.ci/run``
installs the package; tests skip with a reason when it is missing.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from testkit.tracked_server import free_port

TINYPROXY = "tinyproxy"
_START_SECONDS = 10.0
_STOP_SECONDS = 5.0
_TRIES = 3  # a free port can be taken between choosing it and tinyproxy binding it
# tinyproxy logs each request line it reads, before it connects anywhere:
#   CONNECT   Nov 25 06:55:46.365 [8195]: Request (file descriptor 4): GET http://127.0.0.1:1/ HTTP/1.1
_REQUEST = re.compile(r"Request \(file descriptor \d+\): (\S+) (\S+) HTTP/")


@dataclass(frozen=True)
class Forwarded:
    """One request the proxy read: its method and target (an absolute URL, or host:port for CONNECT)."""

    method: str
    target: str


def available() -> bool:
    """Whether tinyproxy is installed (the Debian package ``tinyproxy``)."""
    return shutil.which(TINYPROXY) is not None


class ForwardProxy:
    """Runs tinyproxy in the foreground on 127.0.0.1 with a private config and log in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log_path = directory / "tinyproxy.log"
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the value for ``HTTP_PROXY`` / ``HTTPS_PROXY``."""
        return f"http://127.0.0.1:{self.port}"

    def forwarded(self) -> list[Forwarded]:
        """Every request the proxy has read so far, in order."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""
        return [Forwarded(m.group(1), m.group(2)) for m in _REQUEST.finditer(text)]

    def start(self) -> ForwardProxy:
        """Start tinyproxy and wait (bounded) until it accepts connections."""
        if not available():
            raise RuntimeError("tinyproxy is not installed (apt-get install tinyproxy)")
        for _ in range(_TRIES):
            self.port = free_port()
            if self._launch():
                return self
        raise RuntimeError(f"tinyproxy did not start; its log:\n{self.log_path.read_text(errors='replace')}")

    def _launch(self) -> bool:
        config = self.directory / "tinyproxy.conf"
        # No Allow, ConnectPort or Upstream lines: any local client, a CONNECT to any port, straight to the origin.
        config.write_text(
            f"Port {self.port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 32\nLogLevel Connect\n"
            f'LogFile "{self.log_path}"\nDisableViaHeader Yes\n',
            encoding="utf-8",
        )
        self.log_path.write_bytes(b"")
        process = subprocess.Popen(
            [TINYPROXY, "-d", "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + _START_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                self._process = process
                return True
            time.sleep(0.02)  # an external program's start-up: no clock of ours to inject
        self._end(process)
        return False

    def stop(self) -> None:
        """Stop the proxy this object started (and only it)."""
        process, self._process = self._process, None
        if process is not None:
            self._end(process)

    @staticmethod
    def _end(process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(_STOP_SECONDS)

    def __enter__(self) -> ForwardProxy:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
