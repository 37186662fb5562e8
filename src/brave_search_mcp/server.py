"""The MCP face: registers the four tools on an ``MCPServer`` and maps outcomes to ``CallToolResult``.

No business logic lives here. Arguments reach the service raw so that *it* validates them and
every rejection — unknown field, wrong type, bad alias — comes back as an ``INVALID_ARGUMENT``
envelope rather than the SDK's plain-text error (and unknown fields are not silently dropped).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict

from ._version import __version__
from .client import BraveClient
from .config import Settings
from .helpdoc import TOOL_MODELS
from .service import SearchService, ToolOutcome

SERVER_NAME = "brave-search"

INSTRUCTIONS = (
    "Brave Search tools. brave_web_search: current web, news, image or video results (cite result URLs). "
    "brave_summarizer: a short cited answer to a question (pass query, or summarizer_key from a search with "
    "summary: true). brave_web_search_help: valid parameter values, limits and error codes. "
    "brave_web_search_status: key, quota and connectivity. Failures return isError with error.code and "
    "error.retryable: follow the advice in the text."
)


@dataclass(frozen=True)
class ToolSpec:
    """Registration facts of one tool."""

    name: str
    title: str
    description: str


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "brave_web_search",
        "Brave web search",
        "Search the web with Brave: search_type web (default), news, images or videos. Returns numbered results "
        "(title, URL, snippet, age); structuredContent holds the v1 envelope. Valid values: brave_web_search_help.",
    ),
    ToolSpec(
        "brave_summarizer",
        "Brave summarizer",
        "Short AI summary with numbered sources. Pass query (searches and summarizes in one call) or key "
        "(summarizer_key from brave_web_search with summary: true). Needs a Brave plan with the summarizer.",
    ),
    ToolSpec(
        "brave_web_search_help",
        "Brave search help",
        "Parameter reference (countries, languages, ranges), ready-to-send examples, limits in force, and "
        "every error and warning code with what to do.",
    ),
    ToolSpec(
        "brave_web_search_status",
        "Brave search status",
        "Health of this server: API key configured (never shown), Brave rate and quota figures, cache stats. "
        "probe_connectivity sends one minimal request per search endpoint.",
    ),
)


@dataclass
class AppState:
    """What the lifespan hands every tool call: the one service (and so the one client)."""

    service: SearchService


class _RawArguments(ArgModelBase):
    """Accepts any arguments untouched so the service can validate them into envelopes."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def compact_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema without titles and null-unions: the model pays for every byte, every turn."""
    schema = model.model_json_schema()

    def simplify(node: Any) -> Any:
        if isinstance(node, dict):
            options = node.get("anyOf")
            if isinstance(options, list):
                non_null = [o for o in options if o != {"type": "null"}]
                if len(non_null) == 1 and len(options) == 2:
                    node = {k: v for k, v in node.items() if k != "anyOf"} | non_null[0]
            cleaned = {k: simplify(v) for k, v in node.items() if k != "title"}
            if cleaned.get("default", 0) is None:
                del cleaned["default"]
            return cleaned
        if isinstance(node, list):
            return [simplify(item) for item in node]
        return node

    properties = {name: simplify(prop) for name, prop in schema.get("properties", {}).items()}
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if schema.get("required"):
        out["required"] = schema["required"]
    return out


def _to_result(outcome: ToolOutcome) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text)],
        structured_content=outcome.structured,
        is_error=outcome.is_error,
    )


def _make_handler(name: str) -> Callable[..., Awaitable[CallToolResult]]:
    async def handler(arguments: dict[str, Any], ctx: Context[AppState]) -> CallToolResult:
        state: AppState = ctx.request_context.lifespan_context
        return _to_result(await state.service.call(name, arguments))

    handler.__name__ = name
    return handler


def _build_tool(spec: ToolSpec) -> Tool:
    tool = Tool.from_function(
        _make_handler(spec.name),
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=ToolAnnotations(
            title=spec.title,
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=True,
        ),
        structured_output=False,
    )
    tool.fn_metadata.arg_model = _RawArguments
    tool.parameters = compact_schema(TOOL_MODELS[spec.name])
    return tool


def build_server(
    settings: Settings,
    client: BraveClient | None = None,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> MCPServer[AppState]:
    """The stdio-ready server. Pass an open ``client`` (caller owns it) or a ``transport`` for tests."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        if client is not None:
            yield AppState(SearchService(settings, client))
            return
        async with BraveClient(settings, transport=transport) as owned:
            yield AppState(SearchService(settings, owned))

    tools = [_build_tool(spec) for spec in TOOL_SPECS if spec.name in settings.enabled_tools]
    return MCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
        tools=tools,
    )
