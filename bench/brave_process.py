"""The bench's fake Brave in a process of its own, as Brave is another machine.

A bench that runs many clients on one event loop and the fake in the same process measures their contention too:
the fake's JSON and gzip work is CPU taken from the clients, and the fake stamps each request's arrival (its rate
window) only once its handler thread gets the GIL, late under a burst. ``brave_process`` runs the one fake
(``FakeBraveServer`` around ``upstream.make_fake``) in a spawned child and drives it over a pipe: a few commands,
each a bounded round trip. The child stops once its end of the pipe closes: on leaving the ``with`` (the body
raised or not), and when the bench dies, even killed, so it never outlives the bench.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from testkit.brave.http_server import FakeBraveServer, Latency

from .upstream import make_fake

START_SECONDS = 10.0  # a child that does not serve by then fails the bench (it starts in about half a second)
ANSWER_SECONDS = 5.0  # a command the child does not answer by then fails the bench
STOP_SECONDS = 5.0  # a child not gone this long after its pipe closed is killed


class BraveProcess:
    """The running child's address, and the counters and controls a bench reads (each a pipe round trip: call it
    from a worker thread, ``anyio.to_thread``, where an event loop must not wait)."""

    def __init__(self, process: BaseProcess, conn: Connection, base_url: str) -> None:
        self.process = process
        self.base_url = base_url
        self._conn = conn
        self._lock = threading.Lock()  # one round trip at a time: a poll in a worker thread, the bench in its own

    def _ask(self, command: str, *args: Any) -> Any:
        with self._lock:
            try:
                self._conn.send((command, args))
                if not self._conn.poll(ANSWER_SECONDS):
                    raise RuntimeError(f"the fake Brave's process did not answer {command} within {ANSWER_SECONDS:g} s")
                ok, value = self._conn.recv()
            except (EOFError, OSError) as exc:
                raise RuntimeError(f"the fake Brave's process is gone (exit status {self.process.exitcode})") from exc
        if not ok:
            raise RuntimeError(f"the fake Brave's process failed {command}: {value}")
        return value

    def hits(self, path_suffix: str | None = None, status: int | None = None) -> int:
        """Requests that reached the fake (``FakeBrave.hits``: ``status=200`` counts what Brave bills)."""
        return int(self._ask("hits", path_suffix, status))

    def rate_limited(self) -> int:
        """Requests the fake answered 429 since the last reset."""
        return int(self._ask("rate_limited"))

    def reset(self) -> None:
        """Forget requests and counters: the timed run counts only its own."""
        self._ask("reset")

    def reseed(self) -> None:
        """Draw the next answers' latencies from the seed's start again (``FakeBraveServer.reseed``)."""
        self._ask("reseed")


@contextmanager
def brave_process(
    plan: int, *, latency: Latency = 0.0, seed: int = 0, start_seconds: float = START_SECONDS
) -> Iterator[BraveProcess]:
    """``FakeBraveServer(make_fake(plan), latency=latency, seed=seed)`` serving from a child process; the child is
    gone when this exits. A child that does not serve within ``start_seconds`` raises ``RuntimeError``."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no copy of the bench's threads or loop
    ours, theirs = context.Pipe()
    process = context.Process(target=serve, args=(theirs, plan, latency, seed), name="fake-brave", daemon=True)
    process.start()
    theirs.close()  # the child's end is the child's: once it exits, a read here ends instead of waiting
    served = False
    try:
        if not ours.poll(start_seconds):
            raise RuntimeError(f"the fake Brave's process did not serve within {start_seconds:g} s")
        try:
            ok, value = ours.recv()
        except EOFError:
            process.join(STOP_SECONDS)
            raise RuntimeError(f"the fake Brave's process exited (status {process.exitcode}) before serving") from None
        if not ok:
            raise RuntimeError(f"the fake Brave's process could not start: {value}")
        served = True
        yield BraveProcess(process, ours, str(value))
    finally:
        ours.close()  # the child's cue to stop
        if served:
            process.join(STOP_SECONDS)
        if process.exitcode is None:
            process.kill()
            process.join(STOP_SECONDS)


def serve(conn: Connection, plan: int, latency: Latency, seed: int) -> None:
    """The child: serve the fake, answer the bench's commands until the pipe closes, then stop the server."""
    # Ctrl-C reaches the whole process group: the bench, not the signal, stops its child (on the pipe's close).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The fake's access lines (INFO) stay quiet, as in the bench's own process; its warnings still reach stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(asctime)s fake brave: %(message)s")
    try:
        server = FakeBraveServer(make_fake(plan), latency=latency, seed=seed).start()
    except Exception as exc:
        conn.send((False, repr(exc)))
        return
    fake = server.fake
    commands: dict[str, Callable[..., Any]] = {
        "hits": fake.hits,
        "rate_limited": lambda: fake.rate_limited_count,
        "reset": fake.reset,
        "reseed": server.reseed,
    }
    try:
        conn.send((True, server.base_url))
        while True:
            command, args = conn.recv()
            try:
                answer = (True, commands[command](*args))
            except Exception as exc:
                answer = (False, repr(exc))
            conn.send(answer)
    except (EOFError, OSError):
        return  # the bench closed its end, or is gone
    finally:
        server.stop()
