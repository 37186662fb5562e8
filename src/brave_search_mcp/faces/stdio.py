"""Our own stdio transport: every bad request line gets a JSON-RPC error reply, and signals end the process promptly.

Why not the SDK's ``stdio_server``: it decodes stdin with ``errors="replace"`` and, for a line it cannot
validate (invalid UTF-8, truncated JSON, nesting past pydantic's limit, a lone surrogate escape), hands the
session an exception that is logged and dropped — the client waits forever for a reply. It also leaves
SIGINT/SIGTERM to the interpreter, so Ctrl-C during a tool call stops answering without exiting.

Here stdin is read as bytes, one line at a time (capped), decoded strictly, parsed with ``json`` and checked
for lone surrogates and nesting before JSON-RPC validation; a line that fails gets ``-32700``/``-32600`` with
its id when the id can be read (else ``null``) and the next line is served. All stdout writes share one lock.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import struct
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter
from pydantic import ValidationError

if sys.platform != "win32":
    import fcntl
    import termios

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 4 * 1024 * 1024  # same ceiling as the SDK's HTTP request bodies
MAX_NESTING = 100  # far deeper than any MCP message; pydantic's JSON parser gives up near 128
PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR = -32700, -32600, -32603
EXIT_OK, EXIT_INTERRUPTED = 0, 130
STOP_DEADLINE_SECONDS = 1.5  # after a stop begins, the process is gone within this even if a call is stuck
DRAIN_SECONDS = 1.0  # at EOF, how long replies already queued may take to reach stdout
EOF_GRACE_SECONDS = 1.0  # at EOF, how long in-flight calls may take to wind down before they are cancelled
_CHUNK = 64 * 1024
_PIPE_BUF = 4096  # a blocking write this small never blocks once poll says the pipe is writable

RequestId = int | str
ReadSide = MemoryObjectReceiveStream[SessionMessage | Exception]  # what the session reads: messages from stdin
WriteSide = MemoryObjectSendStream[SessionMessage]  # what the session writes: messages for stdout


class LineRejected(Exception):
    """A request line that must be answered with a JSON-RPC error instead of reaching the session."""

    def __init__(self, code: int, message: str, request_id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.request_id = code, message, request_id


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _readable_id(value: Any) -> RequestId | None:
    """The top-level id when it is one a reply can carry back, else None."""
    request_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        return request_id
    if isinstance(request_id, str) and _is_utf8(request_id):
        return request_id
    return None


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_tree(value: Any, request_id: RequestId | None) -> None:
    """Reject nesting deeper than MAX_NESTING and strings holding lone surrogates; iterative, so never recursive."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            raise LineRejected(INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_NESTING} levels", request_id)
        if isinstance(node, str):
            if not _is_utf8(node):
                raise LineRejected(INVALID_REQUEST, "Invalid Request: string holds a lone surrogate", request_id)
        elif isinstance(node, dict):
            stack.extend((key, depth) for key in node)
            stack.extend((item, depth + 1) for item in node.values())
        elif isinstance(node, list):
            stack.extend((item, depth + 1) for item in node)


def parse_line(line: bytes) -> JSONRPCMessage:
    """One stdin line to a JSON-RPC message, or ``LineRejected`` saying which error reply it deserves."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineRejected(PARSE_ERROR, f"Parse error: invalid UTF-8 at byte {exc.start}") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise LineRejected(PARSE_ERROR, f"Parse error: nested deeper than {MAX_NESTING} levels") from None
    except ValueError as exc:
        raise LineRejected(PARSE_ERROR, f"Parse error: {exc}") from None
    request_id = _readable_id(value)
    _check_tree(value, request_id)
    if isinstance(value, dict) and isinstance(value.get("id"), bool):  # pydantic would turn true into 1
        raise LineRejected(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    try:
        return jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        raise LineRejected(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", request_id) from None


def error_line(code: int, message: str, request_id: RequestId | None) -> bytes:
    """The JSON-RPC error reply for a rejected line, newline-terminated and pure ASCII."""
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(body, separators=(",", ":")).encode("ascii") + b"\n"


def _encode(message: JSONRPCMessage) -> bytes:
    """A message the session sends, or an internal-error reply in its place when it cannot be UTF-8 JSON."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n"
    except Exception:  # e.g. a lone surrogate from upstream data: the caller must still get an answer
        logger.warning("stdio: a %s could not be encoded as UTF-8 JSON", type(message).__name__, exc_info=True)
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            return error_line(INTERNAL_ERROR, "Internal error: the reply could not be encoded", message.id)
        return b""


