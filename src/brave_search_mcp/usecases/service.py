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
from dataclasses import dataclass
from typing import Any

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.client import BraveClient, BraveResponse
from brave_search_mcp.brave.params import PreparedSearch, prepare_search
from brave_search_mcp.brave.results import ParsedAnswer, parse_answer
from brave_search_mcp.brave.summarizer import PollSchedule, fetch_summary
from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import DEBUG_PAYLOAD_CAP_BYTES, Settings
from brave_search_mcp.logs import CALL_LOGGER
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import BraveSearchError, NoResults, SummaryUnavailable, WarningCode
from brave_search_mcp.models.inputs import SummarizerArgs, WebSearchArgs
from brave_search_mcp.models.search import DebugData, SearchEnvelope, SearchMeta
from brave_search_mcp.models.summary import SummaryEnvelope, SummaryMeta
from brave_search_mcp.providers.brave import BraveProvider
from brave_search_mcp.providers.chain import FallbackChain
from brave_search_mcp.providers.protocol import Provider
from brave_search_mcp.providers.request import search_request
from brave_search_mcp.ratelimit.info import rate_limit_meta
from brave_search_mcp.render.compact import fit_to_limits, render_summary_text, summary_line
from brave_search_mcp.usecases import answer as answers_chat
from brave_search_mcp.usecases import llm_context
from brave_search_mcp.usecases import local_search as places
from brave_search_mcp.usecases.answer import AnswerArgs
from brave_search_mcp.usecases.call import CallFacts
from brave_search_mcp.usecases.llm_context import LlmContextArgs
from brave_search_mcp.usecases.local_search import LocalSearchArgs
from brave_search_mcp.usecases.page_memo import FitKey, PageMemo, ParseKey
from brave_search_mcp.usecases.ports import Progress, json_fetch, stream_post

logger = logging.getLogger(CALL_LOGGER)


# Warnings about the result page of a search, meaningless on the summary made from it.
_SEARCH_ONLY_WARNINGS = frozenset(
    {WarningCode.DEDUPLICATED, WarningCode.OUTPUT_TRUNCATED, WarningCode.SUMMARY_NOT_AVAILABLE}
)


@dataclass
class _Served:
    """A search answer and who served it (``response`` is Brave's, when Brave answered)."""

    parsed: ParsedAnswer
    provider: str
    warnings: list[WarningItem]
    response: BraveResponse | None
    cached_other: bool = False
    attempts_other: int = 0
    superseded: frozenset[str] = frozenset()  # codes of Brave's request warnings that do not hold for this answer

    @property
    def cached(self) -> bool:
        return self.response.cached if self.response is not None else self.cached_other

    @property
    def attempts(self) -> int:
        return self.response.attempts if self.response is not None else self.attempts_other

    @property
    def body_id(self) -> int:  # 0: never memoised (another provider's page is cached by that provider)
        return self.response.body_id if self.response is not None else 0


