"""The use cases behind every face (MCP tools, CLI, library): validate, call Brave, shape envelopes.

``SearchService`` knows nothing about MCP. Its typed methods raise ``BraveSearchError``; ``call``
is the tool boundary that turns any outcome — success, typed failure, deadline or bug — into a
``ToolOutcome`` carrying an envelope, and logs one line per call.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from ._version import __version__
from .client import BraveClient, BraveResponse
from .config import DEBUG_PAYLOAD_CAP_BYTES, Settings
from .errors import (
    BraveSearchError,
    InternalError,
    InvalidArgument,
    NoResults,
    SummaryUnavailable,
    UpstreamTimeout,
    WarningCode,
)
from .formatting import ParsedAnswer, fit_to_limits, parse_answer, render_error_text, render_summary_text, summary_line
from .helpdoc import build_help, render_help_text
from .logs import CALL_LOGGER
from .models import (
    DebugData,
    ErrorBody,
    ErrorEnvelope,
    ErrorMeta,
    HelpArgs,
    RateLimitMeta,
    SearchEnvelope,
    SearchMeta,
    StatusArgs,
    SummarizerArgs,
    SummaryEnvelope,
    SummaryMeta,
    WarningItem,
    WebSearchArgs,
)
from .params import PreparedSearch, prepare_search
from .status import build_status, render_status_text
from .summarizer import PollSchedule, fetch_summary

logger = logging.getLogger(CALL_LOGGER)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

_ARG_MODELS: dict[str, type[BaseModel]] = {
    "brave_web_search": WebSearchArgs,
    "brave_summarizer": SummarizerArgs,
    "brave_web_search_help": HelpArgs,
    "brave_web_search_status": StatusArgs,
}


# Warnings about the result page of a search, meaningless on the summary made from it.
_SEARCH_ONLY_WARNINGS = frozenset(
    {WarningCode.DEDUPLICATED, WarningCode.OUTPUT_TRUNCATED, WarningCode.SUMMARY_NOT_AVAILABLE}
)


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced: the envelope for programs and the text for the model."""

    tool: str
    structured: dict[str, Any]
    text: str
    is_error: bool
    trace_id: str


@dataclass
class _CallFacts:
    """What the per-call log line reports."""

    search_type: str | None = None
    cached: bool | None = None
    attempts: int = 0
    upstream_status: int | None = None
    deadline: float | None = None  # client-clock time by which the call must end
    extra: dict[str, Any] = field(default_factory=dict)


def new_trace_id() -> str:
    """Short random id that ties a tool result to its log line."""
    return uuid.uuid4().hex[:16]


_ModelT = TypeVar("_ModelT", bound=BaseModel)


def validate_arguments(model: type[_ModelT], arguments: Mapping[str, Any]) -> _ModelT:
    """Strict validation of tool arguments; every rejection is one INVALID_ARGUMENT naming the field."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise invalid_argument_from(exc) from None


def invalid_argument_from(exc: ValidationError) -> InvalidArgument:
    """Turn pydantic's report into one INVALID_ARGUMENT naming the first bad field (values never echoed)."""
    problems: list[dict[str, str]] = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        loc = ".".join(str(part) for part in err.get("loc", ()))
        kind = err.get("type", "")
        if kind == "extra_forbidden":
            message = f"unknown field '{loc}'"
        elif kind == "missing":
            message = f"'{loc}' is required"
        else:
            text = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            message = f"{loc}: {text}" if loc else text
        problems.append({"field": loc, "message": message})
    first = problems[0] if problems else {"field": "", "message": "invalid arguments"}
    summary = "; ".join(p["message"] for p in problems)
    return InvalidArgument(
        f"Invalid arguments: {summary}.",
        field=first["field"] or None,
        errors=problems,
    )


