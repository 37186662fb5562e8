"""The one tool registry, and the boundary every tool call crosses on every face (MCP, HTTP, CLI, skill).

A tool is one ``ToolSpec``: name, input model, handler, annotations, description, help text and
whether it is on by default. The server, CLI, help and status tools, the ``manifest.json`` drift test
and the enable/disable settings all read ``all_tools()``. Adding a tool is one entry here, its handler
in a use-case module, and its tests.

``ToolBoundary.call`` is the shared boundary: argument validation into an ``INVALID_ARGUMENT``
envelope, the call deadline, typed failures into error envelopes, unknown tools into an error
envelope, the key scrub and one log line per call. It never raises except on cancellation.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from . import more_docs
from ._version import __version__
from .answers_chat import AnswerArgs, deadline_seconds
from .config import ConfigError, Settings
from .errors import BraveSearchError, InternalError, InvalidArgument, ProviderMisconfigured, UpstreamTimeout
from .facts import CallFacts
from .helpdoc import ToolDoc, build_help, render_help_text
from .llm_context import LlmContextArgs
from .logs import CALL_LOGGER
from .models import Envelope, ErrorBody, ErrorEnvelope, ErrorMeta, HelpArgs, StatusArgs, SummarizerArgs, WebSearchArgs
from .more_common import Progress
from .places import LocalSearchArgs
from .redact import contains, redact
from .render import render_error_text
from .service import SearchService
from .status import build_status, render_status_text

logger = logging.getLogger(CALL_LOGGER)

ArgsT = TypeVar("ArgsT", bound=BaseModel)
REDACTED = "[redacted]"


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced: the envelope for programs and the text for the model."""

    tool: str
    structured: dict[str, Any]
    text: str
    is_error: bool
    trace_id: str


@dataclass
class CallContext:
    """What a handler gets besides its arguments: identity, deadline, the log facts, progress and peers."""

    trace_id: str
    deadline: float  # on the service's clock
    facts: CallFacts
    tools: tuple[ToolSpec[Any], ...]
    progress: Progress | None = None


Handler = Callable[[SearchService, ArgsT, CallContext], Awaitable[tuple[dict[str, Any], str]]]


@dataclass(frozen=True)
class ToolSpec(Generic[ArgsT]):
    """One tool, declared once."""

    name: str
    title: str
    description: str  # one short paragraph: the model pays for it on every turn
    input_model: type[ArgsT]
    handler: Handler[ArgsT]
    help: str  # the help tool's paragraph for this tool
    default_enabled: bool = True
    needs_brave: bool = False  # a Brave-only endpoint: hidden when Brave is not a configured provider
    deadline: Callable[[ArgsT, Settings], float] | None = None  # own deadline (seconds) instead of the default
    annotations: Mapping[str, Any] = field(
        default_factory=lambda: {"read_only": True, "destructive": False, "idempotent": True, "open_world": True}
    )

    def doc(self) -> ToolDoc:
        """What the help use case needs to know of this tool."""
        return ToolDoc(self.name, self.input_model, self.help)


# -- handlers: thin adapters from validated arguments to a use case -------------------------------


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


def new_trace_id() -> str:
    """Short random id that ties a tool result to its log line."""
    return uuid.uuid4().hex[:16]


# pydantic's type errors → the JSON type the schema promises.
_EXPECTED = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "bool_type": "boolean",
    "string_type": "string",
    "float_type": "number",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
}


def _json_type(value: Any) -> str:
    """The JSON type name of a received value (the value itself is never echoed)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number" if isinstance(value, float) else "integer"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def invalid_argument_from(exc: ValidationError) -> InvalidArgument:
    """Turn pydantic's report into one INVALID_ARGUMENT naming the first bad field (values never echoed)."""
    problems: list[dict[str, str]] = []
    for err in exc.errors(include_url=False)[:5]:
        loc = ".".join(str(part) for part in err.get("loc", ()))
        kind = err.get("type", "")
        if kind == "extra_forbidden":
            message = f"unknown field '{loc}'"
        elif kind == "missing":
            message = f"'{loc}' is required"
        elif kind in _EXPECTED:
            message = f"{loc}: expected {_EXPECTED[kind]}, got {_json_type(err.get('input'))}"
        else:
            text = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            message = f"{loc}: {text}" if loc else text
        problems.append({"field": loc, "message": message})
    first = problems[0] if problems else {"field": "", "message": "invalid arguments"}
    summary = "; ".join(p["message"] for p in problems)
    return InvalidArgument(f"Invalid arguments: {summary}.", field=first["field"] or None, errors=problems)


