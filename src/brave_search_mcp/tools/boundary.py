"""The boundary every tool call crosses on every face (MCP, HTTP, CLI, skill, library).

``ToolBoundary.call`` is the shared boundary: argument validation into an ``INVALID_ARGUMENT``
envelope, the call deadline, typed failures into error envelopes, unknown tools into an error
envelope, the key scrub and one log line per call. It never raises except on cancellation.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic import ValidationError

from brave_search_mcp._version import __version__
from brave_search_mcp.logs import CALL_LOGGER
from brave_search_mcp.models.envelopes import Envelope, ErrorBody, ErrorEnvelope, ErrorMeta
from brave_search_mcp.models.errors import (
    BraveSearchError,
    InternalError,
    InvalidArgument,
    ProviderMisconfigured,
    UpstreamTimeout,
)
from brave_search_mcp.render.compact import render_error_text
from brave_search_mcp.render.redact import contains, redact
from brave_search_mcp.tools.registry import all_tools
from brave_search_mcp.usecases.contract import ArgsT, Call, CallFacts, OutT, Ports, Progress, ToolSpec

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


def new_trace_id() -> str:
    """Short random id that ties a tool result to its log line: 16 hex digits from the OS's random source."""
    return os.urandom(8).hex()


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
    """The enabled tools bound to the ports of one process: what every face calls."""

    def __init__(self, ports: Ports, tools: Sequence[ToolSpec[Any, Any]]) -> None:
        self.ports = ports
        self.tools = tuple(tools)
        self._by_name = {tool.name: tool for tool in self.tools}

    def spec(self, name: str) -> ToolSpec[Any, Any]:
        """The enabled tool of this name; INVALID_ARGUMENT naming the known ones otherwise."""
        tool = self._by_name.get(name)
        settings = self.ports.settings
        if tool is None:
            known = ", ".join(self._by_name)
            registered = {spec.name: spec for spec in all_tools()}.get(name)
            if registered is None:
                raise InvalidArgument(f"Unknown tool '{name}'; this server has: {known}.", field="tool")
            if not (registered.needs_brave and "brave" not in settings.providers):
                raise ProviderMisconfigured(
                    f"{name} is turned off on this server by BRAVE_SEARCH_ENABLED_TOOLS or "
                    f"BRAVE_SEARCH_DISABLED_TOOLS; it has: {known}.",
                    details={"setting": "BRAVE_SEARCH_DISABLED_TOOLS"},
                )
            tool = registered
        if tool.needs_brave and "brave" not in settings.providers:
            raise ProviderMisconfigured(
                f"{name} needs Brave (a Brave-only endpoint), and Brave is not among BRAVE_SEARCH_PROVIDERS "
                f"({', '.join(settings.providers)}): add brave there and set BRAVE_API_KEY to use it.",
                details={"setting": "BRAVE_SEARCH_PROVIDERS"},
            )
        return tool

    async def execute(
        self,
        tool: ToolSpec[ArgsT, OutT],
        args: ArgsT,
        *,
        progress: Progress | None = None,
        facts: CallFacts | None = None,
        trace_id: str | None = None,
    ) -> tuple[OutT, str]:
        """Run validated arguments under the tool's deadline; typed failures raise (the library's path)."""
        settings = self.ports.settings
        facts = facts if facts is not None else CallFacts()
        seconds = tool.deadline(args, settings) if tool.deadline else settings.call_deadline_seconds
        facts.deadline = self.ports.clock() + seconds
        call = Call(trace_id or new_trace_id(), facts.deadline, facts, self.tools, progress)
        try:
            with anyio.fail_after(seconds):
                return await tool.run(args, self.ports, call)
        except TimeoutError:
            raise UpstreamTimeout(
                f"The call did not finish within its {seconds:g} s deadline.",
                details={"deadline_seconds": seconds},
            ) from None

    async def call(self, name: str, arguments: object, *, progress: Progress | None = None) -> ToolOutcome:
        """Run one tool call to an envelope; never raises except on cancellation by the caller.

        ``arguments`` are as received: a mapping, None (no arguments), or anything else JSON can carry, refused."""
        clock, settings = self.ports.clock, self.ports.settings
        trace_id = self.ports.observer.trace_id() or new_trace_id()  # the span's when traced
        started = clock()
        facts = CallFacts()
        code, counted_as = "ok", "unknown"  # a name the server does not know is the client's text, never a label
        try:
            tool = self.spec(name)
            counted_as = tool.name
            if arguments is not None and not isinstance(arguments, Mapping):
                raise InvalidArgument(
                    f"Invalid arguments: expected an object of named arguments, got {_json_type(arguments)}.",
                    field="arguments",
                )
            args = validate_arguments(tool.input_model, dict(arguments or {}))
            out, text = await self.execute(tool, args, progress=progress, facts=facts, trace_id=trace_id)
            structured = out.dump() if isinstance(out, Envelope) else out
            outcome = ToolOutcome(name, structured, text, False, trace_id)
        except BraveSearchError as exc:
            sent = exc.details.get("attempts")
            if isinstance(sent, int) or facts.attempts:  # one count of requests sent, in the envelope and the log
                facts.attempts = max(facts.attempts, sent if isinstance(sent, int) else 0)
                exc.details["attempts"] = facts.attempts
            outcome = error_outcome(name, exc, trace_id, facts.provider or settings.providers[0])
            code = exc.code.value
            facts.upstream_status = facts.upstream_status or exc.details.get("status")
        except Exception:
            logger.exception("internal error in %s", name, extra={"trace_id": trace_id, "tool": name})
            error = InternalError(f"Internal error in {name}; the server log has trace_id {trace_id}.")
            outcome = error_outcome(name, error, trace_id, facts.provider or settings.providers[0])
            code = error.code.value
        self.ports.observer.tool_call(counted_as, code, clock() - started)
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

    def _without_key(self, outcome: ToolOutcome, arguments: object) -> ToolOutcome:
        """Last guard: a key the agent typed into a query, echoed back by Brave, never leaves the server.

        The key can only reach an envelope through the call's own arguments or a body Brave sent back
        (error text is already scrubbed in the client), so the full scrub runs only when one of those
        holds it — or the text does.
        """
        settings = self.ports.settings
        key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
        if not key:
            return outcome
        suspect = self.ports.client.key_echoes > 0 or key in outcome.text or contains(arguments, key)
        if not suspect:
            return outcome
        return ToolOutcome(
            outcome.tool,
            redact(outcome.structured, key, REDACTED),
            outcome.text.replace(key, REDACTED),
            outcome.is_error,
            outcome.trace_id,
        )
