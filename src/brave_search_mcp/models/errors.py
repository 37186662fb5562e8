"""Typed failures and warning codes, so every layer reports problems the agent can act on.

Hierarchy (each class fixes its envelope ``code`` and default ``retryable``)::

    BraveSearchError
    ├── InvalidArgument          INVALID_ARGUMENT      input rejected (details.field)
    ├── MissingApiKey            MISSING_API_KEY       no key configured
    ├── UpstreamStatusError      (a non-2xx answer from Brave)
    │   ├── AuthFailed           AUTH_FAILED           token invalid / no subscription
    │   ├── NotInPlan            NOT_IN_PLAN           option or resource outside the plan
    │   ├── RateLimited          RATE_LIMITED          per-second limit (Brave's 429, or no room before the deadline)
    │   │   └── RefusedBeforeSending                   refused here, nothing sent; not retried within the call
    │   ├── QuotaExceeded        QUOTA_EXCEEDED        monthly quota used up
    │   ├── UpstreamValidation   UPSTREAM_VALIDATION   Brave 422 VALIDATION
    │   └── UpstreamError        UPSTREAM_ERROR        any other non-2xx
    ├── UpstreamTimeout          TIMEOUT               attempt or call deadline passed
    ├── NetworkError             NETWORK_ERROR         connect/reset/protocol failures
    ├── ParseError               PARSE_ERROR           body not JSON / not Brave's shape
    ├── ResponseTooLarge         RESPONSE_TOO_LARGE    body over the byte cap
    ├── NoResults                NO_RESULTS            every section empty
    ├── ProviderMisconfigured    PROVIDER_MISCONFIGURED a provider that cannot work as configured
    ├── CircuitOpen              CIRCUIT_OPEN          every provider for the call is paused by its breaker
    ├── SummaryUnavailable       SUMMARY_UNAVAILABLE   summarizer failed / deadline / no key
    ├── FetchBlocked             FETCH_BLOCKED         read_url: address or URL refused by the safety rules
    ├── FetchForbidden           FETCH_FORBIDDEN       read_url: the site answered 401 / 403
    ├── NotFound                 NOT_FOUND             read_url: the site answered 404 / 410
    ├── UnsupportedContent       UNSUPPORTED_CONTENT   read_url: a content type the reader cannot read
    ├── Cancelled                CANCELLED             the client was closed under the call
    └── InternalError            INTERNAL_ERROR        a bug (logged with the trace id)
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar


class ErrorCode(StrEnum):
    """Envelope error codes: the contract agents branch on."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    MISSING_API_KEY = "MISSING_API_KEY"
    AUTH_FAILED = "AUTH_FAILED"
    NOT_IN_PLAN = "NOT_IN_PLAN"
    RATE_LIMITED = "RATE_LIMITED"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    UPSTREAM_VALIDATION = "UPSTREAM_VALIDATION"
    UPSTREAM_ERROR = "UPSTREAM_ERROR"
    TIMEOUT = "TIMEOUT"
    NETWORK_ERROR = "NETWORK_ERROR"
    PARSE_ERROR = "PARSE_ERROR"
    RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"
    NO_RESULTS = "NO_RESULTS"
    PROVIDER_MISCONFIGURED = "PROVIDER_MISCONFIGURED"
    CIRCUIT_OPEN = "CIRCUIT_OPEN"
    SUMMARY_UNAVAILABLE = "SUMMARY_UNAVAILABLE"
    FETCH_BLOCKED = "FETCH_BLOCKED"
    FETCH_FORBIDDEN = "FETCH_FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    UNSUPPORTED_CONTENT = "UNSUPPORTED_CONTENT"
    CANCELLED = "CANCELLED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


