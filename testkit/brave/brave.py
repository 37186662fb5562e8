"""A faithful, deterministic stand-in for the Brave Search API, so every layer can be tested offline.

``FakeBrave`` wires the plumbing (token check, plan and rate headers, fault injection, request log) to the
router and its routes, one module per endpoint family under ``routes/``. Its behaviour is set by explicit
controls, never by words in the query: the search controls below, ``fake.plan_lacks``, and each newer
family's own controls (``fake.llm_context``, ``fake.local``, ``fake.answers``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx2

from brave_search_mcp.clock import Sleep

from .auth import VALID_KEY, take_token
from .errors import ErrorIds
from .exchange import Exchange
from .faults import FAULTS, NO_ANSWER_FAULTS, FaultQueue, fault_reply
from .fixtures import FIXTURES_DIR
from .mock import mock_transport
from .plan import KeyRing
from .reply import RecordedRequest, Reply, accepts_gzip
from .request_log import RequestLog
from .router import Router
from .routes.answers import CHAT_PATH, AnswersRoute
from .routes.llm_context import LLM_PATH, LlmContextRoute
from .routes.local import DESCRIPTIONS_PATH, PLACE_PATH, POIS_PATH, LocalRoute
from .routes.search import IMAGES_PATH, NEWS_PATH, VIDEOS_PATH, WEB_PATH, SearchRoute
from .routes.summarizer import SUMMARIZER_PATH, Summaries, SummarizerRoute

__all__ = [
    "CHAT_PATH",
    "DESCRIPTIONS_PATH",
    "FAULTS",
    "FIXTURES_DIR",
    "IMAGES_PATH",
    "LLM_PATH",
    "NEWS_PATH",
    "PLACE_PATH",
    "POIS_PATH",
    "SUMMARIZER_PATH",
    "VALID_KEY",
    "VIDEOS_PATH",
    "WEB_PATH",
    "FakeBrave",
    "RecordedRequest",
    "Reply",
]

logger = logging.getLogger(__name__)


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
        if rate_per_second < 1:
            raise ValueError("rate_per_second must be >= 1")
        if monthly_limit < 0:
            raise ValueError("monthly_limit must be >= 0 (0 = unlimited)")
        self._keys = KeyRing(tuple(api_keys))
        # The plan (plan.Terms): what the fake enforces and advertises.
        self.rate_per_second = rate_per_second
        self.monthly_limit = monthly_limit
        self.advertised_rate_per_second: int | None = None  # a plan header that lies: advertise this rate instead
        self.plan_lacks: set[str] = set()  # "local", "answers", "llm_context" → 400 OPTION_NOT_IN_PLAN
        # Search and summarizer controls (queries compared case-insensitively, whitespace-collapsed):
        self.no_results_for: set[str] = set()  # answer these queries with every section empty
        self.spellcheck_rewrites: dict[str, str] = {}  # query -> what Brave says it searched instead
        self.unsummarizable: set[str] = set()  # queries Brave gives no summarizer key for
        self.summary_failing: set[str] = set()  # queries whose summary ends with status "failed"
        self.summary_never_ready: set[str] = set()  # queries whose summary stays "pending" forever
        self.summarizer_pending_polls = summarizer_pending_polls
        # The newer endpoint families, each with its own controls:
        self.llm_context = LlmContextRoute()
        self.local = LocalRoute()
        self.answers = AnswersRoute()
        self._summaries = Summaries()
        self.search = SearchRoute(self, self._summaries)  # web, news, images, videos
        routes = (self.search, SummarizerRoute(self, self._summaries), self.llm_context, self.local, self.answers)
        self._router = Router(routes, self._keys, clock)
        self._lock = threading.RLock()
        self._log = RequestLog()
        self.requests: list[RecordedRequest] = self._log.requests
        self._faults = FaultQueue()
        self._ids = ErrorIds()

    # ------------------------------------------------------------------ public API

    @property
    def rate_limited_count(self) -> int:
        """Requests answered 429 RATE_LIMITED (by the rate window or an injected fault) since the last reset."""
        return self._keys.rate_limited

    def reset(self) -> None:
        """Forget requests, counters, pending faults and summarizer keys (keys, limits and clock stay)."""
        with self._lock:
            self.requests.clear()
            self._keys.reset()
            self._faults.clear()
            self._summaries.clear()
            self._ids = ErrorIds()

    def hits(self, path_suffix: str | None = None, status: int | None = None) -> int:
        """How many requests reached the fake (optionally only those whose path ends with ``path_suffix`` and
        those answered ``status``: 200 is what Brave bills, 429 what its rate window refused)."""
        with self._lock:
            return self._log.hits(path_suffix, status)

    def stats(self) -> dict[str, Any]:
        """Counters for out-of-process users (the server's /__fake/stats)."""
        with self._lock:
            return {
                "requests": len(self.requests),
                "rate_limited": self.rate_limited_count,
                "by_path": self._log.by_path(),
            }

    def pending_faults(self) -> int:
        """How many injected fault answers are still waiting to be used."""
        return self._faults.pending()

    def inject(self, fault: str, *, path: str | None = None, times: int = 1, **options: Any) -> None:
        """Queue ``fault`` for the next ``times`` requests whose path ends with ``path`` (any path when None)."""
        self._faults.inject(fault, path, times, options)

    def handle(
        self, method: str, path: str, params: list[tuple[str, str]], headers: Mapping[str, str], body: bytes = b""
    ) -> Reply:
        """Answer one request the way Brave would (or with the next matching injected fault)."""
        lowered = {k.lower(): v for k, v in headers.items()}
        token = take_token(lowered, bearer=self._router.takes_bearer(path))
        record = RecordedRequest(method.upper(), path, list(params), lowered, token is not None, body=body)
        with self._lock:
            self.requests.append(record)
            reply = self._dispatch(record, token)
            record.status = 0 if reply.transport_fault in NO_ANSWER_FAULTS else reply.status
            record.fault = reply.fault
        if reply.fault:
            logger.debug("fake brave: %s %s -> fault %s", method, path, reply.fault)
        return reply

    def mock_transport(self, *, latency: float = 0.0, sleep: Sleep | None = None) -> httpx2.MockTransport:
        """An httpx2 transport backed by this fake, for unit tests without sockets (``latency``: each answer comes
        back that long after its request, on ``sleep``'s clock; see ``mock.mock_transport``)."""
        return mock_transport(self.handle, latency=latency, sleep=sleep)

    # ------------------------------------------------------------------ dispatch

    def _exchange(self, record: RecordedRequest, gzip_ok: bool) -> Exchange:
        return Exchange(record, self, self._ids, gzip_ok)

    def _dispatch(self, record: RecordedRequest, token: str | None) -> Reply:
        gzip_ok = accepts_gzip(record.headers.get("accept-encoding", ""))
        fault = self._faults.take(record.path)
        if fault is None:
            return self._router.answer(self._exchange(record, gzip_ok), token)
        ex = self._exchange(record, gzip_ok)
        ex.key = self._keys.get(token)
        return fault_reply(fault, ex, self._keys, lambda gz: self._router.answer(self._exchange(record, gz), token))
