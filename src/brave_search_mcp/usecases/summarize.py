"""brave_summarizer: Brave's legacy summarizer, by query (search, then summarize, in one call) or by key.

Brave deprecated it (the Pro AI plan); new keys get cited answers from ``brave_answer`` instead. The
polling protocol lives in ``brave.summarizer``; this slice chains the search and the polls under one
deadline and keeps only the search warnings that still mean something for the summary.
"""

from __future__ import annotations

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.facts import Endpoint
from brave_search_mcp.brave.summarizer import PollSchedule, fetch_summary
from brave_search_mcp.config import Settings
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import SummaryUnavailable, WarningCode
from brave_search_mcp.models.inputs import SummarizerArgs, WebSearchArgs
from brave_search_mcp.models.summary import SummaryEnvelope, SummaryMeta
from brave_search_mcp.ratelimit.info import rate_limit_meta
from brave_search_mcp.render.compact import render_summary_text
from brave_search_mcp.usecases import web_search
from brave_search_mcp.usecases.contract import Call, CliShape, Ports, ToolSpec

# Warnings about the result page of a search, meaningless on the summary made from it.
_SEARCH_ONLY_WARNINGS = frozenset(
    {WarningCode.DEDUPLICATED, WarningCode.OUTPUT_TRUNCATED, WarningCode.SUMMARY_NOT_AVAILABLE}
)
HELP_NOTE = "Brave deprecated the summarizer (legacy Pro AI plan); for new keys use brave_answer (Answers plan)."


async def run(args: SummarizerArgs, ports: Ports, call: Call) -> tuple[SummaryEnvelope, str]:
    """Summarize by key, or search then summarize by query, in one call."""
    facts, trace_id, progress = call.facts, call.trace_id, call.progress
    started = ports.clock()
    deadline = args.deadline_seconds or ports.settings.summarizer_deadline_seconds
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
        envelope, _ = await web_search.run(search_args, ports, call)
        warnings.extend(w for w in envelope.warnings if w.code not in _SEARCH_ONLY_WARNINGS)
        if not envelope.summarizer_key:
            raise SummaryUnavailable(
                "Unable to retrieve a Summarizer summary. (reason: Brave returned no summarizer key for this query)",
                retryable=False,
                details={"reason": "no_key", "query": query},
            )
        key = envelope.summarizer_key
    remaining = max(0.1, deadline - (ports.clock() - started))
    summary = await fetch_summary(
        ports.client,
        key,
        entity_info=args.entity_info,
        inline_references=args.inline_references,
        schedule=PollSchedule(deadline=remaining),
        clock=ports.clock,
        sleep=ports.sleep,
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
            duration_ms=round((ports.clock() - started) * 1000),
            trace_id=trace_id,
            server_version=__version__,
            rate_limit=rate_limit_meta(ports.client.last_rate_limit),
        ),
        warnings=warnings,
    )
    return result, render_summary_text(result)


def deadline(args: SummarizerArgs, settings: Settings) -> float:
    """A caller's ``deadline_seconds`` bounds the whole call, a hanging poll included."""
    if args.deadline_seconds is None:
        return settings.call_deadline_seconds
    return min(settings.call_deadline_seconds, args.deadline_seconds)


SPEC = ToolSpec(
    name="brave_summarizer",
    title="Brave summarizer",
    description=(
        "Short AI summary with numbered sources. Pass query (searches and summarizes in one call) or key "
        "(summarizer_key from brave_web_search with summary: true). Needs a Brave plan with the summarizer."
    ),
    help="Legacy summarizer (Brave's Pro AI plan): a cited summary by query or by summarizer_key. " + HELP_NOTE,
    guide="a short cited answer to a question (pass query, or summarizer_key from a search with summary: true)",
    input_model=SummarizerArgs,
    run=run,
    cli=CliShape(
        "summarize",
        "print a short cited summary",
        positional="query",
        optional_positional=True,
        aliases=("summarizer",),
    ),
    library="summarize",
    endpoints=(Endpoint.SUMMARIZER,),
    needs_brave=True,
    deadline=deadline,
)