class WarningCode(StrEnum):
    """Soft problems: the call went on, but the agent should know what changed."""

    QUERY_TRUNCATED = "QUERY_TRUNCATED"
    COUNT_CLAMPED = "COUNT_CLAMPED"
    OFFSET_CAPPED = "OFFSET_CAPPED"
    OFFSET_IGNORED = "OFFSET_IGNORED"
    SAFE_SEARCH_ADJUSTED = "SAFE_SEARCH_ADJUSTED"
    INVALID_COUNTRY = "INVALID_COUNTRY"
    INVALID_SEARCH_LANGUAGE = "INVALID_SEARCH_LANGUAGE"
    INVALID_UI_LANGUAGE = "INVALID_UI_LANGUAGE"
    INVALID_FRESHNESS = "INVALID_FRESHNESS"
    INVALID_RESULT_FILTER = "INVALID_RESULT_FILTER"
    INVALID_GOGGLES = "INVALID_GOGGLES"
    PARAM_IGNORED = "PARAM_IGNORED"
    VALUE_NORMALIZED = "VALUE_NORMALIZED"
    OUTPUT_LIMIT_CLAMPED = "OUTPUT_LIMIT_CLAMPED"
    DEBUG_OPTION_IGNORED = "DEBUG_OPTION_IGNORED"
    QUERY_ALTERED = "QUERY_ALTERED"
    QUERY_ESCAPED = "QUERY_ESCAPED"
    DEDUPLICATED = "DEDUPLICATED"
    OUTPUT_TRUNCATED = "OUTPUT_TRUNCATED"
    RAW_PAYLOAD_TRUNCATED = "RAW_PAYLOAD_TRUNCATED"
    SUMMARY_NOT_AVAILABLE = "SUMMARY_NOT_AVAILABLE"
    FALLBACK = "FALLBACK"
    RATE_LIMIT_WAIT = "RATE_LIMIT_WAIT"
    PAGE_RATE_LIMITED = "PAGE_RATE_LIMITED"
    ENGINES_UNRESPONSIVE = "ENGINES_UNRESPONSIVE"
    CONTEXT_TRUNCATED = "CONTEXT_TRUNCATED"
    LOCAL_FALLBACK = "LOCAL_FALLBACK"
    STREAM_INTERRUPTED = "STREAM_INTERRUPTED"
    ANSWER_TRUNCATED = "ANSWER_TRUNCATED"
    DEADLINE_REACHED = "DEADLINE_REACHED"
    PAGE_INCOMPLETE = "PAGE_INCOMPLETE"
    JAVASCRIPT_NOT_RENDERED = "JAVASCRIPT_NOT_RENDERED"


class BraveSearchError(Exception):
    """Base of every failure this package reports; carries what the envelope needs."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL_ERROR
    default_retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        retryable: bool | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = self.default_retryable if retryable is None else retryable
        self.details: dict[str, Any] = dict(details or {})
        # Warnings of the request that failed (models.WarningItem); set by the service layer.
        self.warnings: list[Any] = []
        # The search provider that failed (set by the provider chain); None when none was asked or only Brave is.
        self.provider: str | None = None

    def __init_subclass__(cls, *, code: ErrorCode | None = None, retryable: bool | None = None, **kw: Any) -> None:
        """Each kind states its envelope code and default ``retryable`` in its class line."""
        super().__init_subclass__(**kw)
        if code is not None:
            cls.code = code
        if retryable is not None:
            cls.default_retryable = retryable

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, retryable={self.retryable})"

    def for_call(self, warnings: list[Any], **details: Any) -> BraveSearchError:
        """A copy carrying one call's warnings and details: callers sharing a request share the original."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.args = self.args
        clone.details = {**self.details, **{k: v for k, v in details.items() if k not in self.details}}
        clone.warnings = [*self.warnings, *(w for w in warnings if w not in self.warnings)]
        clone.__cause__ = self.__cause__
        return clone


class InvalidArgument(BraveSearchError, code=ErrorCode.INVALID_ARGUMENT):
    """The caller's input was rejected before anything was sent."""

    def __init__(self, message: str, *, field: str | None = None, **details: Any) -> None:
        if field is not None:
            details = {"field": field, **details}
        super().__init__(message, details=details)
        self.field = field


class MissingApiKey(BraveSearchError, code=ErrorCode.MISSING_API_KEY):
    """No API key is configured, so nothing can be sent."""


class UpstreamStatusError(BraveSearchError, code=ErrorCode.UPSTREAM_ERROR):
    """Brave answered with a non-2xx status; ``status`` and Brave's own code are kept."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        brave_code: str | None = None,
        retryable: bool | None = None,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        merged: dict[str, Any] = {"status": status}
        if brave_code:
            merged["brave_code"] = brave_code
        if retry_after is not None:
            merged["retry_after_seconds"] = retry_after
        merged.update(details or {})
        super().__init__(message, retryable=retryable, details=merged)
        self.status = status
        self.brave_code = brave_code
        self.retry_after = retry_after


class AuthFailed(UpstreamStatusError, code=ErrorCode.AUTH_FAILED):
    """The key is invalid or has no subscription."""


class NotInPlan(UpstreamStatusError, code=ErrorCode.NOT_IN_PLAN):
    """The plan does not include the endpoint or option."""


class RateLimited(UpstreamStatusError, code=ErrorCode.RATE_LIMITED, retryable=True):
    """The per-second limit: Brave answered 429 (retried while the deadline allowed), or the queue had no room."""


class RefusedBeforeSending(RateLimited):
    """Refused before anything was sent: the queue, or a pause Brave demanded, outlasts the call's deadline.

    The caller may retry after ``retry_after``; the client never does within the call, which would only sit
    that wait out and send at the deadline (issue 22).
    """


class QuotaExceeded(UpstreamStatusError, code=ErrorCode.QUOTA_EXCEEDED):
    """The monthly quota is exhausted; never retried."""


class UpstreamValidation(UpstreamStatusError, code=ErrorCode.UPSTREAM_VALIDATION):
    """Brave's 422 VALIDATION: a parameter Brave refused."""