def _pipe_size(fd: int) -> int | None:
    """The pipe's capacity in bytes (Linux), or None where it cannot be asked."""
    get_size = getattr(fcntl, "F_GETPIPE_SZ", None)
    if get_size is None:
        return None
    try:
        return int(fcntl.fcntl(fd, get_size))
    except OSError:
        return None


class _Fd:
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
        return self._pipe_size - queued - _PIPE_BUF

    async def read(self) -> bytes:
        """The next chunk, or b"" at end of file."""
        while True:
            if self.pollable:
                await anyio.wait_readable(self.fd)
            else:
                await anyio.lowlevel.checkpoint()
            try:
                return os.read(self.fd, _CHUNK)
            except BlockingIOError:  # someone else made the shared pipe non-blocking: wait again
                continue

    async def write_all(self, data: bytes) -> None:
        """Write every byte, yielding to the event loop while the reader is slow.

        A reply that fits in the pipe goes in one write: the reader wakes once per reply, not once per page.
        """
        if len(data) <= self._room():
            written = os.write(self.fd, data)
            if written == len(data):
                return
            data = data[written:]
        view = memoryview(data)
        while view:
            if self.pollable:
                await anyio.wait_writable(self.fd)
            try:
                written = os.write(self.fd, view[:_PIPE_BUF])
            except BlockingIOError:
                written = 0
            view = view[written:]


class _TooLong:
    """Marks a line that was cut off at the cap (its remainder is skipped unread)."""


async def _lines(source: _Fd, max_line_bytes: int) -> AsyncIterator[bytes | _TooLong]:
    """Lines without their terminator; an over-long line is reported once and skipped up to its newline."""
    buffer, skipping = bytearray(), False
    while True:
        chunk = await source.read()
        if not chunk:
            if buffer and not skipping:
                yield bytes(buffer)  # a last line without a newline is still a line
            return
        scan_from = len(buffer)  # earlier bytes were searched already: a long line costs one pass, not many
        buffer += chunk
        while True:
            end = buffer.find(b"\n", scan_from)
            scan_from = 0
            if end < 0:
                if len(buffer) > max_line_bytes and not skipping:
                    skipping = True
                    yield _TooLong()
                if skipping:
                    buffer.clear()
                break
            if skipping:
                skipping = False
            elif end > max_line_bytes:
                yield _TooLong()
            else:
                yield bytes(buffer[:end])
            del buffer[: end + 1]


class _Output:
    """The one writer of stdout: a lock keeps replies whole, a broken pipe ends output quietly."""

    def __init__(self, fd: _Fd) -> None:
        self._fd, self._lock, self.broken = fd, anyio.Lock(), anyio.Event()

    async def write(self, data: bytes) -> None:
        """Write one whole line (or nothing, once the reader has gone)."""
        async with self._lock:
            if not data or self.broken.is_set():
                return
            try:
                await self._fd.write_all(data)
            except OSError as exc:  # the client closed its end: nobody is listening any more
                logger.info("stdio: stdout closed (%s); stopping", exc.strerror)
                self.broken.set()


async def _pump_in(
    source: _Fd,
    out: _Output,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    max_line_bytes: int,
) -> None:
    async with sink:
        async for line in _lines(source, max_line_bytes):
            if isinstance(line, _TooLong):
                await out.write(error_line(INVALID_REQUEST, f"Invalid Request: line over {max_line_bytes} bytes", None))
                continue
            if not line.strip():
                continue
            try:
                message = parse_line(line.removesuffix(b"\r"))
            except LineRejected as rejected:
                logger.info("stdio: rejected a request line: %s", rejected.message)
                await out.write(error_line(rejected.code, rejected.message, rejected.request_id))
                continue
            await sink.send(SessionMessage(message))


async def _pump_out(source: MemoryObjectReceiveStream[SessionMessage], out: _Output) -> None:
    async with source:
        async for session_message in source:
            await out.write(_encode(session_message.message))


@contextmanager
def _claim_std_fds() -> Iterator[tuple[int, int]]:
    """Private copies of fd 0/1 for the wire; fd 0 reads /dev/null and fd 1 goes to stderr meanwhile.

    So a child process or a stray print can neither eat a request nor corrupt the wire (as the SDK does).
    """
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        os.close(null)
        sys.stdout.flush()
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
        os.close(wire_out)
        os.close(wire_in)


