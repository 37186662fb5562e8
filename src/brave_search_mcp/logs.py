"""Structured logs on stderr only, because stdout carries the MCP protocol."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

from brave_search_mcp.config import Settings

PACKAGE_LOGGER = "brave_search_mcp"
CALL_LOGGER = "brave_search_mcp.calls"

# Attributes every LogRecord has; anything else was passed through ``extra=`` and is logged as a field.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("n", 0, "p", 0, "m", None, None))) | {"message", "asctime"}


def _extra_fields(record: logging.LogRecord) -> list[tuple[str, Any]]:
    """Fields passed through ``extra=``, in insertion order."""
    return [(k, v) for k, v in vars(record).items() if k not in _STANDARD_ATTRS and not k.startswith("_")]


class JsonLineFormatter(logging.Formatter):
    """One JSON object per line: easy to grep, impossible to confuse with JSON-RPC on stdout."""

    def __init__(self) -> None:
        super().__init__()
        self._encode = json.JSONEncoder(ensure_ascii=False, default=str).encode  # built once, not per line
        self._second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text

    def _timestamp(self, created: float, msecs: float) -> str:
        second = int(created)
        if second != self._second[0]:
            self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        return f"{self._second[1]}.{int(msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": self._timestamp(record.created, record.msecs),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        payload.update(
            (key, value)
            for key, value in vars(record).items()
            if key not in _STANDARD_ATTRS and not key.startswith("_")
        )
        if record.exc_info and record.levelno >= logging.ERROR:
            payload["exc"] = self.formatException(record.exc_info)
        return self._encode(payload)


class OnceEach:
    """A warning logged the first time each kind of trouble is seen by its owner, then never again: a bad value an
    upstream or a store repeats on every call is one line in the log, not one per call."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._seen: set[str] = set()  # bounded: kinds are a few names fixed in the code

    def warn(self, kind: str, message: str, *args: object, exc_info: BaseException | None = None) -> bool:
        """Log ``message`` (with ``exc_info``'s trace when given) unless ``kind`` was logged before; True when it was
        logged now."""
        if kind in self._seen:
            return False
        self._seen.add(kind)
        self._logger.warning(message, *args, exc_info=exc_info)
        return True


class TextFormatter(logging.Formatter):
    """Human-readable variant for people tailing stderr."""

    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(f"{key}={value}" for key, value in _extra_fields(record))
        line = f"{record.levelname} {record.name}: {record.getMessage()}"
        return f"{line} {extras}" if extras else line


def configure_logging(settings: Settings, stream: TextIO | None = None) -> None:
    """Send this package's logs to stderr in the configured format; quiet third-party chatter."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLineFormatter() if settings.log_format == "json" else TextFormatter())
    package = logging.getLogger(PACKAGE_LOGGER)
    for old in list(package.handlers):
        package.removeHandler(old)
    package.addHandler(handler)
    package.setLevel(settings.log_level)
    package.propagate = False
    # No line of ours shows the caller's file and line, thread or process: the logging HOWTO's "Optimization" switches
    # spare every record looking them up (a call's log line is on its path).
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    # httpx2 logs every request URL at INFO; the SDK logs per-request INFO lines. Keep them to warnings.
    for name in ("httpx2", "httpcore", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