class UpstreamError(UpstreamStatusError, code=ErrorCode.UPSTREAM_ERROR):
    """Any other non-2xx answer."""


class UpstreamTimeout(BraveSearchError, code=ErrorCode.TIMEOUT, retryable=True):
    """An attempt or the whole call ran out of time."""


class NetworkError(BraveSearchError, code=ErrorCode.NETWORK_ERROR, retryable=True):
    """The connection failed (refused, reset, protocol error)."""


class ParseError(BraveSearchError, code=ErrorCode.PARSE_ERROR):
    """The body was not JSON, or not shaped like Brave's answer."""


class ResponseTooLarge(BraveSearchError, code=ErrorCode.RESPONSE_TOO_LARGE):
    """The body exceeded the configured byte cap and was not read whole."""


class NoResults(BraveSearchError, code=ErrorCode.NO_RESULTS):
    """Every section of the answer was empty."""


class ProviderMisconfigured(BraveSearchError, code=ErrorCode.PROVIDER_MISCONFIGURED):
    """A provider refuses to work as configured (e.g. SearXNG without JSON output); the message names the fix."""


class CircuitOpen(BraveSearchError, code=ErrorCode.CIRCUIT_OPEN, retryable=True):
    """Nothing was sent: every provider that serves the call is paused after repeated failures (its breaker is
    open); ``details.retry_after_ms`` says when the next trial call goes through. No HTTP status: none was
    answered."""


class SummaryUnavailable(BraveSearchError, code=ErrorCode.SUMMARY_UNAVAILABLE, retryable=True):
    """The summarizer could not produce a summary (failed, deadline, no key)."""


class FetchBlocked(BraveSearchError, code=ErrorCode.FETCH_BLOCKED):
    """read_url refused the URL or an address it resolved to (details.reason says which rule)."""


class FetchForbidden(BraveSearchError, code=ErrorCode.FETCH_FORBIDDEN):
    """The site read answered 401 or 403: it wants a login or refuses readers."""


class NotFound(BraveSearchError, code=ErrorCode.NOT_FOUND):
    """The site read answered 404 or 410: the page does not exist (any more)."""


class UnsupportedContent(BraveSearchError, code=ErrorCode.UNSUPPORTED_CONTENT):
    """The page is of a content type the reader cannot turn into text (details.content_type names it)."""


class Cancelled(BraveSearchError, code=ErrorCode.CANCELLED, retryable=True):
    """The client was closed while the call was in flight."""


class InternalError(BraveSearchError, code=ErrorCode.INTERNAL_ERROR, retryable=True):
    """An unexpected failure; the message never includes internals."""


def default_retryable() -> dict[ErrorCode, bool]:
    """Each code's ``retryable`` as the class that states the code in its class line says, so the help tool's
    catalogue and the envelopes agree (the base's INTERNAL_ERROR is only a fallback; ``InternalError`` states it)."""
    found: dict[ErrorCode, bool] = {}
    pending: list[type[BraveSearchError]] = list(BraveSearchError.__subclasses__())
    while pending:
        cls = pending.pop(0)  # breadth first: a parent's class line wins over a subclass that restates the code
        if "code" in vars(cls):
            found.setdefault(cls.code, cls.default_retryable)
        pending.extend(cls.__subclasses__())
    found.setdefault(BraveSearchError.code, BraveSearchError.default_retryable)
    return found