@asynccontextmanager
async def stdio_wire(
    stdin_fd: int | None = None,
    stdout_fd: int | None = None,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    on_eof: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[ReadSide, WriteSide]]:
    """The (read, write) stream pair a server session expects, over stdin/stdout (or the given descriptors).

    ``on_eof()`` is called when input ends: stdin reached end of file, or stdout's reader went away.
    """
    with ExitStack() as stack:
        if stdin_fd is None or stdout_fd is None:
            stdin_fd, stdout_fd = stack.enter_context(_claim_std_fds())
        out = _Output(_Fd(stdout_fd))
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as tg:
                reader = anyio.CancelScope()
                writer_done = anyio.Event()

                def input_ended() -> None:
                    if on_eof is not None:
                        on_eof()

                async def read_until_eof() -> None:
                    with reader:
                        await _pump_in(_Fd(stdin_fd), out, read_send, max_line_bytes)
                        input_ended()

                async def write_until_closed() -> None:
                    try:
                        await _pump_out(write_recv, out)
                    finally:
                        writer_done.set()

                async def stop_on_broken_pipe() -> None:
                    await out.broken.wait()
                    reader.cancel()
                    await read_send.aclose()  # the session sees end of input
                    input_ended()

                tg.start_soon(read_until_eof)
                tg.start_soon(write_until_closed)
                tg.start_soon(stop_on_broken_pipe)
                try:
                    yield read_recv, write_send
                finally:
                    reader.cancel()
                    await write_send.aclose()
                    with anyio.move_on_after(DRAIN_SECONDS):
                        await writer_done.wait()
                    tg.cancel_scope.cancel()
        finally:
            for stream in (read_send, read_recv, write_send, write_recv):
                stream.close()  # all four, even those a cancelled task never reached


async def serve_stdio(
    server: MCPServer[Any],
    *,
    on_stop: Callable[[int], None] | None = None,
    stdin_fd: int | None = None,
    stdout_fd: int | None = None,
) -> int:
    """Serve ``server`` over stdio until EOF (0), SIGTERM (0) or SIGINT (130); in-flight calls are cancelled.

    ``on_stop(exit_code)`` is called once, as soon as stopping begins (``run_stdio`` arms its deadline there).
    """
    # MCPServer exposes no public handle on its low-level server; run_stdio_async uses exactly these two calls,
    # so the lifespan (which opens and closes the HTTP client) and the init options stay the SDK's own.
    lowlevel = server._lowlevel_server
    options = lowlevel.create_initialization_options()
    exit_code = EXIT_OK
    stopped = False

    def begin_stop(code: int) -> None:
        nonlocal exit_code, stopped
        if not stopped:
            stopped, exit_code = True, code
            if on_stop is not None:
                on_stop(code)

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:

            async def watch_signals(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                task_status.started()
                async for signum in signals:
                    logger.info("stdio: %s received; stopping", signal.Signals(signum).name)
                    begin_stop(EXIT_INTERRUPTED if signum == signal.SIGINT else EXIT_OK)
                    tg.cancel_scope.cancel()

            async def cancel_after_grace() -> None:
                await anyio.sleep(EOF_GRACE_SECONDS)
                tg.cancel_scope.cancel()

            def input_ended() -> None:
                # The SDK answers in-flight calls with "Connection closed" and returns; if a call will not
                # let go, the grace (and run_stdio's deadline, armed here) end it anyway.
                begin_stop(EXIT_OK)
                tg.start_soon(cancel_after_grace)

            await tg.start(watch_signals)
            async with stdio_wire(stdin_fd, stdout_fd, on_eof=input_ended) as (read_stream, write_stream):
                await lowlevel.run(read_stream, write_stream, options)
            begin_stop(EXIT_OK)
            tg.cancel_scope.cancel()
    return exit_code


def _exit_now(code: int) -> None:
    """Last resort when cleanup overran its deadline: leave without waiting for stuck threads."""
    sys.stderr.flush()
    os._exit(code)


def run_stdio(server: MCPServer[Any]) -> int:
    """Serve on the process's stdin/stdout and return the exit code; the process ends within 2 s of a stop."""

    if sys.platform == "win32":  # no fd polling on Windows pipes: the SDK's transport, without these guarantees
        server.run()
        return EXIT_OK

    def arm_deadline(code: int) -> None:
        timer = threading.Timer(STOP_DEADLINE_SECONDS, _exit_now, args=(code,))
        timer.daemon = True
        timer.start()

    try:
        return anyio.run(partial(serve_stdio, server, on_stop=arm_deadline))
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were installed
        return EXIT_INTERRUPTED
