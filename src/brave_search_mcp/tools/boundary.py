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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import ValidationError

from brave_search_mcp._version import __version__
from brave_search_mcp.logs import CALL_LOGGER
from brave_search_mcp.models.envelopes import ErrorBody, ErrorEnvelope, ErrorMeta
from brave_search_mcp.models.errors import (
    BraveSearchError,
    InternalError,
    InvalidArgument,
    ProviderMisconfigured,
    UpstreamTimeout,
)
from brave_search_mcp.render.compact import render_error_text
from brave_search_mcp.render.redact import contains, redact
from brave_search_mcp.tools.spec import ArgsT, CallContext, ToolSpec
from brave_search_mcp.usecases.call import CallFacts
from brave_search_mcp.usecases.ports import Progress
from brave_search_mcp.usecases.service import SearchService

logger = logging.getLogger(CALL_LOGGER)

REDACTED = "[redacted]"


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced: the envelope for programs and the text for the model."""

    tool: str
    structured: dict[str, Any]
    text: str
    is_error: bool
    trace_id: str


# -- handlers: thin adapters from validated arguments to a use case -------------------------------


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


def error_outcome(tool: str, exc: BraveSearchError, trace_id: str, provider: str = "brave") -> ToolOutcome:
    """The isError envelope and its one-paragraph text for a typed failure; ``meta.provider`` names the provider
    that failed, else ``provider`` (the first configured one)."""
    envelope = ErrorEnvelope(
        error=ErrorBody(code=exc.code.value, message=exc.message, retryable=exc.retryable, details=exc.details),
        meta=ErrorMeta(provider=exc.provider or provider, server_version=__version__, trace_id=trace_id, tool=tool),
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
            outcome = error_outcome(name, exc, trace_id, settings.providers[0])
            code = exc.code.value
            facts.upstream_status = facts.upstream_status or exc.details.get("status")
        except Exception:
            logger.exception("internal error in %s", name, extra={"trace_id": trace_id, "tool": name})
            error = InternalError(f"Internal error in {name}; the server log has trace_id {trace_id}.")
            outcome = error_outcome(name, error, trace_id, settings.providers[0])
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
