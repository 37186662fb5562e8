"""A faithful, deterministic stand-in for the Brave Search API, so every layer can be tested offline."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import logging
import re
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2

from . import more

logger = logging.getLogger(__name__)

VALID_KEY = "test-key-not-real"

FIXTURES_DIR = Path(__file__).with_name("fixtures")

WEB_PATH = "/res/v1/web/search"
NEWS_PATH = "/res/v1/news/search"
IMAGES_PATH = "/res/v1/images/search"
VIDEOS_PATH = "/res/v1/videos/search"
SUMMARIZER_PATH = "/res/v1/summarizer/search"

_ENDPOINTS: Mapping[str, str] = {
    WEB_PATH: "web",
    NEWS_PATH: "news",
    IMAGES_PATH: "images",
    VIDEOS_PATH: "videos",
    SUMMARIZER_PATH: "summarizer",
}

# Parameters each endpoint documents (reference/brave-api.md §3); anything else is rejected (strict fake).
_ALLOWED: Mapping[str, tuple[str, ...]] = {
    "web": (
        "q",
        "country",
        "search_lang",
        "ui_lang",
        "count",
        "offset",
        "safesearch",
        "freshness",
        "text_decorations",
        "spellcheck",
        "result_filter",
        "goggles_id",
        "goggles",
        "units",
        "extra_snippets",
        "summary",
        "enable_rich_callback",
        "include_fetch_metadata",
        "operators",
    ),
    "news": (
        "q",
        "country",
        "search_lang",
        "ui_lang",
        "count",
        "offset",
        "safesearch",
        "freshness",
        "spellcheck",
        "extra_snippets",
        "goggles",
        "include_fetch_metadata",
        "operators",
    ),
    "videos": (
        "q",
        "country",
        "search_lang",
        "ui_lang",
        "count",
        "offset",
        "safesearch",
        "freshness",
        "spellcheck",
        "include_fetch_metadata",
        "operators",
    ),
    "images": ("q", "country", "search_lang", "count", "safesearch", "spellcheck"),
    "summarizer": ("key", "entity_info", "inline_references"),
}
_BOOL_PARAMS = frozenset(
    {
        "text_decorations",
        "spellcheck",
        "extra_snippets",
        "summary",
        "enable_rich_callback",
        "include_fetch_metadata",
        "operators",
        "entity_info",
        "inline_references",
    }
)
_COUNT_MAX: Mapping[str, int] = {"web": 20, "news": 50, "videos": 50, "images": 200}
_COUNT_DEFAULT: Mapping[str, int] = {"web": 20, "news": 20, "videos": 20, "images": 50}
_BILLABLE = frozenset({"web", "news", "videos", "images"})  # summarizer polls are not billed (§3.7)

COUNTRIES: tuple[str, ...] = (
    "AR",
    "AU",
    "AT",
    "BE",
    "BR",
    "CA",
    "CL",
    "DK",
    "FI",
    "FR",
    "DE",
    "GR",
    "HK",
    "IN",
    "ID",
    "IT",
    "JP",
    "KR",
    "MY",
    "MX",
    "NL",
    "NZ",
    "NO",
    "CN",
    "PL",
    "PT",
    "PH",
    "RU",
    "SA",
    "ZA",
    "ES",
    "SE",
    "CH",
    "TW",
    "TR",
    "GB",
    "US",
    "ALL",
)
SEARCH_LANGS: tuple[str, ...] = (
    "ar",
    "eu",
    "bn",
    "bg",
    "ca",
    "zh-hans",
    "zh-hant",
    "hr",
    "cs",
    "da",
    "nl",
    "en",
    "en-gb",
    "et",
    "fi",
    "fr",
    "gl",
    "de",
    "el",
    "gu",
    "he",
    "hi",
    "hu",
    "is",
    "it",
    "ja",
    "jp",
    "kn",
    "ko",
    "lv",
    "lt",
    "ms",
    "ml",
    "mr",
    "nb",
    "pl",
    "pt-br",
    "pt-pt",
    "pa",
    "ro",
    "ru",
    "sr",
    "sk",
    "sl",
    "es",
    "sv",
    "ta",
    "te",
    "th",
    "tr",
    "uk",
    "vi",
)
UI_LANGS: tuple[str, ...] = (
    "es-AR",
    "en-AU",
    "de-AT",
    "nl-BE",
    "fr-BE",
    "pt-BR",
    "en-CA",
    "fr-CA",
    "es-CL",
    "da-DK",
    "fi-FI",
    "fr-FR",
    "de-DE",
    "el-GR",
    "zh-HK",
    "en-IN",
    "en-ID",
    "it-IT",
    "ja-JP",
    "ko-KR",
    "en-MY",
    "es-MX",
    "nl-NL",
    "en-NZ",
    "no-NO",
    "zh-CN",
    "pl-PL",
    "en-PH",
    "ru-RU",
    "en-ZA",
    "es-ES",
    "sv-SE",
    "fr-CH",
    "de-CH",
    "zh-TW",
    "tr-TR",
    "en-GB",
    "en-US",
    "es-US",
)
RESULT_FILTERS = ("discussions", "faq", "infobox", "news", "query", "summarizer", "videos", "web", "locations")
_SAFESEARCH: Mapping[str, tuple[str, ...]] = {
    "web": ("off", "moderate", "strict"),
    "news": ("off", "moderate", "strict"),
    "videos": ("off", "moderate", "strict"),
    "images": ("off", "strict"),
}
_UNITS = ("metric", "imperial")
_FRESHNESS_PATTERN = r"^(pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$"
_FRESHNESS_RE = re.compile(_FRESHNESS_PATTERN)
_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$")
_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})
_MAX_Q_CHARS = 400
_MAX_Q_WORDS = 50
_OFFSET_MAX = 9
_MONTH_WINDOW = 2592000
_ID_NAMESPACE = uuid.UUID("6f1d6c3e-6a4e-4d3b-9a57-0b3f3c1f2e10")
_DEFAULT_OVERSIZE = 8 * 1024 * 1024

HTTP_FAULTS = frozenset(
    {
        "500",
        "502",
        "503",
        "504",
        "429",
        "429_quota",
        "422_validation",
        "422_token",
        "400_not_in_plan",
        "403",
        "403_bare",
        "404_subscription",
        "invalid_json",
        "html_error",
        "empty_body",
        "oversize",
        "truncated_gzip",
    }
)
TRANSPORT_FAULTS = frozenset({"refused", "reset", "slow_body", "timeout", "hang"})
FAULTS = HTTP_FAULTS | TRANSPORT_FAULTS
# Faults after which the client never saw a status line.
NO_ANSWER_FAULTS = frozenset({"refused", "timeout", "hang"})

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


@dataclass
class RecordedRequest:
    """One request as the fake saw it (the token's value is never kept), so tests can assert what was sent."""

    method: str
    path: str
    params: list[tuple[str, str]]
    headers: dict[str, str]
    has_token: bool
    status: int = 0  # 0 when the fault gave no status line (refused, timeout, hang)
    fault: str | None = None
    body: bytes = b""  # request body (chat completions are POSTed)


@dataclass
class Reply:
    """What the fake answers; both faces (MockTransport and the real server) render it the same way."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    transport_fault: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    fault: str | None = None  # the injected fault that produced this reply, if any
    chunks: Callable[[], Iterator[bytes]] | None = None  # streamed body, sent without Content-Length

    @property
    def streamed(self) -> bool:
        """True when the body is produced lazily and must be sent without a Content-Length."""
        return self.chunks is not None

    def header(self, name: str) -> str | None:
        """First value of header ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)

    def iter_body(self) -> Iterator[bytes]:
        """The body as the wire carries it (possibly gzip), in order."""
        if self.chunks is not None:
            yield from self.chunks()
        elif self.body:
            yield self.body

    def json(self) -> Any:
        """The decoded JSON body (gunzipped when needed); for tests that call ``handle`` directly."""
        raw = b"".join(self.iter_body())
        if self.header("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        return json.loads(raw)


@dataclass
class _Fault:
    name: str
    path: str | None
    times: int
    options: dict[str, Any]


@dataclass
class _KeyState:
    window: deque[float] = field(default_factory=deque)
    used_month: int = 0


@dataclass
class _Summary:
    query: str
    polls: int = 0


def _load_fixtures() -> dict[str, dict[str, Any]]:
    names = ("web", "news", "videos", "images", "summarizer")
    return {name: json.loads((FIXTURES_DIR / f"{name}.json").read_text(encoding="utf-8")) for name in names}


def _accepts_gzip(value: str) -> bool:
    for part in value.split(","):
        name, _, rest = part.partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = rest.strip().lower()
            return not (q.startswith("q=") and float(q[2:] or "0") == 0.0)
    return False


def _enum_text(values: Iterable[str]) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def _err(kind: str, name: str, msg: str, value: Any, ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": kind, "loc": ["query", name], "msg": msg, "input": value}
    if ctx is not None:
        error["ctx"] = ctx
    return error


def _truthy(value: str | None, default: bool) -> bool:
    return default if value is None else value.strip().lower() in _TRUE


def _fold(query: str) -> str:
    return " ".join(query.lower().split())


def _strip_strong(text: str) -> str:
    return text.replace("<strong>", "").replace("</strong>", "")


def _seconds_to_month_end() -> int:
    now = datetime.now(UTC)
    nxt = (
        datetime(now.year + 1, 1, 1, tzinfo=UTC)
        if now.month == 12
        else datetime(now.year, now.month + 1, 1, tzinfo=UTC)
    )
    return max(1, int((nxt - now).total_seconds()))


def _gzip_stream(chunks: Iterable[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    for chunk in chunks:
        out = compressor.compress(chunk)
        if out:
            yield out
    yield compressor.flush()


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


class FakeBrave:
    """Brave's documented protocol (auth, validation, rate limits, sections, summarizer) plus injectable faults."""

    def __init__(
        self,
        *,
        api_keys: Iterable[str] = (VALID_KEY,),
        rate_per_second: int = 50,
        monthly_limit: int = 2000,
        clock: Callable[[], float] = time.monotonic,
        summarizer_pending_polls: int = 1,
    ) -> None:
        self._key_names = tuple(api_keys)
        if not self._key_names:
            raise ValueError("FakeBrave needs at least one API key")
        if rate_per_second < 1:
            raise ValueError("rate_per_second must be >= 1")
        if monthly_limit < 0:
            raise ValueError("monthly_limit must be >= 0 (0 = unlimited)")
        self.rate_per_second = rate_per_second
        self.monthly_limit = monthly_limit
        self.summarizer_pending_polls = summarizer_pending_polls
        self._clock = clock
        self._lock = threading.RLock()
        self._fixtures = _load_fixtures()
        self.requests: list[RecordedRequest] = []
        self.rate_limited_count = 0
        # Explicit behaviour controls (queries compared case-insensitively, whitespace-collapsed):
        self.no_results_for: set[str] = set()  # answer these queries with every section empty
        # A plan header that lies: advertise this per-second rate while enforcing rate_per_second.
        self.advertised_rate_per_second: int | None = None
        self.spellcheck_rewrites: dict[str, str] = {}  # query -> what Brave says it searched instead
        self.unsummarizable: set[str] = set()  # queries Brave gives no summarizer key for
        self.summary_failing: set[str] = set()  # queries whose summary ends with status "failed"
        self.summary_never_ready: set[str] = set()  # queries whose summary stays "pending" forever
        self._keys: dict[str, _KeyState] = {}
        self._faults: list[_Fault] = []
        self._summaries: dict[str, _Summary] = {}
        self._error_seq = 0
        self.more = more.MoreBrave()  # controls of the LLM-context, local and Answers endpoints
        self.reset()

    # ------------------------------------------------------------------ public API

    def reset(self) -> None:
        """Forget requests, counters, pending faults and summarizer keys (keys, limits and clock stay)."""
        with self._lock:
            self.requests.clear()
            self.rate_limited_count = 0
            self._keys = {key: _KeyState() for key in self._key_names}
            self._faults.clear()
            self._summaries.clear()
            self._error_seq = 0

    def hits(self, path_suffix: str | None = None) -> int:
        """How many requests reached the fake (optionally only those whose path ends with ``path_suffix``)."""
        with self._lock:
            if path_suffix is None:
                return len(self.requests)
            return sum(1 for r in self.requests if r.path.endswith(path_suffix))

    def stats(self) -> dict[str, Any]:
        """Counters for out-of-process users (the server's /__fake/stats)."""
        with self._lock:
            by_path: dict[str, int] = {}
            for r in self.requests:
                by_path[r.path] = by_path.get(r.path, 0) + 1
            return {"requests": len(self.requests), "rate_limited": self.rate_limited_count, "by_path": by_path}

    def pending_faults(self) -> int:
        """How many injected fault answers are still waiting to be used."""
        with self._lock:
            return sum(f.times for f in self._faults)

    def inject(self, fault: str, *, path: str | None = None, times: int = 1, **options: Any) -> None:
        """Queue ``fault`` for the next ``times`` requests whose path ends with ``path`` (any path when None)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(sorted(FAULTS))}")
        if times < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._faults.append(_Fault(fault, path, times, dict(options)))

    def handle(
        self, method: str, path: str, params: list[tuple[str, str]], headers: Mapping[str, str], body: bytes = b""
    ) -> Reply:
        """Answer one request the way Brave would (or with the next matching injected fault)."""
        lowered = {k.lower(): v for k, v in headers.items()}
        token = lowered.pop("x-subscription-token", None) or more.bearer_token(path, lowered)
        record = RecordedRequest(method.upper(), path, list(params), lowered, token is not None, body=body)
        with self._lock:
            self.requests.append(record)
            reply = self._dispatch(record, token)
            record.status = 0 if reply.transport_fault in NO_ANSWER_FAULTS else reply.status
            record.fault = reply.fault
        if reply.fault:
            logger.debug("fake brave: %s %s -> fault %s", method, path, reply.fault)
        return reply

    def mock_transport(self) -> httpx2.MockTransport:
        """An httpx2 transport backed by this fake, for unit tests without sockets."""

        def handler(request: httpx2.Request) -> httpx2.Response:
            reply = self.handle(
                request.method,
                request.url.path,
                list(request.url.params.multi_items()),
                dict(request.headers.items()),
                request.content,
            )
            return _to_httpx(reply, request)

        return httpx2.MockTransport(handler)

    # ------------------------------------------------------------------ dispatch

    def _take_fault(self, path: str) -> _Fault | None:
        for i, fault in enumerate(self._faults):
            if fault.path is None or path.endswith(fault.path):
                fault.times -= 1
                if fault.times <= 0:
                    del self._faults[i]
                return fault
        return None

    def _dispatch(self, record: RecordedRequest, token: str | None) -> Reply:
        gzip_ok = _accepts_gzip(record.headers.get("accept-encoding", ""))
        fault = self._take_fault(record.path)
        if fault is None:
            return self._answer(record, token, gzip_ok)
        reply = self._fault_reply(fault, record, token, gzip_ok)
        reply.fault = fault.name
        return reply

    def _state_for(self, token: str | None) -> _KeyState | None:
        return None if token is None else self._keys.get(token)

    def _answer(self, record: RecordedRequest, token: str | None, gzip_ok: bool) -> Reply:
        endpoint = _ENDPOINTS.get(record.path)
        extra = record.path in more.PATHS  # LLM context, local, Answers: testkit/brave/more.py
        if endpoint is None and not extra:
            return self._error(404, "NOT_FOUND", "The requested resource was not found.", {}, None, gzip_ok)
        if record.method != "GET" and not extra:
            return self._error(405, "METHOD_NOT_ALLOWED", "Method Not Allowed", {}, None, gzip_ok)
        if token is None:
            missing = {
                "type": "missing",
                "loc": ["header", "x-subscription-token"],
                "msg": "Field required",
                "input": None,
            }
            return self._validation([missing], None, gzip_ok)
        state = self._keys.get(token)
        if state is None:
            return self._error(
                422,
                "SUBSCRIPTION_TOKEN_INVALID",
                "The provided subscription token is invalid.",
                {"component": "authentication"},
                None,
                gzip_ok,
            )
        now = self._clock()
        while state.window and state.window[0] <= now - 1.0:
            state.window.popleft()
        if len(state.window) >= self.rate_per_second:
            self.rate_limited_count += 1
            return self._limit_error("RATE_LIMITED", state, gzip_ok)
        state.window.append(now)
        if self.monthly_limit and state.used_month >= self.monthly_limit:
            return self._limit_error("QUOTA_LIMITED", state, gzip_ok)
        if endpoint is None:
            return self.more.answer(self, record, state, gzip_ok)
        values, goggles, errors = _validate(endpoint, record.params)
        if endpoint == "summarizer" and not errors and values["key"] not in self._summaries:
            errors.append(
                _err("value_error", "key", "Value error, unknown or expired summarizer key", values["key"], {})
            )
        if errors:
            return self._validation(errors, state, gzip_ok)
        if endpoint == "web":
            body = self._web_body(values, goggles)
        elif endpoint == "summarizer":
            body = self._summarizer_body(values)
        elif endpoint == "images":
            body = self._images_body(values)
        else:
            body = self._list_body(endpoint, values)
        if endpoint in _BILLABLE:
            state.used_month += 1
        return self._json_reply(200, body, state, gzip_ok)

    # ------------------------------------------------------------------ replies

    def _rate_headers(self, state: _KeyState | None, *, remaining_second: int | None = None) -> list[tuple[str, str]]:
        rps, monthly = self.advertised_rate_per_second or self.rate_per_second, self.monthly_limit
        if remaining_second is None:
            remaining_second = rps - len(state.window) if state is not None else rps
        used = state.used_month if state is not None else 0
        left_month = max(0, monthly - used) if monthly else 0
        return [
            ("X-RateLimit-Limit", f"{rps}, {monthly}"),
            ("X-RateLimit-Policy", f"{rps};w=1, {monthly};w={_MONTH_WINDOW}"),
            ("X-RateLimit-Remaining", f"{max(0, remaining_second)}, {left_month}"),
            ("X-RateLimit-Reset", f"1, {_seconds_to_month_end()}"),
        ]

    def _json_reply(
        self,
        status: int,
        obj: Any,
        state: _KeyState | None,
        gzip_ok: bool,
        *,
        rate_headers: list[tuple[str, str]] | None = None,
    ) -> Reply:
        body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        headers = [("Content-Type", "application/json")]
        headers += self._rate_headers(state) if rate_headers is None else rate_headers
        if gzip_ok:
            body = gzip.compress(body, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        return Reply(status, headers, body)

    def _error_obj(self, status: int, code: str, detail: str, meta: dict[str, Any]) -> dict[str, Any]:
        self._error_seq += 1
        return {
            "type": "ErrorResponse",
            "error": {
                "id": str(uuid.uuid5(_ID_NAMESPACE, str(self._error_seq))),
                "status": status,
                "code": code,
                "detail": detail,
                "meta": meta,
            },
            "time": int(time.time()),
        }

    def _error(
        self,
        status: int,
        code: str,
        detail: str,
        meta: dict[str, Any],
        state: _KeyState | None,
        gzip_ok: bool,
        *,
        rate_headers: list[tuple[str, str]] | None = None,
    ) -> Reply:
        return self._json_reply(
            status, self._error_obj(status, code, detail, meta), state, gzip_ok, rate_headers=rate_headers
        )

    def _validation(self, errors: list[dict[str, Any]], state: _KeyState | None, gzip_ok: bool) -> Reply:
        return self._error(
            422, "VALIDATION", "Unable to validate request parameter(s)", {"errors": errors}, state, gzip_ok
        )

    def _limit_meta(self, state: _KeyState | None) -> dict[str, Any]:
        return {
            "plan": "Free",
            "rate_limit": self.rate_per_second,
            "rate_current": len(state.window) if state is not None else self.rate_per_second,
            "quota_limit": self.monthly_limit,
            "quota_current": state.used_month if state is not None else 0,
            "org_rate_limit": None,
            "org_rate_current": 0,
            "component": "rate_limiter",
        }

    def _limit_error(
        self,
        code: str,
        state: _KeyState | None,
        gzip_ok: bool,
        *,
        rate_headers: list[tuple[str, str]] | None = None,
    ) -> Reply:
        detail = (
            "Request rate limit exceeded for plan."
            if code == "RATE_LIMITED"
            else "Request quota limit exceeded for plan."
        )
        if rate_headers is None:
            rate_headers = self._rate_headers(state, remaining_second=0 if code == "RATE_LIMITED" else None)
        return self._error(429, code, detail, self._limit_meta(state), state, gzip_ok, rate_headers=rate_headers)

    def _plain(self, status: int, content_type: str, body: bytes, state: _KeyState | None, *, rate: bool) -> Reply:
        headers = [("Content-Type", content_type)]
        if rate:
            headers += self._rate_headers(state)
        return Reply(status, headers, body)

    def _fault_reply(self, fault: _Fault, record: RecordedRequest, token: str | None, gzip_ok: bool) -> Reply:
        name, opts = fault.name, fault.options
        state = self._state_for(token)
        if name in ("500", "502", "503", "504"):
            status = int(name)
            content_type, body = _HTML_5XX[status]
            return self._plain(status, content_type, body, state, rate=True)
        if name == "429":
            reset = int(opts.get("reset", 1))
            self.rate_limited_count += 1
            if opts.get("reset_only"):
                rate_headers = [("X-RateLimit-Reset", f"{reset}, {_seconds_to_month_end()}")]
            else:
                rate_headers = self._rate_headers(state, remaining_second=0)
                rate_headers[-1] = ("X-RateLimit-Reset", f"{reset}, {_seconds_to_month_end()}")
            if opts.get("retry_after") is not None:
                rate_headers.append(("Retry-After", str(opts["retry_after"])))
            return self._limit_error("RATE_LIMITED", state, gzip_ok, rate_headers=rate_headers)
        if name == "429_quota":  # as Brave sends it: the monthly window reads 0 left, with its reset
            month_reset = str(opts.get("month_reset", _seconds_to_month_end()))
            headers = [
                ("X-RateLimit-Limit", f"{self.rate_per_second}, {self.monthly_limit}"),
                ("X-RateLimit-Policy", f"{self.rate_per_second};w=1, {self.monthly_limit};w=2592000"),
                ("X-RateLimit-Remaining", f"{self.rate_per_second}, 0"),
                ("X-RateLimit-Reset", f"1, {month_reset}"),
            ]
            return self._limit_error("QUOTA_LIMITED", state, gzip_ok, rate_headers=headers)
        if name == "422_validation":
            value = str(opts.get("input", "0"))
            error = _err("greater_than_equal", "count", "Input should be greater than or equal to 1", value, {"ge": 1})
            return self._validation([error], state, gzip_ok)
        if name == "422_token":
            meta = {"component": "authentication"}
            return self._error(
                422, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.", meta, None, gzip_ok
            )
        if name == "400_not_in_plan":
            meta = {"component": "authentication", "plan": "Free"}
            return self._error(
                400, "OPTION_NOT_IN_PLAN", "The option is not subscribed in the plan.", meta, state, gzip_ok
            )
        if name == "403":
            detail = "The user is not authorized to access this resource."
            return self._error(403, "RESOURCE_NOT_ALLOWED", detail, {"component": "api"}, state, gzip_ok)
        if name == "403_bare":
            return self._plain(403, "text/html; charset=UTF-8", _HTML_403_PROXY, None, rate=False)
        if name == "404_subscription":
            meta = {"component": "subscriptions"}
            return self._error(404, "SUBSCRIPTION_NOT_FOUND", "No subscription found.", meta, state, gzip_ok)
        if name == "invalid_json":
            return self._plain(200, "application/json", _INVALID_JSON_BODY, state, rate=True)
        if name == "html_error":
            return self._plain(502, "text/html; charset=utf-8", _HTML_ERROR_PAGE, state, rate=True)
        if name == "empty_body":
            return self._plain(200, "application/json", b"", state, rate=True)
        if name == "oversize":
            return self._oversize(int(opts.get("size", _DEFAULT_OVERSIZE)), state, bool(opts.get("gzip", gzip_ok)))
        if name in NO_ANSWER_FAULTS:
            return Reply(0, [], transport_fault=name, options=dict(opts))
        # Faults that damage an otherwise normal answer: reset, slow_body, truncated_gzip.
        if name == "truncated_gzip":
            reply = self._answer(record, token, False)
            packed = gzip.compress(reply.body, mtime=0)
            cut = int(opts.get("keep", len(packed) // 2))
            reply.body = packed[:cut]
            reply.headers.append(("Content-Encoding", "gzip"))
            return reply
        reply = self._answer(record, token, gzip_ok)
        reply.transport_fault = name
        reply.options = dict(opts)
        return reply

    def _oversize(self, size: int, state: _KeyState | None, use_gzip: bool) -> Reply:
        sample = self._fixtures["web"]["web"]["results"][0]
        headers = [("Content-Type", "application/json"), *self._rate_headers(state)]

        def plain() -> Iterator[bytes]:
            return _oversize_chunks(size, sample)

        def packed() -> Iterator[bytes]:
            return _gzip_stream(_oversize_chunks(size, sample))

        if use_gzip:
            headers.append(("Content-Encoding", "gzip"))
            return Reply(200, headers, chunks=packed)
        return Reply(200, headers, chunks=plain)

    # ------------------------------------------------------------------ bodies

    def _answers_empty(self, q: str) -> bool:
        return _fold(q) in {_fold(item) for item in self.no_results_for}

    def _query_obj(self, values: Mapping[str, str], *, spellcheck_default: bool = True) -> dict[str, Any]:
        q = values["q"]
        spell = _truthy(values.get("spellcheck"), spellcheck_default)
        query: dict[str, Any] = {"original": q}
        altered = next((v for k, v in self.spellcheck_rewrites.items() if _fold(k) == _fold(q)), None)
        if spell and altered is not None:
            query["altered"] = altered
        query["spellcheck_off"] = not spell
        query["show_strict_warning"] = False
        return query

    def _web_body(self, values: Mapping[str, str], goggles: list[str]) -> dict[str, Any]:
        fx = copy.deepcopy(self._fixtures["web"])
        q = values["q"]
        empty = self._answers_empty(q)
        count = int(values.get("count", _COUNT_DEFAULT["web"]))
        offset = int(values.get("offset", 0))
        filters = _parse_filter(values.get("result_filter"))
        summary = _truthy(values.get("summary"), False)
        decorations = _truthy(values.get("text_decorations"), True)
        extra = _truthy(values.get("extra_snippets"), False)

        all_web: list[dict[str, Any]] = [] if empty else fx["web"]["results"]
        start = offset * count
        page = all_web[start : start + count]

        query = fx["query"]
        query.update(self._query_obj(values))
        query["country"] = values.get("country", "us").lower()
        query["language"] = {"main": values.get("search_lang", "en")}
        query["more_results_available"] = start + count < len(all_web)

        defaults = {"web", "news", "videos", "discussions", "faq", "infobox"}
        include = (defaults | ({"summarizer"} if summary else set())) if filters is None else set(filters)
        if filters is not None and "summarizer" in filters:
            include.discard("web")  # mimic Brave issue #272: result_filter=summarizer drops the web results
        if "locations" in include:
            query["local_decision"] = "keep"
            query["is_geolocal"] = True

        out: dict[str, Any] = {"type": "search", "query": query}
        for name in ("web", "news", "videos", "discussions", "faq", "infobox", "locations"):
            if name not in include:
                continue
            section = fx[name]
            section["results"] = page if name == "web" else ([] if empty else section["results"])
            if name == "web" and goggles:
                section["mutated_by_goggles"] = True
            out[name] = section
        for name in ("web", "news", "videos", "discussions"):
            for result in out.get(name, {}).get("results", []):
                if not decorations and "description" in result:
                    result["description"] = _strip_strong(result["description"])
                if not extra:
                    result.pop("extra_snippets", None)
        if not decorations:
            for item in out.get("faq", {}).get("results", []):
                item["answer"] = _strip_strong(item["answer"])
        eligible = _fold(q) not in {_fold(item) for item in self.unsummarizable}
        if summary and "summarizer" in include and not empty and eligible:
            out["summarizer"] = {"type": "summarizer", "key": self._issue_key(values)}
        if filters is None:
            out["mixed"] = _mixed(out)
        return out

    def _issue_key(self, values: Mapping[str, str]) -> str:
        q = values["q"]
        country = values.get("country", "us").lower()
        language = values.get("search_lang", "en")
        safesearch = values.get("safesearch", "moderate")
        digest = hashlib.sha256(f"{q}\x00{country}\x00{language}\x00{safesearch}".encode()).hexdigest()
        key = json.dumps(
            {"query": q, "country": country, "language": language, "safesearch": safesearch, "results_hash": digest}
        )
        self._summaries.setdefault(key, _Summary(query=q))
        return key

    def _summarizer_body(self, values: Mapping[str, str]) -> dict[str, Any]:
        summary = self._summaries[values["key"]]
        summary.polls += 1
        never = _fold(summary.query) in {_fold(item) for item in self.summary_never_ready}
        if never or summary.polls <= self.summarizer_pending_polls:
            return {"type": "summarizer", "status": "pending"}
        if _fold(summary.query) in {_fold(item) for item in self.summary_failing}:
            return {"type": "summarizer", "status": "failed"}
        body = copy.deepcopy(self._fixtures["summarizer"])
        if not _truthy(values.get("inline_references"), False):
            body["summary"] = [m for m in body["summary"] if m["type"] != "inline_reference"]
        if not _truthy(values.get("entity_info"), False):
            body.pop("entities_infos", None)
        return body

    def _list_body(self, endpoint: str, values: Mapping[str, str]) -> dict[str, Any]:
        fx = copy.deepcopy(self._fixtures[endpoint])
        empty = self._answers_empty(values["q"])
        count = int(values.get("count", _COUNT_DEFAULT[endpoint]))
        start = int(values.get("offset", 0)) * count
        results: list[dict[str, Any]] = [] if empty else fx["results"][start : start + count]
        if not _truthy(values.get("extra_snippets"), False):
            for result in results:
                result.pop("extra_snippets", None)
        fx["query"] = self._query_obj(values)
        fx["results"] = results
        return fx

    def _images_body(self, values: Mapping[str, str]) -> dict[str, Any]:
        fx = copy.deepcopy(self._fixtures["images"])
        templates: list[dict[str, Any]] = fx["results"]
        count = int(values.get("count", _COUNT_DEFAULT["images"]))
        results = [] if self._answers_empty(values["q"]) else [_image(i, templates) for i in range(count)]
        fx["query"] = self._query_obj(values)
        fx["results"] = results
        return fx


def _image(index: int, templates: list[dict[str, Any]]) -> dict[str, Any]:
    image = copy.deepcopy(templates[index % len(templates)])
    variant = index // len(templates)
    if variant:
        image["title"] = f"{image['title']} ({variant + 1})"
        image["url"] = f"{image['url']}/{variant + 1}"
        image["properties"]["url"] = image["properties"]["url"].replace(".png", f"-{variant + 1}.png")
        image["thumbnail"]["src"] = f"{image['thumbnail']['src']}?v={variant + 1}"
    return image


def _mixed(out: Mapping[str, Any]) -> dict[str, Any]:
    def present(name: str) -> bool:
        return bool(out.get(name, {}).get("results"))

    web_count = len(out["web"]["results"]) if "web" in out else 0
    main: list[dict[str, Any]] = []
    if present("locations"):
        main.append({"type": "locations", "all": True})
    interleave = {1: "videos", 2: "discussions", 3: "faq", 4: "news"}
    for i in range(max(web_count, 5)):
        if i < web_count:
            main.append({"type": "web", "index": i, "all": False})
        section = interleave.get(i)
        if section and present(section):
            main.append({"type": section, "all": True})
    side = [{"type": "infobox", "index": 0, "all": False}] if present("infobox") else []
    return {"type": "mixed", "main": main, "top": [], "side": side}


def _parse_filter(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _validate(
    endpoint: str, params: Iterable[tuple[str, str]]
) -> tuple[dict[str, str], list[str], list[dict[str, Any]]]:
    """Brave-like (pydantic-style) validation of one endpoint's query parameters."""
    allowed = _ALLOWED[endpoint]
    values: dict[str, str] = {}
    goggles: list[str] = []
    extras: list[dict[str, Any]] = []
    for name, value in params:
        if name not in allowed:
            if not any(e["loc"][1] == name for e in extras):
                extras.append(_err("extra_forbidden", name, "Extra inputs are not permitted", value))
        elif name == "goggles":
            goggles.append(value)
        else:
            values[name] = value  # the last one wins, as in FastAPI
    errors: list[dict[str, Any]] = []
    required = "key" if endpoint == "summarizer" else "q"
    if required not in values:
        errors.append(_err("missing", required, "Field required", None))
    for name in allowed:
        if name == "goggles":
            errors.extend(_check_goggles(goggles))
            continue
        if name not in values:
            continue
        value = values[name]
        error = _check(endpoint, name, value)
        if error is not None:
            errors.append(error)
    return values, goggles, errors + extras


def _check(endpoint: str, name: str, value: str) -> dict[str, Any] | None:
    if name == "q":
        return _check_q(value)
    if name == "key":
        if not value:
            return _err("string_too_short", name, "String should have at least 1 character", value, {"min_length": 1})
        return None
    if name in _BOOL_PARAMS:
        if value.strip().lower() in _TRUE | _FALSE:
            return None
        return _err("bool_parsing", name, "Input should be a valid boolean, unable to interpret input", value)
    if name == "count":
        return _check_int(name, value, 1, _COUNT_MAX[endpoint])
    if name == "offset":
        return _check_int(name, value, 0, _OFFSET_MAX)
    if name == "country":
        return _check_enum(name, value.upper(), COUNTRIES, value)
    if name == "search_lang":
        return _check_enum(name, value, SEARCH_LANGS, value)
    if name == "ui_lang":
        return _check_enum(name, value, UI_LANGS, value)
    if name == "safesearch":
        return _check_enum(name, value, _SAFESEARCH[endpoint], value)
    if name == "units":
        return _check_enum(name, value, _UNITS, value)
    if name == "freshness":
        if _FRESHNESS_RE.match(value):
            return None
        msg = f"String should match pattern '{_FRESHNESS_PATTERN}'"
        return _err("string_pattern_mismatch", name, msg, value, {"pattern": _FRESHNESS_PATTERN})
    if name == "result_filter":
        return _check_filter(value)
    return None  # goggles_id (deprecated, free text)


def _check_q(value: str) -> dict[str, Any] | None:
    if not value.strip():
        return _err("string_too_short", "q", "String should have at least 1 character", value, {"min_length": 1})
    if len(value) > _MAX_Q_CHARS:
        msg = f"String should have at most {_MAX_Q_CHARS} characters"
        return _err("string_too_long", "q", msg, value, {"max_length": _MAX_Q_CHARS})
    if len(value.split()) > _MAX_Q_WORDS:
        reason = f"Query should have at most {_MAX_Q_WORDS} words"
        return _err("value_error", "q", f"Value error, {reason}", value, {"error": reason})
    return None


def _check_int(name: str, value: str, low: int, high: int) -> dict[str, Any] | None:
    if not _INT_RE.match(value):
        return _err("int_parsing", name, "Input should be a valid integer, unable to parse string as an integer", value)
    number = int(value)
    if number < low:
        return _err("greater_than_equal", name, f"Input should be greater than or equal to {low}", value, {"ge": low})
    if number > high:
        return _err("less_than_equal", name, f"Input should be less than or equal to {high}", value, {"le": high})
    return None


def _check_enum(name: str, candidate: str, allowed: tuple[str, ...], value: str) -> dict[str, Any] | None:
    if candidate in allowed:
        return None
    expected = _enum_text(allowed)
    return _err("enum", name, f"Input should be {expected}", value, {"expected": expected})


def _check_filter(value: str) -> dict[str, Any] | None:
    entries = _parse_filter(value) or []
    bad = [e for e in entries if e not in RESULT_FILTERS]
    if entries and not bad:
        return None
    reason = f"Invalid result_filter value(s): {', '.join(bad) or '(empty)'}; allowed: {', '.join(RESULT_FILTERS)}"
    return _err("value_error", "result_filter", f"Value error, {reason}", value, {"error": reason})


def _check_goggles(goggles: list[str]) -> list[dict[str, Any]]:
    errors = []
    for value in goggles:
        inline = "\n" in value or "$" in value
        if (value.startswith("https://") and len(value) > len("https://")) or inline:
            continue
        reason = "A goggle must be an https URL or an inline goggle definition"
        errors.append(_err("value_error", "goggles", f"Value error, {reason}", value, {"error": reason}))
    return errors


# ---------------------------------------------------------------------- MockTransport rendering


class _ReplyStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """Body stream for MockTransport answers: chunked, optionally slow, optionally failing mid-body."""

    def __init__(
        self, chunks: Callable[[], Iterable[bytes]], *, delay: float = 0.0, error: Exception | None = None
    ) -> None:
        self._chunks = chunks
        self._delay = delay
        self._error = error

    def __iter__(self) -> Iterator[bytes]:
        for i, chunk in enumerate(self._chunks()):
            if i and self._delay:
                time.sleep(self._delay)
            yield chunk
        if self._error is not None:
            raise self._error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i, chunk in enumerate(self._chunks()):
            if i and self._delay:
                await anyio.sleep(self._delay)
            yield chunk
        if self._error is not None:
            raise self._error


def split_chunks(body: bytes, size: int) -> list[bytes]:
    """``body`` cut into pieces of ``size`` bytes (at least one piece)."""
    size = max(1, size)
    return [body[i : i + size] for i in range(0, len(body), size)] or [b""]


def reset_cut(reply: Reply) -> int:
    """How many body bytes a "reset" fault sends before the connection dies."""
    return int(reply.options.get("keep", len(reply.body) // 2))


def _to_httpx(reply: Reply, request: httpx2.Request) -> httpx2.Response:
    fault = reply.transport_fault
    if fault == "refused":
        raise httpx2.ConnectError("[Errno 111] Connection refused (fake brave)", request=request)
    if fault in ("timeout", "hang"):
        raise httpx2.ReadTimeout("timed out (fake brave)", request=request)
    headers = list(reply.headers)
    if reply.streamed:
        stream = _ReplyStream(reply.iter_body)
    else:
        headers.append(("Content-Length", str(len(reply.body))))
        if fault == "reset":
            keep = reset_cut(reply)
            message = (
                "peer closed connection without sending complete message body "
                f"(received {keep} bytes, expected {len(reply.body)})"
            )
            stream = _ReplyStream(
                lambda: [reply.body[:keep]], error=httpx2.RemoteProtocolError(message, request=request)
            )
        elif fault == "slow_body":
            size = int(reply.options.get("chunk_size", 512))
            pieces = split_chunks(reply.body, size)
            stream = _ReplyStream(lambda: pieces, delay=float(reply.options.get("delay", 0.05)))
        else:
            body = reply.body
            stream = _ReplyStream(lambda: [body] if body else [])
    return httpx2.Response(reply.status, headers=headers, stream=stream, request=request)