def validate_arguments(model: type[ArgsT], arguments: Mapping[str, Any]) -> ArgsT:
    """Strict validation of tool arguments; every rejection is one INVALID_ARGUMENT naming the field."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise invalid_argument_from(exc) from None


def error_outcome(tool: str, exc: BraveSearchError, trace_id: str) -> ToolOutcome:
    """The isError envelope and its one-paragraph text for a typed failure."""
    envelope = ErrorEnvelope(
        error=ErrorBody(code=exc.code.value, message=exc.message, retryable=exc.retryable, details=exc.details),
        meta=ErrorMeta(server_version=__version__, trace_id=trace_id, tool=tool),
        warnings=list(exc.warnings),
    )
    return ToolOutcome(tool, envelope.dump(), render_error_text(envelope), True, trace_id)


class ToolBoundary:
    """The enabled tools bound to one service: what every face calls."""

    def __init__(self, service: SearchService, tools: Sequence[ToolSpec[Any]]) -> None:
        self.service = service
        self.tools = tuple(tools)
        self._by_name = {tool.name: tool for tool in self.tools}

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, *, progress: Progress | None = None
    ) -> ToolOutcome:
        """Run one tool call to an envelope; never raises except on cancellation by the caller."""
        settings = self.service.settings
        clock = self.service.clock
        trace_id = new_trace_id()
        started = clock()
        tool = self._by_name.get(name)
        facts = CallFacts()
        code = "ok"
        try:
            if tool is None:
                known = ", ".join(self._by_name)
                raise InvalidArgument(f"Unknown tool '{name}'; this server has: {known}.", field="tool")
            if tool.needs_brave and "brave" not in settings.providers:
                raise ProviderMisconfigured(
                    f"{name} uses a Brave-only endpoint, and Brave is not among BRAVE_SEARCH_PROVIDERS "
                    f"({', '.join(settings.providers)}): add brave there and set BRAVE_API_KEY to use it.",
                    details={"setting": "BRAVE_SEARCH_PROVIDERS"},
                )
            args = validate_arguments(tool.input_model, dict(arguments or {}))
            seconds = tool.deadline(args, settings) if tool.deadline else settings.call_deadline_seconds
            facts.deadline = started + seconds
            call = CallContext(trace_id, facts.deadline, facts, self.tools, progress)
            try:
                with anyio.fail_after(seconds):
                    structured, text = await tool.handler(self.service, args, call)
            except TimeoutError:
                raise UpstreamTimeout(
                    f"The call did not finish within its {seconds:g} s deadline.",
                    details={"deadline_seconds": seconds},
                ) from None
            outcome = ToolOutcome(name, structured, text, False, trace_id)
        except BraveSearchError as exc:
            outcome = error_outcome(name, exc, trace_id)
            code = exc.code.value
            facts.upstream_status = facts.upstream_status or exc.details.get("status")
        except Exception:
            logger.exception("internal error in %s", name, extra={"trace_id": trace_id, "tool": name})
            error = InternalError(f"Internal error in {name}; the server log has trace_id {trace_id}.")
            outcome = error_outcome(name, error, trace_id)
            code = error.code.value
        logger.info(
            "tool call",
            extra={
                "trace_id": trace_id,
                "tool": name,
                "outcome": code,
                "search_type": facts.search_type,
                "cache_hit": facts.cached,
                "attempts": facts.attempts,
                "upstream_status": facts.upstream_status,
                "duration_ms": round((clock() - started) * 1000, 1),
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
        key = self.service.settings.api_key.get_secret_value() if self.service.settings.api_key is not None else ""
        if not key:
            return outcome
        suspect = self.service.key_echoes > 0 or key in outcome.text or contains(arguments, key)
        if not suspect:
            return outcome
        return ToolOutcome(
            outcome.tool,
            redact(outcome.structured, key, REDACTED),
            outcome.text.replace(key, REDACTED),
            outcome.is_error,
            outcome.trace_id,
        )