class SearchService:
    """One instance per client: every face of the package calls through here."""

    def __init__(
        self,
        settings: Settings,
        client: BraveClient,
        *,
        clock: Clock | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        # One notion of time per process: by default the client's (so tests can fake both at once).
        self._clock = clock or client.clock
        self._sleep = sleep or client.sleep
        self._started_at = self._clock()

    # ----------------------------------------------------------------------------- typed use cases

    async def web_search(self, args: WebSearchArgs, *, trace_id: str | None = None) -> tuple[SearchEnvelope, str]:
        """Search one Brave index; the envelope and its compact text, or a ``BraveSearchError``."""
        return await self._web_search(args, trace_id or new_trace_id(), _CallFacts())

    async def summarize(self, args: SummarizerArgs, *, trace_id: str | None = None) -> tuple[SummaryEnvelope, str]:
        """Summarize by key, or search then summarize by query, in one call."""
        return await self._summarize(args, trace_id or new_trace_id(), _CallFacts())

    async def _web_search(self, args: WebSearchArgs, trace_id: str, facts: _CallFacts) -> tuple[SearchEnvelope, str]:
        started = self._clock()
        prepared = prepare_search(args, self.settings)
        facts.search_type = prepared.search_type
        warnings = list(prepared.warnings)
        try:
            response = await self.client.get(
                prepared.endpoint,
                prepared.params,
                use_cache=prepared.use_cache,
                throttle=prepared.throttle,
                deadline=facts.deadline,
            )
        except BraveSearchError as exc:
            raise exc.for_call(warnings, search_type=prepared.search_type) from exc.__cause__
        facts.cached, facts.attempts, facts.upstream_status = response.cached, response.attempts, response.status
        memo_key = ("parsed", prepared.search_type, prepared.text_decorations)
        parsed: ParsedAnswer | None = response.memo.get(memo_key)
        if parsed is None:  # a cache hit reuses the sections parsed from the same body (read-only)
            parsed = parse_answer(prepared.search_type, response.data, text_decorations=prepared.text_decorations)
            response.memo[memo_key] = parsed
        warnings.extend(parsed.warnings)
        returned = sum(len(section.results) for section in parsed.sections)
        if returned == 0:
            label = "web" if prepared.search_type == "web" else prepared.search_type
            error = NoResults(
                f'No {label} results found for "{prepared.query}".',
                details={"query": prepared.query, "search_type": prepared.search_type},
            )
            raise error.for_call(warnings)
        if prepared.summary and not parsed.summarizer_key:
            warnings.append(_warning(WarningCode.SUMMARY_NOT_AVAILABLE, "Brave returned no summarizer key."))
        has_more = parsed.more_available if parsed.more_available is not None else returned >= prepared.requested
        meta = SearchMeta(
            query=prepared.query,
            search_type=prepared.search_type,
            requested=prepared.requested,
            returned=returned,
            offset=prepared.offset,
            has_more=has_more,
            cached=response.cached,
            attempts=response.attempts,
            duration_ms=round((self._clock() - started) * 1000),
            trace_id=trace_id,
            server_version=__version__,
            altered_query=parsed.altered_query,
            rate_limit=RateLimitMeta.from_info(response.rate_limit or self.client.last_rate_limit),
        )
        # The fitted page depends only on these; a cache hit with the same ones reuses it (read-only).
        fit_key = (
            memo_key,
            prepared.query,
            prepared.offset,
            prepared.requested,
            prepared.max_lines,
            prepared.max_bytes,
            has_more,
            tuple((w.code, w.message) for w in warnings),
        )
        fitted: tuple[SearchEnvelope, str] | None = response.memo.get(fit_key)
        if fitted is None:
            page = SearchEnvelope(
                summary="", sections=parsed.sections, summarizer_key=parsed.summarizer_key, meta=meta, warnings=warnings
            )
            page.summary = summary_line(page)
            fitted = response.memo[fit_key] = fit_to_limits(page, prepared.max_lines, prepared.max_bytes)
        page, text = fitted
        per_call: dict[str, Any] = {"cached": meta.cached, "attempts": meta.attempts, "trace_id": trace_id}
        per_call |= {"duration_ms": meta.duration_ms, "rate_limit": meta.rate_limit}
        envelope = page.model_copy(
            update={"meta": page.meta.model_copy(update=per_call), "warnings": list(page.warnings)}
        )
        if prepared.debug:
            envelope.debug = self._debug_data(prepared, response, envelope.warnings)
            text += "\n[debug] " + json.dumps(envelope.debug.dump(), ensure_ascii=False)
        return envelope, text

    def _debug_data(self, prepared: PreparedSearch, response: BraveResponse, warnings: list[WarningItem]) -> DebugData:
        debug = DebugData(
            cache_bypassed=not prepared.use_cache,
            throttle_bypassed=not prepared.throttle,
            request_url=response.request_url if prepared.include_request_url else None,
        )
        if prepared.include_raw_payload:
            raw = response.raw_body or json.dumps(response.data, ensure_ascii=False).encode()
            debug.raw_payload_original_bytes = len(raw)
            debug.raw_payload_truncated = len(raw) > DEBUG_PAYLOAD_CAP_BYTES
            debug.raw_payload = raw[:DEBUG_PAYLOAD_CAP_BYTES].decode("utf-8", errors="ignore")
            if debug.raw_payload_truncated:
                warnings.append(
                    _warning(
                        WarningCode.RAW_PAYLOAD_TRUNCATED,
                        f"raw_payload cut from {len(raw)} to {DEBUG_PAYLOAD_CAP_BYTES} bytes.",
                    )
                )
        return debug

    async def _summarize(self, args: SummarizerArgs, trace_id: str, facts: _CallFacts) -> tuple[SummaryEnvelope, str]:
        started = self._clock()
        deadline = args.deadline_seconds or self.settings.summarizer_deadline_seconds
        warnings: list[WarningItem] = []
        key = (args.key or "").strip()
        query = args.query.strip() if args.query else None
        if query is not None:
            search_args = WebSearchArgs(
                query=query,
                summary=True,
                country=args.country,
                search_language=args.search_language,
            )
            envelope, _ = await self._web_search(search_args, trace_id, facts)
            warnings.extend(w for w in envelope.warnings if w.code not in _SEARCH_ONLY_WARNINGS)
            if not envelope.summarizer_key:
                raise SummaryUnavailable(
                    "Unable to retrieve a Summarizer summary. (reason: Brave returned no summarizer key "
                    "for this query)",
                    retryable=False,
                    details={"reason": "no_key", "query": query},
                )
            key = envelope.summarizer_key
        remaining = max(0.1, deadline - (self._clock() - started))
        summary = await fetch_summary(
            self.client,
            key,
            entity_info=args.entity_info,
            inline_references=args.inline_references,
            schedule=PollSchedule(deadline=remaining),
            clock=self._clock,
            sleep=self._sleep,
        )
        facts.search_type = "summarizer"
        facts.extra["polls"] = summary.polls
        result = SummaryEnvelope(
            summary_text=summary.text,
            title=summary.title,
            references=summary.references,
            followups=summary.followups,
            enrichments=summary.enrichments,
            entities_infos=summary.entities_infos,
            meta=SummaryMeta(
                query=query,
                polls=summary.polls,
                duration_ms=round((self._clock() - started) * 1000),
                trace_id=trace_id,
                server_version=__version__,
                rate_limit=RateLimitMeta.from_info(self.client.last_rate_limit),
            ),
            warnings=warnings,
        )
        return result, render_summary_text(result)

    # ----------------------------------------------------------------------------- tool boundary

    async def call(self, tool: str, arguments: Mapping[str, Any] | None) -> ToolOutcome:
        """Run one tool call to an envelope; never raises except on cancellation by the caller."""
        trace_id = new_trace_id()
        started = self._clock()
        facts = _CallFacts(deadline=started + self.settings.call_deadline_seconds)
        try:
            with anyio.fail_after(self.settings.call_deadline_seconds):
                structured, text = await self._dispatch(tool, dict(arguments or {}), trace_id, facts)
            outcome = ToolOutcome(tool, structured, text, False, trace_id)
            code = "ok"
        except TimeoutError:
            error: BraveSearchError = UpstreamTimeout(
                f"The call did not finish within its {self.settings.call_deadline_seconds:g} s deadline.",
                details={"deadline_seconds": self.settings.call_deadline_seconds},
            )
            outcome = self.error_outcome(tool, error, trace_id)
            code = error.code.value
        except BraveSearchError as exc:
            outcome = self.error_outcome(tool, exc, trace_id)
            code = exc.code.value
            facts.upstream_status = facts.upstream_status or exc.details.get("status")
        except Exception:
            logger.exception("internal error in %s", tool, extra={"trace_id": trace_id, "tool": tool})
            error = InternalError(f"Internal error in {tool}; the server log has trace_id {trace_id}.")
            outcome = self.error_outcome(tool, error, trace_id)
            code = error.code.value
        logger.info(
            "tool call",
            extra={
                "trace_id": trace_id,
                "tool": tool,
                "outcome": code,
                "search_type": facts.search_type,
                "cache_hit": facts.cached,
                "attempts": facts.attempts,
                "upstream_status": facts.upstream_status,
                "duration_ms": round((self._clock() - started) * 1000, 1),
                **facts.extra,
            },
        )
        return self._without_key(outcome, arguments)

    def _without_key(self, outcome: ToolOutcome, arguments: Mapping[str, Any] | None) -> ToolOutcome:
        """Last guard: a key the agent typed into a query, echoed back by Brave, never leaves the server.

        The key can only reach an envelope through the call's own arguments or a body Brave sent back
        (error text is already scrubbed in the client), so the full scrub runs only when one of those
        holds it — or the text does.
        """
        key = self.settings.api_key.get_secret_value() if self.settings.api_key is not None else ""
        if not key:
            return outcome
        suspect = self.client.key_echoes > 0 or key in outcome.text or _contains(arguments, key)
        if not suspect:
            return outcome
        return ToolOutcome(
            outcome.tool,
            _redact(outcome.structured, key),
            outcome.text.replace(key, REDACTED),
            outcome.is_error,
            outcome.trace_id,
        )

    async def _dispatch(
        self, tool: str, arguments: dict[str, Any], trace_id: str, facts: _CallFacts
    ) -> tuple[dict[str, Any], str]:
        model = _ARG_MODELS.get(tool)
        if model is None:
            raise InvalidArgument(f"Unknown tool '{tool}'.", field="tool")
        args = validate_arguments(model, arguments)
        if isinstance(args, WebSearchArgs):
            envelope, text = await self._web_search(args, trace_id, facts)
            return envelope.dump(), text
        if isinstance(args, SummarizerArgs):
            summary, text = await self._summarize(args, trace_id, facts)
            return summary.dump(), text
        if isinstance(args, HelpArgs):
            doc = build_help(args.topic, self.settings)
            return doc, render_help_text(doc)
        if isinstance(args, StatusArgs):
            report = await build_status(self, args, trace_id, facts.deadline)
            return report, render_status_text(report)
        raise InvalidArgument(f"Unknown tool '{tool}'.", field="tool")  # pragma: no cover - exhaustive

    def error_outcome(self, tool: str, exc: BraveSearchError, trace_id: str) -> ToolOutcome:
        """The isError envelope and its one-paragraph text for a typed failure."""
        envelope = ErrorEnvelope(
            error=ErrorBody(code=exc.code.value, message=exc.message, retryable=exc.retryable, details=exc.details),
            meta=ErrorMeta(server_version=__version__, trace_id=trace_id, tool=tool),
            warnings=list(exc.warnings),
        )
        return ToolOutcome(tool, envelope.dump(), render_error_text(envelope), True, trace_id)

    @property
    def uptime_seconds(self) -> float:
        """Seconds since this service was created (status tool)."""
        return self._clock() - self._started_at


REDACTED = "[redacted]"


def _contains(value: Any, secret: str) -> bool:
    """Whether any string in a JSON-like value (keys included) holds ``secret``; iterative, so any depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if secret in item:
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _redact(value: Any, secret: str) -> Any:
    """A copy of a JSON-like value with ``secret`` replaced in every string, keys included; any depth."""

    def scrub(item: Any) -> Any:
        return item.replace(secret, REDACTED) if isinstance(item, str) else item

    if not isinstance(value, dict | list):
        return scrub(value)
    root: dict[Any, Any] | list[Any] = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            child: Any = item
            if isinstance(item, dict | list):
                child = {} if isinstance(item, dict) else []
                stack.append((item, child))
            else:
                child = scrub(item)
            if isinstance(target, dict):
                target[scrub(key)] = child
            else:
                target.append(child)
    return root


def _warning(code: WarningCode, message: str) -> WarningItem:
    return WarningItem(code=code.value, message=message)