class SearchService:
    """One instance per client: every face of the package calls through here."""

    def __init__(
        self,
        settings: Settings,
        client: BraveClient,
        *,
        clock: Clock | None = None,
        sleep: Sleep | None = None,
        others: Mapping[str, Provider] | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        # One notion of time per process: by default the client's (so tests can fake both at once).
        self._clock = clock or client.clock
        self._sleep = sleep or client.sleep
        self._started_at = self._clock()
        self._pages = PageMemo(settings.cache_size)
        self._chain: FallbackChain | None = None
        if tuple(settings.providers) != ("brave",):  # Brave alone needs no chain, breaker or fallback
            named: dict[str, Provider] = {"brave": BraveProvider(self._brave_fetch), **(others or {})}
            missing = [name for name in settings.providers if name not in named]
            if missing:
                raise ValueError(f"providers {missing} were configured but not built")
            self._chain = FallbackChain(
                [named[name] for name in settings.providers],
                threshold=settings.breaker_threshold,
                cooldown=settings.breaker_cooldown_seconds,
                clock=self._clock,
                records=client.shared.backend.records if client.shared else None,
                namespace=client.shared.namespace if client.shared else "",
            )

    # ----------------------------------------------------------------------------- typed use cases

    async def web_search(self, args: WebSearchArgs, *, trace_id: str | None = None) -> tuple[SearchEnvelope, str]:
        """Search one Brave index; the envelope and its compact text, or a ``BraveSearchError``."""
        return await self.run_web_search(args, trace_id or uuid.uuid4().hex[:16], CallFacts())

    async def summarize(self, args: SummarizerArgs, *, trace_id: str | None = None) -> tuple[SummaryEnvelope, str]:
        """Summarize by key, or search then summarize by query, in one call."""
        return await self.run_summarize(args, trace_id or uuid.uuid4().hex[:16], CallFacts())

    async def _brave_fetch(
        self, prepared: PreparedSearch, deadline: float | None
    ) -> tuple[ParsedAnswer, BraveResponse]:
        """One Brave search through the client, parsed once per upstream body (a cache hit reuses the parse)."""
        response = await self.client.get(
            prepared.endpoint,
            prepared.params,
            use_cache=prepared.use_cache,
            throttle=prepared.throttle,
            deadline=deadline,
        )
        parse_key = ParseKey(response.body_id, prepared.search_type, prepared.text_decorations)
        parsed = self._pages.parsed(
            parse_key,
            lambda: parse_answer(prepared.search_type, response.data, text_decorations=prepared.text_decorations),
        )
        return parsed, response

    async def _serve(self, prepared: PreparedSearch, args: WebSearchArgs, facts: CallFacts) -> _Served:
        """Brave alone, or the provider chain with its fallbacks; which one answered, and how."""
        if self._chain is None:
            parsed, response = await self._brave_fetch(prepared, facts.deadline)
            return _Served(parsed, "brave", [], response)
        page = await self._chain.search(search_request(prepared, args), deadline=facts.deadline)
        if page.provider == "brave":
            parsed, response = page.native
            # the chain put its FALLBACK warnings before Brave's own, which the caller adds from ``parsed``
            return _Served(parsed, "brave", page.warnings[: len(page.warnings) - len(parsed.warnings)], response)
        parsed = ParsedAnswer(sections=page.sections, more_available=page.more_available)
        return _Served(parsed, page.provider, page.warnings, None, page.cached, page.attempts, page.superseded)

    async def run_web_search(
        self, args: WebSearchArgs, trace_id: str, facts: CallFacts, progress: Progress | None = None
    ) -> tuple[SearchEnvelope, str]:
        started = self._clock()
        prepared = prepare_search(args, self.settings)
        facts.search_type = prepared.search_type
        warnings = list(prepared.warnings)
        try:
            served = await self._serve(prepared, args, facts)
        except BraveSearchError as exc:
            raise exc.for_call(warnings, search_type=prepared.search_type) from exc.__cause__
        parsed, response = served.parsed, served.response
        warnings = [w for w in warnings if w.code not in served.superseded]
        facts.cached, facts.attempts = served.cached, served.attempts
        facts.upstream_status = response.status if response is not None else None
        parse_key = ParseKey(served.body_id, prepared.search_type, prepared.text_decorations)
        warnings.extend(served.warnings)
        warnings.extend(parsed.warnings)
        returned = sum(len(section.results) for section in parsed.sections)
        if returned == 0:
            label = "web" if prepared.search_type == "web" else prepared.search_type
            error = NoResults(
                f'No {label} results found for "{prepared.query}".',
                details={"query": prepared.query, "search_type": prepared.search_type},
            )
            error.provider = served.provider
            raise error.for_call(warnings)
        if prepared.summary and not parsed.summarizer_key:
            warnings.append(_warning(WarningCode.SUMMARY_NOT_AVAILABLE, _no_summary(served.provider)))
        has_more = parsed.more_available if parsed.more_available is not None else returned >= prepared.requested
        meta = SearchMeta(
            query=prepared.query,
            search_type=prepared.search_type,
            requested=prepared.requested,
            returned=returned,
            offset=prepared.offset,
            has_more=has_more,
            provider=served.provider,
            cached=served.cached,
            attempts=served.attempts,
            duration_ms=round((self._clock() - started) * 1000),
            trace_id=trace_id,
            server_version=__version__,
            altered_query=parsed.altered_query,
            rate_limit=rate_limit_meta(response.rate_limit or self.client.last_rate_limit) if response else None,
        )
        # The fitted page depends only on these; a cache hit with the same ones reuses it (read-only).
        fit_key = FitKey(
            parse_key,
            prepared.query,
            prepared.offset,
            prepared.requested,
            prepared.max_lines,
            prepared.max_bytes,
            has_more,
            tuple((w.code, w.message) for w in warnings),
        )

        def fit() -> tuple[SearchEnvelope, str]:
            page = SearchEnvelope(
                summary="", sections=parsed.sections, summarizer_key=parsed.summarizer_key, meta=meta, warnings=warnings
            )
            page.summary = summary_line(page)
            return fit_to_limits(page, prepared.max_lines, prepared.max_bytes)

        page, text = self._pages.fitted(fit_key, fit)
        per_call: dict[str, Any] = {"cached": meta.cached, "attempts": meta.attempts, "trace_id": trace_id}
        per_call |= {"duration_ms": meta.duration_ms, "rate_limit": meta.rate_limit}
        envelope = page.model_copy(
            update={"meta": page.meta.model_copy(update=per_call), "warnings": list(page.warnings)}
        )
        if prepared.debug:
            envelope.debug = self._debug_data(prepared, response, envelope.warnings)
            text += "\n[debug] " + json.dumps(envelope.debug.dump(), ensure_ascii=False)
        return envelope, text

    def _debug_data(
        self, prepared: PreparedSearch, response: BraveResponse | None, warnings: list[WarningItem]
    ) -> DebugData:
        debug = DebugData(
            cache_bypassed=not prepared.use_cache,
            throttle_bypassed=not prepared.throttle,
            request_url=response.request_url if prepared.include_request_url and response is not None else None,
        )
        if prepared.include_raw_payload and response is not None:
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

    async def run_summarize(
        self, args: SummarizerArgs, trace_id: str, facts: CallFacts, progress: Progress | None = None
    ) -> tuple[SummaryEnvelope, str]:
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
            envelope, _ = await self.run_web_search(search_args, trace_id, facts)
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
            progress=progress,
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
                rate_limit=rate_limit_meta(self.client.last_rate_limit),
            ),
            warnings=warnings,
        )
        return result, render_summary_text(result)

    # -- the Brave-only use cases of issue 12: each runs over the one client through small adapters --

    async def run_llm_context(
        self, args: LlmContextArgs, trace_id: str, facts: CallFacts, progress: Progress | None = None
    ) -> tuple[Any, str]:
        """Grounding passages within the caller's character budget."""
        return await self._json_use_case(llm_context.run, args, trace_id, facts)

    async def run_local(
        self, args: LocalSearchArgs, trace_id: str, facts: CallFacts, progress: Progress | None = None
    ) -> tuple[Any, str]:
        """Places by place search or web locations, falling back to web results."""
        return await self._json_use_case(places.run, args, trace_id, facts)

    async def _json_use_case(
        self, run: Callable[..., Awaitable[tuple[Any, str]]], args: Any, trace_id: str, facts: CallFacts
    ) -> tuple[Any, str]:
        """A Brave-only use case over JSON GETs: the one client, the call's deadline, the plan figures stamped."""
        envelope, text = await run(
            args, json_fetch(self.client, facts), deadline=facts.deadline, trace_id=trace_id,
            server_version=__version__, clock=self._clock,
        )  # fmt: skip
        envelope.meta.rate_limit = rate_limit_meta(self.client.last_rate_limit)
        return envelope, text

    async def run_answer(
        self, args: AnswerArgs, trace_id: str, facts: CallFacts, progress: Progress | None = None
    ) -> tuple[Any, str]:
        """A streamed, cited AI answer; partial (with a warning) when the stream breaks or time runs out."""
        facts.search_type = "answer"
        return await answers_chat.run(
            args, stream_post(self.client), deadline=facts.deadline, progress=progress, clock=self._clock,
            trace_id=trace_id, server_version=__version__,
        )  # fmt: skip

    async def providers(self) -> dict[str, Any]:
        """Per provider, its circuit breaker as the shared store has it (status tool); Brave alone has none."""
        if self._chain is None:
            return {"brave": {"state": "closed", "fallback": False}}
        return await self._chain.status()

    async def probe_providers(self, deadline: float | None) -> list[dict[str, Any]]:
        """One cheap check of each provider other than Brave that has one (status tool's probe)."""
        return [] if self._chain is None else await self._chain.probe(deadline=deadline)

    @property
    def clock(self) -> Clock:
        """The one clock of this service and its client (deadlines, durations)."""
        return self._clock

    @property
    def key_echoes(self) -> int:
        """How many upstream bodies contained the API key (the boundary then scrubs its output)."""
        return self.client.key_echoes

    @property
    def uptime_seconds(self) -> float:
        """Seconds since this service was created (status tool)."""
        return self._clock() - self._started_at


def _warning(code: WarningCode, message: str) -> WarningItem:
    return WarningItem(code=code.value, message=message)


def _no_summary(provider: str) -> str:
    if provider == "brave":
        return "Brave returned no summarizer key."
    return f"{provider} answered this search; summaries come only from Brave (no summarizer key)."