# What an agent should do about each error code; shown in the text rendering and the help tool.
ERROR_ADVICE: dict[ErrorCode, str] = {
    ErrorCode.INVALID_ARGUMENT: "Fix the named argument and call again; brave_web_search_help lists valid values.",
    ErrorCode.MISSING_API_KEY: (
        "Ask the user to set BRAVE_SEARCH_API_KEY (or BRAVE_API_KEY, or BRAVE_API_KEY_FILE) for the server, or "
        "to store the key in ~/.config/brave-search-mcp/api-key; retrying will not help until then."
    ),
    ErrorCode.AUTH_FAILED: "The API key is invalid or has no subscription; ask the user to check it. Do not retry.",
    ErrorCode.NOT_IN_PLAN: "The user's Brave plan does not include this; use another tool or option. Do not retry.",
    ErrorCode.RATE_LIMITED: (
        "The per-second limit left no room for this call in time (details.attempts says how many requests were "
        "sent; 0: refused here before sending); wait retry_after_ms, then retry, or send fewer calls at once."
    ),
    ErrorCode.QUOTA_EXCEEDED: "The monthly quota is used up; retrying will not help until it resets.",
    ErrorCode.UPSTREAM_VALIDATION: "Brave rejected a parameter (see details); change it and call again.",
    ErrorCode.UPSTREAM_ERROR: "Brave answered with an error; retry later if retryable is true.",
    ErrorCode.TIMEOUT: "Brave did not answer in time; retry, perhaps with fewer results.",
    ErrorCode.NETWORK_ERROR: "Brave could not be reached; retry later.",
    ErrorCode.PARSE_ERROR: "Brave's answer was not readable JSON; retrying rarely helps.",
    ErrorCode.RESPONSE_TOO_LARGE: "The answer exceeded the size cap; ask for fewer results.",
    ErrorCode.NO_RESULTS: "Nothing matched; rephrase or broaden the query, or drop filters such as freshness or sites.",
    ErrorCode.PROVIDER_MISCONFIGURED: (
        "A search provider cannot work as configured; ask the user to change the setting the message names."
    ),
    ErrorCode.CIRCUIT_OPEN: (
        "Nothing was sent: the provider is paused after repeated failures (the message says what they were); wait "
        "retry_after_ms, then retry, when one trial call is let through."
    ),
    ErrorCode.SUMMARY_UNAVAILABLE: "No summary could be made; use brave_web_search results instead.",
    ErrorCode.FETCH_BLOCKED: (
        "The URL or the address it leads to is refused by the reader's safety rules (private, loopback, "
        "metadata, not http(s), too many redirects); do not retry. Only the user can opt hosts in "
        "(BRAVE_SEARCH_READ_ALLOWED_HOSTS)."
    ),
    ErrorCode.FETCH_FORBIDDEN: "The site refused to serve the page (401/403); try another source. Do not retry.",
    ErrorCode.NOT_FOUND: "The site says the page does not exist (404/410); check the URL or search for the page again.",
    ErrorCode.UNSUPPORTED_CONTENT: (
        "The page is not HTML, PDF, text, markdown or JSON; the reader cannot read it. Find another source."
    ),
    ErrorCode.CANCELLED: "The call was cancelled before it finished; call again if still needed.",
    ErrorCode.INTERNAL_ERROR: "A bug in the server; report the trace_id. Retrying may help.",
}


# Where a code's advice above speaks of Brave, what it says when another provider failed.
PROVIDER_ADVICE: dict[str, dict[ErrorCode, str]] = {
    "searxng": {
        ErrorCode.AUTH_FAILED: "SearXNG (or its proxy) refused the credentials; ask the user to check them.",
        ErrorCode.RATE_LIMITED: "SearXNG's bot limiter refused the request; wait a minute, then retry.",
        ErrorCode.UPSTREAM_VALIDATION: "SearXNG rejected a parameter or the query (see the message); change it.",
        ErrorCode.UPSTREAM_ERROR: "SearXNG answered with an error; retry later if retryable is true.",
        ErrorCode.TIMEOUT: (
            "SearXNG did not answer in time (the instance, or its engines, hung or are overloaded); retry in a while. "
            "Fewer results would not help: SearXNG answers pages of its own size."
        ),
        ErrorCode.NETWORK_ERROR: "SearXNG could not be reached; retry later.",
        ErrorCode.PARSE_ERROR: "SearXNG's answer was not readable JSON; check its base URL. Retrying rarely helps.",
    },
    "web": {  # read_url: the site named in the message failed, not Brave
        ErrorCode.RATE_LIMITED: "This site's politeness limit (2 requests/s per host) is booked; retry in a moment.",
        ErrorCode.UPSTREAM_ERROR: "The site answered with an error; retry later if retryable is true, or read "
        "another result.",
        ErrorCode.TIMEOUT: "The site did not answer in time; retry once, or read another result.",
        ErrorCode.NETWORK_ERROR: "The site could not be reached (name, connection, certificate); read another result.",
        ErrorCode.PARSE_ERROR: "The page could not be read (broken markup or compression); read another result.",
        ErrorCode.RESPONSE_TOO_LARGE: "The page is larger than the reader's cap; read another result, or ask the "
        "operator to raise BRAVE_SEARCH_READ_MAX_BYTES.",
    },
}


