"""Start a fake's ``python -m testkit.<name>`` foreground server in a child process, as a person would run it."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def foreground_server(
    module: str, *args: str, sigint_ignored: bool = True
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The running child and the base URL it printed; killed on the way out if still running.

    ``sigint_ignored`` starts it the way ``nohup`` or a background job of a script does: with SIGINT
    ignored, which a child inherits (Python then installs no Ctrl-C handler of its own).
    """
    process = subprocess.Popen(
        [sys.executable, "-m", module, "--port", "0", *args],
        cwd=REPO_ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )
    try:
        assert process.stderr is not None
        url = ""
        for _ in range(50):
            line = process.stderr.readline()
            if not line or "serving on " in line:
                url = line.split("serving on ")[-1].split()[0] if line else ""
                break
        assert url.startswith("http://127.0.0.1:"), url
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
        for stream in (process.stderr, process.stdout):
            if stream is not None:
                stream.close()


def interrupt(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Ctrl-C (SIGINT) the child; its exit status and what it wrote on stdout."""
    process.send_signal(signal.SIGINT)
    status = process.wait(timeout=5)
    return status, process.stdout.read() if process.stdout else ""
