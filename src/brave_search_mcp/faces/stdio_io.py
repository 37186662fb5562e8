"""Raw descriptor I/O under the stdio transport: polled reads, capped lines, and whole lines written in order.

No threads: a thread stuck in a read or a write would block the process's exit. A reply that fits in the pipe goes
out at once from the task that sends it (one write, no task switch); one that does not waits in a queue that one
writer task drains as the reader makes room, so a slow reader never blocks the event loop and lines never interleave.
"""

from __future__ import annotations

import logging
import os
import stat
import struct
import sys
from collections import deque

import anyio
import anyio.lowlevel

if sys.platform != "win32":
    import fcntl
    import termios

logger = logging.getLogger(__name__)

CHUNK = 64 * 1024
PIPE_BUF = 4096  # a blocking write this small never blocks once poll says the pipe is writable


def _pipe_size(fd: int) -> int | None:
    """The pipe's capacity in bytes (Linux), or None where it cannot be asked."""
    get_size = getattr(fcntl, "F_GETPIPE_SZ", None)
    if get_size is None:
        return None
    try:
        return int(fcntl.fcntl(fd, get_size))
    except OSError:
        return None


class Fd:
    """Async reads and writes on a raw descriptor without threads (a stuck thread would block the exit)."""

    def __init__(self, fd: int) -> None:
        mode = os.fstat(fd).st_mode
        self.fd = fd
        # epoll works on pipes, sockets and terminals; regular files and /dev/null never block anyway.
        self.pollable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))
        self._pipe_size = _pipe_size(fd) if stat.S_ISFIFO(mode) else None

    def _room(self) -> int:
        """Bytes one write takes now without blocking: unbounded for a file, else the pipe's free space (less a
        page the reader may have half read), 0 when unknown (a terminal, a socket, not Linux)."""
        if not self.pollable:
            return sys.maxsize
        if self._pipe_size is None:
            return 0
        try:
            queued = int(struct.unpack("i", fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0"))[0])
        except OSError:
            return 0
        return self._pipe_size - queued - PIPE_BUF

    async def read(self) -> bytes:
        """The next chunk, or b"" at end of file."""
        while True:
            if self.pollable:
                await anyio.wait_readable(self.fd)
            else:
                await anyio.lowlevel.checkpoint()
            try:
                return os.read(self.fd, CHUNK)
            except BlockingIOError:  # someone else made the shared pipe non-blocking: wait again
                continue

    def write_now(self, data: bytes) -> int:
        """How much of ``data`` one write took without waiting: all of it when the pipe has room, else 0 (or a
        part, on a descriptor someone made non-blocking). The reader wakes once per reply, not once per page."""
        if len(data) > self._room():
            return 0
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0

    async def write_all(self, data: bytes) -> None:
        """Write every byte, yielding to the event loop while the reader is slow."""
        written = self.write_now(data)
        view = memoryview(data)[written:]
        while view:
            if self.pollable:
                await anyio.wait_writable(self.fd)
            try:
                written = os.write(self.fd, view[:PIPE_BUF])
            except BlockingIOError:
                written = 0
            view = view[written:]


class TooLong:
    """Marks a line that was cut off at the cap (its remainder is skipped unread)."""


class LineReader:
    """Lines from a descriptor without their terminator; an over-long line is reported once (``TooLong``) and
    skipped up to its newline. A read cancelled while it waits loses nothing: the next one carries on."""

    def __init__(self, source: Fd, max_line_bytes: int) -> None:
        self._source, self._max = source, max_line_bytes
        self._buffer, self._skipping, self._scan_from, self._eof = bytearray(), False, 0, False

    async def next(self) -> bytes | TooLong | None:
        """The next line, or None at end of input (a last line without a newline is still a line)."""
        while (line := self._take()) is None:
            if self._eof:
                return None
            chunk = await self._source.read()
            if not chunk:
                self._eof = True
                if self._buffer and not self._skipping:
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line
                return None
            self._buffer += chunk
        return line

    def _take(self) -> bytes | TooLong | None:
        """A whole line from the buffer, if it holds one; earlier bytes are not searched twice."""
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n", self._scan_from)
            if end < 0:
                self._scan_from = len(buffer)
                if len(buffer) > self._max and not self._skipping:
                    self._skipping = True
                    buffer.clear()
                    self._scan_from = 0
                    return TooLong()
                if self._skipping:
                    buffer.clear()
                    self._scan_from = 0
                return None
            self._scan_from = 0
            if self._skipping:
                self._skipping = False
                del buffer[: end + 1]
                continue
            line = TooLong() if end > self._max else bytes(buffer[:end])
            del buffer[: end + 1]
            return line


class Output:
    """The one writer of stdout: lines go out whole and in the order they were written; a broken pipe ends output
    quietly.

    A line goes out at once when nothing is queued and the pipe has room. Otherwise it is queued for ``run()`` (one
    task, which no request's cancellation reaches, so no line is ever cut short) and its writer waits until it is
    out, as it waited for the pipe before.
    """

    def __init__(self, fd: Fd) -> None:
        self._fd, self.broken = fd, anyio.Event()
        self._queue: deque[bytes] = deque()
        self._queued = self._done = 0  # lines ever queued / ever finished by run()
        self._wake, self._moved = anyio.Event(), anyio.Event()  # the queue got a line / run() finished one
        self._finishing = self._stopped = False

    async def write(self, data: bytes) -> None:
        """Write one whole line (or nothing, once the reader has gone); returns when it is out or output stopped."""
        if not data or self.broken.is_set() or self._stopped:
            return
        if not self._queue:
            try:
                written = self._fd.write_now(data)
            except OSError as exc:
                self._gone(exc)
                return
            if written == len(data):
                return
            data = data[written:]
        self._queue.append(data)
        self._queued += 1
        mine = self._queued
        self._wake.set()
        while self._done < mine and not (self._stopped or self.broken.is_set()):
            await self._moved.wait()

    def finish(self) -> None:
        """No more lines: ``run()`` returns once the queue is written."""
        self._finishing = True
        self._wake.set()

    def stop(self) -> None:
        """Output ends now (the process is stopping): what is queued is dropped and nothing more is written."""
        self._stopped = True
        self._release()

    async def run(self) -> None:
        """Write queued lines as the reader makes room, until ``finish()`` and an empty queue, or a broken pipe."""
        try:
            while not (self.broken.is_set() or self._stopped):
                if not self._queue:
                    if self._finishing:
                        return
                    self._wake = anyio.Event()
                    await self._wake.wait()
                    continue
                try:
                    await self._fd.write_all(self._queue[0])
                except OSError as exc:
                    self._gone(exc)
                    return
                if self._queue:  # else stop() emptied it meanwhile
                    self._queue.popleft()
                self._done += 1
                self._moved.set()
                self._moved = anyio.Event()
        finally:
            self._stopped = True  # cancelled or done: writers waiting on the queue stop waiting
            self._release()

    def _gone(self, exc: OSError) -> None:
        """The client closed its end: nobody is listening any more."""
        logger.info("stdio: stdout closed (%s); stopping", exc.strerror)
        self.broken.set()
        self._release()

    def _release(self) -> None:
        """Drop what is queued and wake every task waiting on the queue: they find output over."""
        self._queue.clear()
        self._moved.set()
        self._wake.set()
