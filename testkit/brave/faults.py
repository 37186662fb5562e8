"""Fault injection: the queue ``FakeBrave.inject`` fills, the replies each fault produces, and the code each must
become in a tool's envelope (one table, reference/brave-api.md §6)."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from brave_search_mcp.models.errors import ErrorCode

from .errors import field_error
from .exchange import Exchange
from .fixtures import load
from .plan import KeyRing, quota_headers, rate_headers, seconds_to_month_end
from .reply import Reply, gzip_stream

HTTP_FAULTS = frozenset(
    {
        "500", "502", "503", "504", "429", "429_quota", "422_validation", "422_token", "400_not_in_plan", "403",
        "403_bare", "404_subscription", "invalid_json", "html_error", "empty_body", "oversize", "truncated_gzip",
        "headers",
    }
)  # fmt: skip
# headers: a normal answer whose headers named in ``headers={name: value}`` are replaced, or left out where the value
# is None (a broken edge or proxy)
# early_hints: a normal answer after an interim "103 Early Hints" (RFC 8297), which a client must read past
TRANSPORT_FAULTS = frozenset({"refused", "reset", "slow_body", "timeout", "hang", "early_hints"})
FAULTS = HTTP_FAULTS | TRANSPORT_FAULTS
# Faults after which the client never saw a status line.
NO_ANSWER_FAULTS = frozenset({"refused", "timeout", "hang"})

# fault name (FakeBrave.inject) -> the code a tool must answer with
FAULT_CODES: Mapping[str, ErrorCode] = MappingProxyType(
    {
        "400_not_in_plan": ErrorCode.NOT_IN_PLAN,
        "403": ErrorCode.NOT_IN_PLAN,
        "404_subscription": ErrorCode.AUTH_FAILED,
        "422_token": ErrorCode.AUTH_FAILED,
        "422_validation": ErrorCode.UPSTREAM_VALIDATION,
        "429": ErrorCode.RATE_LIMITED,
        "429_quota": ErrorCode.QUOTA_EXCEEDED,
        "500": ErrorCode.UPSTREAM_ERROR,
        "502": ErrorCode.UPSTREAM_ERROR,
        "503": ErrorCode.UPSTREAM_ERROR,
        "403_bare": ErrorCode.UPSTREAM_ERROR,
        "invalid_json": ErrorCode.PARSE_ERROR,
        "refused": ErrorCode.NETWORK_ERROR,
    }
)

_DEFAULT_OVERSIZE = 8 * 1024 * 1024
_HTML_5XX: Mapping[int, tuple[str, bytes]] = {
    500: ("text/plain; charset=utf-8", b"Internal Server Error"),
    502: (
        "text/html",
        b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
        b"</center>\r\n</body>\r\n</html>\r\n",
    ),
    503: ("text/plain; charset=utf-8", b"upstream connect error or disconnect/reset before headers"),
    504: (
        "text/html",
        b"<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n<center><h1>504 Gateway "
        b"Time-out</h1></center>\r\n</body>\r\n</html>\r\n",
    ),
}
_HTML_403_PROXY = (
    b"<!DOCTYPE html>\n<html><head><title>Attention Required! | Access denied</title></head>\n<body><h1>Sorry, you "
    b"have been blocked</h1><p>This request was blocked by the security service protecting this site.</p>"
    b"<p>Ray ID: 8f0e0c0ffee00000</p></body></html>\n"
)
_HTML_ERROR_PAGE = (
    b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Error 502</title></head>\n<body>'
    b"<h1>Bad gateway</h1><p>The web server reported a bad gateway error.</p></body></html>\n"
)
_INVALID_JSON_BODY = b'{"type":"search","query":{"original":"python asyncio"},"web":{"results":[<!-- cut -->'


def fault_cases(*faults: str) -> list[tuple[str, ErrorCode]]:
    """``(fault, code)`` pairs for ``pytest.mark.parametrize``, in the order given."""
    return [(fault, FAULT_CODES[fault]) for fault in faults]


@dataclass
class Fault:
    """One injected fault: its name, the path suffix it waits for, how many answers it takes, its options."""

    name: str
    path: str | None
    times: int
    options: dict[str, Any]


class FaultQueue:
    """Injected faults, used in order by the first request whose path matches."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def inject(self, fault: str, path: str | None, times: int, options: dict[str, Any]) -> None:
        """Queue ``fault`` for the next ``times`` requests whose path ends with ``path`` (any path when None)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(sorted(FAULTS))}")
        if times < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._faults.append(Fault(fault, path, times, dict(options)))

    def take(self, path: str) -> Fault | None:
        """The fault this request gets (one use of it), or None."""
        with self._lock:
            for i, fault in enumerate(self._faults):
                if fault.path is None or path.endswith(fault.path):
                    fault.times -= 1
                    if fault.times <= 0:
                        del self._faults[i]
                    return fault
        return None

    def pending(self) -> int:
        """How many fault answers are still waiting to be used."""
        with self._lock:
            return sum(f.times for f in self._faults)

    def clear(self) -> None:
        """Drop every pending fault."""
        with self._lock:
            self._faults.clear()


def fault_reply(fault: Fault, ex: Exchange, keys: KeyRing, answer: Callable[[bool], Reply]) -> Reply:
    """What ``fault`` answers; ``answer(gzip_ok)`` is the normal answer, for the faults that damage one."""
    reply = _reply(fault.name, fault.options, ex, keys, answer)
    reply.fault = fault.name
    return reply


def _reply(name: str, opts: dict[str, Any], ex: Exchange, keys: KeyRing, answer: Callable[[bool], Reply]) -> Reply:
    if name in ("500", "502", "503", "504"):
        content_type, body = _HTML_5XX[int(name)]
        return ex.plain(int(name), content_type, body)
    if name == "429":
        return _rate_limited(opts, ex, keys)
    if name == "429_quota":  # as Brave sends it: the monthly window reads 0 left, with its reset
        month_reset = str(opts.get("month_reset", seconds_to_month_end()))
        return ex.limit("QUOTA_LIMITED", headers=quota_headers(ex.terms, month_reset))
    if name == "422_validation":
        value = str(opts.get("input", "0"))
        msg = "Input should be greater than or equal to 1"
        return ex.validation([field_error("greater_than_equal", "count", msg, value, {"ge": 1})])
    if name in _ERRORS:
        status, code, detail, meta = _ERRORS[name]
        headers = rate_headers(ex.terms, None) if name == "422_token" else None  # as if the key were unknown
        return ex.error(status, code, detail, dict(meta), headers=headers)
    if name == "403_bare":
        return ex.plain(403, "text/html; charset=UTF-8", _HTML_403_PROXY, rate=False)
    if name in _PLAIN:
        status, content_type, body = _PLAIN[name]
        return ex.plain(status, content_type, body)
    if name == "oversize":
        return _oversize(ex, int(opts.get("size", _DEFAULT_OVERSIZE)), bool(opts.get("gzip", ex.gzip_ok)))
    if name in NO_ANSWER_FAULTS:
        return Reply(0, [], transport_fault=name, options=dict(opts))
    # Faults that damage (or precede) an otherwise normal answer: reset, slow_body, early_hints, truncated_gzip,
    # headers.
    if name == "headers":
        return _with_headers(answer(ex.gzip_ok), opts.get("headers", {}))
    if name == "truncated_gzip":
        reply = answer(False)
        packed = gzip.compress(reply.body, mtime=0)
        reply.body = packed[: int(opts.get("keep", len(packed) // 2))]
        reply.headers.append(("Content-Encoding", "gzip"))
        return reply
    reply = answer(ex.gzip_ok)
    reply.transport_fault = name
    reply.options = dict(opts)
    return reply


_ERRORS: Mapping[str, tuple[int, str, str, Mapping[str, str]]] = {
    "422_token": (422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.",
                  {"component": "authentication"}),
    "400_not_in_plan": (400, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan.",
                        {"component": "authentication", "plan": "Free"}),
    "403": (403, "RESOURCE_NOT_ALLOWED", "The user is not authorized to access this resource.", {"component": "api"}),
    "404_subscription": (404, "SUBSCRIPTION_NOT_FOUND", "No subscription found.", {"component": "subscriptions"}),
}  # fmt: skip
_PLAIN: Mapping[str, tuple[int, str, bytes]] = {
    "invalid_json": (200, "application/json", _INVALID_JSON_BODY),
    "html_error": (502, "text/html; charset=utf-8", _HTML_ERROR_PAGE),
    "empty_body": (200, "application/json", b""),
}


def _with_headers(reply: Reply, replaced: Mapping[str, Any]) -> Reply:
    """``reply`` with each header named in ``replaced`` set to its value (None: left out), whatever it carried."""
    names = {name.lower() for name in replaced}
    reply.headers = [(k, v) for k, v in reply.headers if k.lower() not in names]
    reply.headers += [(str(name), str(value)) for name, value in replaced.items() if value is not None]
    return reply


def _rate_limited(opts: dict[str, Any], ex: Exchange, keys: KeyRing) -> Reply:
    reset = int(opts.get("reset", 1))
    keys.rate_limited += 1
    if opts.get("reset_only"):
        headers = [("X-RateLimit-Reset", f"{reset}, {seconds_to_month_end()}")]
    else:
        headers = ex.rate_headers(remaining_second=0)
        headers[-1] = ("X-RateLimit-Reset", f"{reset}, {seconds_to_month_end()}")
    if opts.get("retry_after") is not None:
        headers.append(("Retry-After", str(opts["retry_after"])))
    return ex.limit("RATE_LIMITED", headers=headers)


def _oversize(ex: Exchange, size: int, use_gzip: bool) -> Reply:
    sample = load("web")["web"]["results"][0]
    headers = [("Content-Type", "application/json"), *ex.rate_headers()]

    def plain() -> Iterator[bytes]:
        return _oversize_chunks(size, sample)

    def packed() -> Iterator[bytes]:
        return gzip_stream(_oversize_chunks(size, sample))

    if use_gzip:
        headers.append(("Content-Encoding", "gzip"))
        return Reply(200, headers, chunks=packed)
    return Reply(200, headers, chunks=plain)


def _oversize_chunks(size: int, sample: dict[str, Any]) -> Iterator[bytes]:
    """Valid JSON of exactly ``size`` bytes (when size allows): repeated web results plus padding."""
    head = (
        b'{"type":"search","query":{"original":"oversize","more_results_available":false},'
        b'"web":{"type":"search","results":['
    )
    mid = b']},"padding":"'
    end = b'"}'
    item = json.dumps(sample, ensure_ascii=False, separators=(",", ":")).encode()
    avail = size - len(head) - len(mid) - len(end)
    count = max(0, (avail + 1) // (len(item) + 1))
    used = count * len(item) + max(0, count - 1)
    pad = max(0, avail - used)
    buf = bytearray(head)
    for i in range(count):
        if i:
            buf += b","
        buf += item
        if len(buf) >= 65536:
            yield bytes(buf)
            buf.clear()
    buf += mid
    yield bytes(buf)
    block = b"x" * 65536
    while pad > 0:
        take = min(pad, len(block))
        yield block[:take]
        pad -= take
    yield end
