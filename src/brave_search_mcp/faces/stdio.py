"""Our own stdio transport: every bad request line gets a JSON-RPC error reply, and signals end the process promptly.

Why not the SDK's ``stdio_server``: it decodes stdin with ``errors="replace"`` and, for a line it cannot
validate (invalid UTF-8, truncated JSON, nesting past pydantic's limit, a lone surrogate escape), hands the
session an exception that is logged and dropped — the client waits forever for a reply. It also leaves
SIGINT/SIGTERM to the interpreter, so Ctrl-C during a tool call stops answering without exiting. Nor as a filter
in front of it (through its public ``stdin``/``stdout`` arguments): we would still supply both ends (its own reads
and writes run in worker threads, which can block the exit), so it would add only a second parse of every line and
a task switch per reply, and its writer task ends the whole server on a reply that cannot be UTF-8 encoded. The
session is the SDK's, through the public ``Server.run(read, write, options)``: this module supplies the streams.

Here stdin is read as bytes, one line at a time (capped), decoded strictly, parsed with ``json`` and checked
for lone surrogates and nesting before JSON-RPC validation; a line that fails gets ``-32700``/``-32600`` with
its id when the id can be read (else ``null``) and the next line is served. All stdout writes go through one
``Output``, whole lines in order (``stdio_io``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from functools import partial
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus
from mcp.server import Server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter
from pydantic import ValidationError

from brave_search_mcp.faces.stdio_io import Fd, LineReader, Output, TooLong

if sys.platform != "win32":
    import fcntl

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 4 * 1024 * 1024  # same ceiling as the SDK's HTTP request bodies
MAX_NESTING = 100  # far deeper than any MCP message; pydantic's JSON parser gives up near 128
PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR = -32700, -32600, -32603
EXIT_OK, EXIT_INTERRUPTED = 0, 130
STOP_DEADLINE_SECONDS = 1.5  # after a stop begins, the process is gone within this even if a call is stuck
DRAIN_SECONDS = 1.0  # at EOF, how long replies already queued may take to reach stdout
EOF_GRACE_SECONDS = 1.0  # at EOF, how long in-flight calls may take to wind down before they are cancelled

RequestId = int | str


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
    # Only a \u escape can make a lone surrogate (the bytes were strict UTF-8), and only MAX_NESTING brackets can
    # nest that deep: an ordinary line has neither, and its tree need not be walked.
    if b"\\u" in line or line.count(b"[") + line.count(b"{") >= MAX_NESTING:
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
        return _internal_error_for(message)


def _internal_error_for(message: JSONRPCMessage) -> bytes:
    """The error reply sent instead of a message that cannot go out (nothing, for a notification)."""
    if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
        return error_line(INTERNAL_ERROR, "Internal error: the reply could not be encoded", message.id)
    return b""


class _Stream:
    """What every stream the session holds offers besides its own calls: ``aclose`` and ``async with``."""

    def close(self) -> None:
        """Done with the stream."""

    async def aclose(self) -> None:
        """As ``close``."""
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class ReadSide(_Stream):
    """What the session reads: the next request, read and parsed by the task that asks for it (no hand-over).

    A bad line is answered with its JSON-RPC error and skipped. Input ends at stdin's end of file, or once
    ``stop()`` is called (stdout's reader went away); either way ``on_end()`` is called once.
    """

    def __init__(self, source: Fd, out: Output, max_line_bytes: int, on_end: Callable[[], None]) -> None:
        self._lines, self._out, self._max_line_bytes = LineReader(source, max_line_bytes), out, max_line_bytes
        self._on_end, self._ended, self._waiting = on_end, False, anyio.CancelScope()

    async def receive(self) -> SessionMessage | Exception:
        """The next request (a ``SessionMessage``); ``EndOfStream`` once input has ended."""
        while not self._ended:
            line: bytes | TooLong | None = None  # stays None when stop() ends the wait
            with anyio.CancelScope() as self._waiting:
                line = await self._lines.next()
            if line is None:
                self.stop()
                break
            if isinstance(line, TooLong):
                await self._out.write(
                    error_line(INVALID_REQUEST, f"Invalid Request: line over {self._max_line_bytes} bytes", None)
                )
                continue
            if not line.strip():
                continue
            try:
                return SessionMessage(parse_line(line.removesuffix(b"\r")))
            except LineRejected as rejected:
                logger.info("stdio: rejected a request line: %s", rejected.message)
                await self._out.write(error_line(rejected.code, rejected.message, rejected.request_id))
        raise anyio.EndOfStream

    def stop(self) -> None:
        """Input ends now: a read waiting for a line gives up, and ``on_end()`` is called (once)."""
        if not self._ended:
            self._ended = True
            self._waiting.cancel()
            self._on_end()

    def __aiter__(self) -> ReadSide:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class WriteSide(_Stream):
    """What the session writes to: each message is encoded by the task that sends it and written whole, in order.

    Like a memory stream it raises ``ClosedResourceError`` once closed, and a send in a cancelled scope is not sent.
    """

    def __init__(self, out: Output) -> None:
        self._out, self._closed = out, False

    async def send(self, item: SessionMessage, /) -> None:
        """Encode and write one message (or nothing once the reader has gone)."""
        if self._closed:
            raise anyio.ClosedResourceError
        await anyio.lowlevel.checkpoint_if_cancelled()
        await self._out.write(_encode(item.message))

    def close(self) -> None:
        """No more messages: the output finishes what is queued."""
        self._closed = True
        self._out.finish()

    def abort(self) -> None:
        """The process is stopping: nothing more reaches stdout, as when the writer task was cancelled."""
        self.close()
        self._out.stop()


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
        out = Output(Fd(stdout_fd))
        write_side = WriteSide(out)
        read_side = ReadSide(Fd(stdin_fd), out, max_line_bytes, on_eof or (lambda: None))
        async with anyio.create_task_group() as tg:
            writer_done = anyio.Event()

            async def write_until_closed() -> None:
                try:
                    await out.run()
                finally:
                    writer_done.set()

            async def stop_on_broken_pipe() -> None:
                await out.broken.wait()
                read_side.stop()  # the session sees end of input

            tg.start_soon(write_until_closed)
            tg.start_soon(stop_on_broken_pipe)
            try:
                yield read_side, write_side
            finally:
                write_side.close()
                with anyio.move_on_after(DRAIN_SECONDS):
                    await writer_done.wait()
                tg.cancel_scope.cancel()


async def serve_stdio(
    server: Server[Any],
    *,
    on_stop: Callable[[int], None] | None = None,
    stdin_fd: int | None = None,
    stdout_fd: int | None = None,
) -> int:
    """Serve ``server`` over stdio until EOF (0), SIGTERM (0) or SIGINT (130); in-flight calls are cancelled.

    ``on_stop(exit_code)`` is called once, as soon as stopping begins (``run_stdio`` arms its deadline there).
    """
    options = server.create_initialization_options()  # run() enters the lifespan (which opens the HTTP client)
    exit_code = EXIT_OK
    stopped = False

    def begin_stop(code: int) -> None:
        nonlocal exit_code, stopped
        if not stopped:
            stopped, exit_code = True, code
            if on_stop is not None:
                on_stop(code)

    wire: list[WriteSide] = []  # the write side, once open

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:

            def cancel_all() -> None:
                for write_side in wire:  # silenced at once, as if its writer task were the first one cancelled
                    write_side.abort()
                tg.cancel_scope.cancel()

            async def watch_signals(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                task_status.started()
                async for signum in signals:
                    logger.info("stdio: %s received; stopping", signal.Signals(signum).name)
                    begin_stop(EXIT_INTERRUPTED if signum == signal.SIGINT else EXIT_OK)
                    cancel_all()

            async def cancel_after_grace() -> None:
                await anyio.sleep(EOF_GRACE_SECONDS)
                cancel_all()

            def input_ended() -> None:
                # The SDK answers in-flight calls with "Connection closed" and returns; if a call will not
                # let go, the grace (and run_stdio's deadline, armed here) end it anyway.
                begin_stop(EXIT_OK)
                tg.start_soon(cancel_after_grace)

            await tg.start(watch_signals)
            async with stdio_wire(stdin_fd, stdout_fd, on_eof=input_ended) as (read_stream, write_stream):
                wire.append(write_stream)
                await server.run(read_stream, write_stream, options)
            begin_stop(EXIT_OK)
            tg.cancel_scope.cancel()
    return exit_code


async def _serve_sdk_stdio(server: Server[Any]) -> None:
    """The SDK's own stdio transport (Windows)."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _exit_now(code: int) -> None:
    """Last resort when cleanup overran its deadline: leave without waiting for stuck threads."""
    sys.stderr.flush()
    os._exit(code)


def run_stdio(server: Server[Any]) -> int:
    """Serve on the process's stdin/stdout and return the exit code; the process ends within 2 s of a stop."""

    if sys.platform == "win32":  # no fd polling on Windows pipes: the SDK's transport, without these guarantees
        anyio.run(_serve_sdk_stdio, server)
        return EXIT_OK

    def arm_deadline(code: int) -> None:
        timer = threading.Timer(STOP_DEADLINE_SECONDS, _exit_now, args=(code,))
        timer.daemon = True
        timer.start()

    try:
        return anyio.run(partial(serve_stdio, server, on_stop=arm_deadline))
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were installed
        return EXIT_INTERRUPTED
