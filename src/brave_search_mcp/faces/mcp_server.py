"""The MCP face: turns the registry's enabled tools into MCP tools and outcomes into ``CallToolResult``.

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
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict

from brave_search_mcp._version import __version__
from brave_search_mcp.compose import UpstreamClient, open_tools
from brave_search_mcp.config import Settings
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from brave_search_mcp.tools.registry import enabled_tools, instructions
from brave_search_mcp.usecases.contract import Progress, ToolSpec

SERVER_NAME = "brave-search"
# The tool list is fixed when the server is built (settings decide it) and never changes while it runs. An hour:
# a host never lists twice in a working session, yet sees a restarted server's new list within the hour. "public":
# every caller gets the same list (the HTTP token selects nothing).
TOOLS_LIST_TTL_MS = 3_600_000
TOOLS_LIST_CACHE = CacheHint(ttl_ms=TOOLS_LIST_TTL_MS, scope="public")


@dataclass
class AppState:
    """What the lifespan hands every tool call: the one tool boundary (and so the one service and client)."""

    tools: ToolBoundary


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


def _progress_of(ctx: Context[AppState]) -> Progress:
    async def report(progress: float, total: float | None, message: str | None) -> None:
        await ctx.report_progress(progress, total, message)

    return report


def _make_handler(name: str) -> Callable[..., Awaitable[CallToolResult]]:
    async def handler(arguments: dict[str, Any], ctx: Context[AppState]) -> CallToolResult:
        state: AppState = ctx.request_context.lifespan_context
        return _to_result(await state.tools.call(name, arguments, progress=_progress_of(ctx)))

    handler.__name__ = name
    return handler


def _build_tool(spec: ToolSpec[Any, Any], meta: dict[str, Any] | None = None) -> Tool:
    hints = spec.annotations
    tool = Tool.from_function(
        _make_handler(spec.name),
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=ToolAnnotations(
            title=spec.title,
            read_only_hint=hints["read_only"],
            destructive_hint=hints["destructive"],
            idempotent_hint=hints["idempotent"],
            open_world_hint=hints["open_world"],
        ),
        structured_output=False,
        meta=meta,
    )
    tool.fn_metadata.arg_model = _RawArguments
    tool.parameters = compact_schema(spec.input_model)
    return tool


class BraveMCPServer(MCPServer[AppState]):
    """``MCPServer`` whose unknown-tool calls get our error envelope (with a code), not the SDK's plain text."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[AppState, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Every call of a session straight to the boundary, which validates the raw arguments and answers a name
        no tool has with an INVALID_ARGUMENT envelope (the SDK's per-tool wrapper would only pass them through)."""
        if context is None:
            return await super().call_tool(name, arguments, context)
        state: AppState = context.request_context.lifespan_context
        return _to_result(await state.tools.call(name, arguments, progress=_progress_of(context)))


def build_server(
    settings: Settings,
    client: UpstreamClient | None = None,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> MCPServer[AppState]:
    """The stdio-ready server. Pass an open ``client`` (caller owns it) or a ``transport`` for tests."""
    specs = enabled_tools(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        async with open_tools(settings, client=client, transport=transport) as tools:
            yield AppState(tools)

    extensions: list[Any] = []
    metas: dict[str, dict[str, Any] | None] = {}
    if settings.ui:  # imported only with the flag: a server without it pays nothing and lists the same bytes
        from brave_search_mcp import ui

        extensions.append(ui.apps_extension(spec.name for spec in specs))
        metas = {spec.name: ui.tool_meta(spec.name) for spec in specs}
    return BraveMCPServer(
        SERVER_NAME,
        version=__version__,
        instructions=instructions(specs),
        lifespan=lifespan,
        log_level="WARNING",
        tools=[_build_tool(spec, metas.get(spec.name)) for spec in specs],
        extensions=extensions or None,
        cache_hints={"tools/list": TOOLS_LIST_CACHE},
        # Nothing here ever changes, so no subscriptions/listen stream: 2026-07-28 sessions then read
        # listChanged false (as 2025 sessions already do) and an HTTP host holds no stream open for nothing.
        subscriptions=False,
    )
