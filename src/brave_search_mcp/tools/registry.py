"""The one tool registry: every tool in tools/list order, and the ones the settings turn on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from brave_search_mcp.config import ConfigError, Settings
from brave_search_mcp.models.envelopes import Envelope
from brave_search_mcp.models.inputs import HelpArgs, StatusArgs, SummarizerArgs, WebSearchArgs
from brave_search_mcp.tools.help import build_help, render_help_text
from brave_search_mcp.tools.spec import ArgsT, CallContext, Handler, ToolSpec
from brave_search_mcp.tools.status import build_status, render_status_text
from brave_search_mcp.usecases import docs as more_docs
from brave_search_mcp.usecases.answer import AnswerArgs, deadline_seconds
from brave_search_mcp.usecases.call import CallFacts
from brave_search_mcp.usecases.llm_context import LlmContextArgs
from brave_search_mcp.usecases.local_search import LocalSearchArgs
from brave_search_mcp.usecases.ports import Progress
from brave_search_mcp.usecases.service import SearchService

UseCase = Callable[[SearchService, ArgsT, str, CallFacts, Progress | None], Awaitable[tuple[Envelope, str]]]


def _use_case(run: UseCase[ArgsT]) -> Handler[ArgsT]:
    """The handler of a tool that is one service use case answering with an envelope."""

    async def handler(service: SearchService, args: ArgsT, call: CallContext) -> tuple[dict[str, Any], str]:
        envelope, text = await run(service, args, call.trace_id, call.facts, call.progress)
        return envelope.dump(), text

    return handler


async def _help(service: SearchService, args: HelpArgs, call: CallContext) -> tuple[dict[str, Any], str]:
    doc = build_help(args.topic, service.settings, [tool.doc() for tool in call.tools])
    return doc, render_help_text(doc)


async def _status(service: SearchService, args: StatusArgs, call: CallContext) -> tuple[dict[str, Any], str]:
    names = [tool.name for tool in call.tools]
    report = await build_status(
        service, args, call.trace_id, call.deadline, enabled_tools=names, progress=call.progress
    )
    return report, render_status_text(report)


def _answer_deadline(args: AnswerArgs, settings: Settings) -> float:
    """Research mode can take minutes: its deadline follows its own budget, not the default."""
    return deadline_seconds(args, settings.call_deadline_seconds)


def _summarizer_deadline(args: SummarizerArgs, settings: Settings) -> float:
    """A caller's ``deadline_seconds`` bounds the whole call, a hanging poll included."""
    if args.deadline_seconds is None:
        return settings.call_deadline_seconds
    return min(settings.call_deadline_seconds, args.deadline_seconds)


def all_tools() -> tuple[ToolSpec[Any], ...]:
    """Every tool this server knows, in the order ``tools/list`` shows them."""
    return (
        ToolSpec(
            "brave_web_search",
            "Brave web search",
            "Search the web with Brave: search_type web (default), news, images or videos. Returns numbered "
            "results (title, URL, snippet, age); structuredContent holds the v1 envelope. Valid values: "
            "brave_web_search_help.",
            WebSearchArgs,
            _use_case(SearchService.run_web_search),
            "Web, news, image or video results, numbered across sections; pass offset for the next page.",
        ),
        ToolSpec(
            "brave_summarizer",
            "Brave summarizer",
            "Short AI summary with numbered sources. Pass query (searches and summarizes in one call) or key "
            "(summarizer_key from brave_web_search with summary: true). Needs a Brave plan with the summarizer.",
            SummarizerArgs,
            _use_case(SearchService.run_summarize),
            "Legacy summarizer (Brave's Pro AI plan): a cited summary by query or by summarizer_key. "
            + more_docs.SUMMARIZER_HELP_NOTE,
            deadline=_summarizer_deadline,
            needs_brave=True,
        ),
        ToolSpec(
            more_docs.LLM_CONTEXT.name,
            more_docs.LLM_CONTEXT.title,
            more_docs.LLM_CONTEXT.description,
            LlmContextArgs,
            _use_case(SearchService.run_llm_context),
            more_docs.LLM_CONTEXT.help,
            needs_brave=True,
        ),
        ToolSpec(
            more_docs.LOCAL_SEARCH.name,
            more_docs.LOCAL_SEARCH.title,
            more_docs.LOCAL_SEARCH.description,
            LocalSearchArgs,
            _use_case(SearchService.run_local),
            more_docs.LOCAL_SEARCH.help,
            needs_brave=True,
        ),
        ToolSpec(
            more_docs.ANSWER.name,
            more_docs.ANSWER.title,
            more_docs.ANSWER.description,
            AnswerArgs,
            _use_case(SearchService.run_answer),
            more_docs.ANSWER.help,
            deadline=_answer_deadline,
            needs_brave=True,
        ),
        ToolSpec(
            "brave_web_search_help",
            "Brave search help",
            "Parameter reference (countries, languages, ranges), ready-to-send examples, limits in force, and "
            "every error and warning code with what to do.",
            HelpArgs,
            _help,
            "This reference: parameters of every enabled tool, examples, limits and codes.",
        ),
        ToolSpec(
            "brave_web_search_status",
            "Brave search status",
            "Health of this server: API key configured (never shown), Brave rate and quota figures, cache stats. "
            "probe_connectivity sends one minimal request per search endpoint.",
            StatusArgs,
            _status,
            "Key source, rate and quota figures, cache, and optional connectivity probes.",
        ),
    )


def enabled_tools(settings: Settings) -> tuple[ToolSpec[Any], ...]:
    """The tools the settings turn on, in registry order; unknown names fail naming their variable."""
    tools = all_tools()
    known = [tool.name for tool in tools]
    for setting in ("enabled_tools", "disabled_tools"):
        unknown = [name for name in getattr(settings, setting) or () if name not in known]
        if unknown:
            variable = Settings.variable_of(setting)
            raise ConfigError(f"{variable} names unknown tools {unknown}; known: {', '.join(known)}")
    chosen = tuple(
        tool
        for tool in tools
        if (settings.enabled_tools is None or tool.name in settings.enabled_tools)
        and tool.name not in settings.disabled_tools
        and (settings.enabled_tools is not None or tool.default_enabled)
        and (settings.enabled_tools is not None or not tool.needs_brave or "brave" in settings.providers)
    )
    if not chosen:
        raise ConfigError("BRAVE_SEARCH_DISABLED_TOOLS disables every tool")
    return chosen