def advice_for(code: ErrorCode, provider: str = "brave", tool: str | None = None) -> str:
    """What an agent should do about ``code`` when ``provider`` failed (Brave's wording unless it has its own);
    a rejected argument points at the help topic that lists the arguments of the ``tool`` called."""
    if code is ErrorCode.INVALID_ARGUMENT and tool:
        return (
            f'Fix the named argument and call again; brave_web_search_help with topic "params" lists the arguments '
            f"of {tool} and their valid values."
        )
    return PROVIDER_ADVICE.get(provider, {}).get(code, ERROR_ADVICE[code])


WARNING_ADVICE: dict[WarningCode, str] = {
    WarningCode.QUERY_TRUNCATED: "The query was cut to Brave's 400 characters / 50 words; shorten it yourself.",
    WarningCode.COUNT_CLAMPED: "max_results was outside the endpoint's range and was clamped.",
    WarningCode.OFFSET_CAPPED: "offset is a page index 0-9; it was capped at 9.",
    WarningCode.OFFSET_IGNORED: "Image search has no offset; it was not sent.",
    WarningCode.SAFE_SEARCH_ADJUSTED: "Image search knows only off/strict; moderate was sent as strict.",
    WarningCode.INVALID_COUNTRY: "The country is not one Brave supports; it was dropped (see help for the list).",
    WarningCode.INVALID_SEARCH_LANGUAGE: "The search language is not one Brave supports; it was dropped.",
    WarningCode.INVALID_UI_LANGUAGE: "The UI language is not one Brave supports; it was dropped.",
    WarningCode.INVALID_FRESHNESS: "freshness must be pd, pw, pm, py or YYYY-MM-DDtoYYYY-MM-DD; it was dropped.",
    WarningCode.INVALID_RESULT_FILTER: "Some result_filter entries are unknown; they were dropped.",
    WarningCode.INVALID_GOGGLES: "Only https URLs or inline goggle definitions are accepted; others were dropped.",
    WarningCode.PARAM_IGNORED: "This search type does not support the parameter; it was not sent.",
    WarningCode.VALUE_NORMALIZED: "A value was rewritten to the spelling Brave expects.",
    WarningCode.OUTPUT_LIMIT_CLAMPED: "max_lines/max_bytes were outside the allowed range and were clamped.",
    WarningCode.DEBUG_OPTION_IGNORED: "Debug controls only apply with debug: true.",
    WarningCode.QUERY_ALTERED: "Brave's spellcheck searched for a corrected query; set spellcheck: false to stop it.",
    WarningCode.QUERY_ESCAPED: "Words SearXNG reads as its own syntax (!bang, :lang, <N) were quoted to search them.",
    WarningCode.DEDUPLICATED: "Results repeating a URL from an earlier section were dropped.",
    WarningCode.OUTPUT_TRUNCATED: "Whole results were dropped to fit max_lines/max_bytes; raise them or page on.",
    WarningCode.RAW_PAYLOAD_TRUNCATED: "The raw payload in debug data was cut to the debug cap.",
    WarningCode.SUMMARY_NOT_AVAILABLE: "Brave returned no summarizer key for this query; summarize is not possible.",
    WarningCode.FALLBACK: "The first provider failed or is paused; another provider answered (results may differ).",
    WarningCode.RATE_LIMIT_WAIT: (
        "The call waited seconds for the provider's pace before it was sent (the message says how long, why, and "
        "the pace now); send fewer searches at once if that is too slow."
    ),
    WarningCode.PAGE_RATE_LIMITED: (
        "A later page of the provider's list was refused by its rate limit; the results shown come from the pages "
        "before it. Page on after the wait the message names."
    ),
    WarningCode.ENGINES_UNRESPONSIVE: "Some SearXNG engines failed; results may be fewer than usual. Retry later.",
    WarningCode.CONTEXT_TRUNCATED: "Snippets were cut to fit max_chars; raise max_chars or narrow the query.",
    WarningCode.LOCAL_FALLBACK: "No place data (plan or no match); plain web results are shown instead.",
    WarningCode.STREAM_INTERRUPTED: "The answer stream broke off; the text is what arrived. Ask again for the rest.",
    WarningCode.ANSWER_TRUNCATED: "The answer was cut to max_chars; raise max_chars to see all of it.",
    WarningCode.DEADLINE_REACHED: "The call's deadline ended the answer early; the text is what arrived.",
    WarningCode.PAGE_INCOMPLETE: "read_url could not keep all of the page (see the message); the rest is what it read.",
    WarningCode.JAVASCRIPT_NOT_RENDERED: "The page is drawn by JavaScript and was not rendered; the message says how.",
}
