"""The MCP face: the SDK's low-level ``Server`` serving the registry's enabled tools; each call goes to the boundary.

No business logic lives here. It stands on the low-level server's public handlers rather than ``MCPServer``, whose
tool wrapper validates arguments with a model generated from a function signature, answers in plain text and
silently drops unknown fields: here the raw arguments reach the boundary, which answers every rejection — unknown
tool or field, wrong type, bad alias, arguments that are not an object — with an ``INVALID_ARGUMENT`` envelope.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx2
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.caching import CacheHint
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver.resources import Resource
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from mcp.types import Resource as ListedResource
from pydantic import BaseModel

from brave_search_mcp._version import __version__
from brave_search_mcp.compose import UpstreamClient, open_tools
from brave_search_mcp.config import Settings
from brave_search_mcp.observe import Observer
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome
from brave_search_mcp.tools.registry import enabled_tools, instructions
from brave_search_mcp.usecases.contract import Progress, ToolSpec

SERVER_NAME = "brave-search"
# The tool list is fixed when the server is built (settings decide it) and never changes while it runs. An hour:
# a host never lists twice in a working session, yet sees a restarted server's new list within the hour. "public":
# every caller gets the same list (the HTTP token selects nothing).
TOOLS_LIST_TTL_MS = 3_600_000
TOOLS_LIST_CACHE = CacheHint(ttl_ms=TOOLS_LIST_TTL_MS, scope="public")
# Where ``NonObjectArguments`` puts a tools/call's arguments that are not an object, for the handler to pass on.
ARGUMENTS_SET_ASIDE = "brave-search/arguments-not-an-object"


@dataclass
class AppState:
    """What the lifespan hands every tool call: the one tool boundary (and so the one service and client)."""

    tools: ToolBoundary


Context = ServerRequestContext[AppState]


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


def mcp_tool(spec: ToolSpec[Any, Any], meta: dict[str, Any] | None = None) -> Tool:
    """How ``tools/list`` shows one tool: our strict compact schema, the spec's hints, no output schema (the
    envelope travels in ``structuredContent``; a large output schema costs every turn's context)."""
    hints = spec.annotations
    return Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=compact_schema(spec.input_model),
        annotations=ToolAnnotations(
            title=spec.title,
            read_only_hint=hints["read_only"],
            destructive_hint=hints["destructive"],
            idempotent_hint=hints["idempotent"],
            open_world_hint=hints["open_world"],
        ),
        meta=meta,
    )


def _to_result(outcome: ToolOutcome) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=outcome.text)],
        structured_content=outcome.structured,
        is_error=outcome.is_error,
    )


def _progress_of(ctx: Context) -> Progress:
    async def report(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(progress, total, message)  # a no-op unless the caller asked for progress

    return report


class NonObjectArguments:
    """``tools/call`` with ``arguments`` that are not an object: the SDK's params check would answer a bare ``-32602``
    before any handler runs, so they are set aside (``ARGUMENTS_SET_ASIDE``) and the boundary answers
    ``INVALID_ARGUMENT`` as for any other bad argument. A ``Server.middleware`` (public), run before that check."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Pass every other request on untouched."""
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, Mapping):
            return await call_next(ctx)
        arguments = params.get("arguments")
        an_object = arguments is None or isinstance(arguments, Mapping)
        if an_object and ARGUMENTS_SET_ASIDE not in params:
            return await call_next(ctx)
        rest = {k: v for k, v in params.items() if k not in ("arguments", ARGUMENTS_SET_ASIDE)}
        if an_object:  # a client wrote the place itself: only this middleware may, so it is dropped
            return await call_next(replace(ctx, params={**rest, "arguments": arguments}))
        return await call_next(replace(ctx, params={**rest, ARGUMENTS_SET_ASIDE: arguments}))


async def _call_tool(ctx: Context, params: CallToolRequestParams) -> CallToolResult:
    """Every call straight to the boundary with its raw arguments: it validates them and answers a name no enabled
    tool has with an INVALID_ARGUMENT envelope."""
    raw = ctx.params or {}
    arguments: object = raw.get(ARGUMENTS_SET_ASIDE, params.arguments)
    return _to_result(await ctx.lifespan_context.tools.call(params.name, arguments, progress=_progress_of(ctx)))


@dataclass(frozen=True)
class _Catalogue:
    """What the server lists: the enabled tools and the UI widgets (none without ``--ui``)."""

    tools: list[Tool]
    widgets: dict[str, Resource]

    async def list_tools(self, _: Context, __: PaginatedRequestParams | None) -> ListToolsResult:
        """The enabled tools, the same every time (one page)."""
        return ListToolsResult(tools=self.tools)

    async def list_resources(self, _: Context, __: PaginatedRequestParams | None) -> ListResourcesResult:
        """The widgets some enabled tool links to."""
        return ListResourcesResult(
            resources=[
                ListedResource(
                    uri=w.uri,
                    name=w.name or "",
                    title=w.title,
                    description=w.description,
                    mime_type=w.mime_type,
                    meta=w.meta,
                )
                for w in self.widgets.values()
            ]
        )

    async def read_resource(self, _: Context, params: ReadResourceRequestParams) -> ReadResourceResult:
        """One widget's HTML; an unknown URI is invalid params, naming it."""
        widget = self.widgets.get(params.uri)
        if widget is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {params.uri}", data={"uri": params.uri})
        text = await widget.read()
        assert isinstance(text, str)  # every widget is one HTML document
        return ReadResourceResult(
            contents=[TextResourceContents(uri=params.uri, text=text, mime_type=widget.mime_type, meta=widget.meta)]
        )


async def _no_templates(_: Context, __: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(resource_templates=[])


async def _no_prompts(_: Context, __: PaginatedRequestParams | None) -> ListPromptsResult:
    return ListPromptsResult(prompts=[])


async def _unknown_prompt(_: Context, params: GetPromptRequestParams) -> GetPromptResult:
    raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name}")


@dataclass(frozen=True)
class _Widgets:
    """What ``--ui`` adds: the Apps extension's capability entry, the widget resources and each tool's link."""

    extensions: dict[str, dict[str, Any]]
    resources: dict[str, Resource]
    metas: dict[str, dict[str, Any] | None]


def _widgets(names: list[str]) -> _Widgets:
    """The UI for these tools; the ``ui`` package is imported only here, so a server without it pays nothing."""
    from brave_search_mcp import ui

    apps = ui.apps_extension(names)
    return _Widgets(
        {apps.identifier: apps.settings()},
        {binding.resource.uri: binding.resource for binding in apps.resources()},
        {name: ui.tool_meta(name) for name in names},
    )


def build_server(
    settings: Settings,
    client: UpstreamClient | None = None,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    observer: Observer | None = None,
) -> Server[AppState]:
    """The server every transport serves. Pass an open ``client`` (caller owns it) or a ``transport`` for tests;
    ``observer`` is the face's (metrics, traces)."""
    specs = enabled_tools(settings)

    @asynccontextmanager
    async def lifespan(_: Server[AppState]) -> AsyncIterator[AppState]:
        async with open_tools(settings, client=client, transport=transport, observer=observer) as tools:
            if settings.transport == "http":
                tools.ports.client.open_pool()  # a replica takes bursts from its first call
            yield AppState(tools)

    widgets = _widgets([spec.name for spec in specs]) if settings.ui else _Widgets({}, {}, {})
    catalogue = _Catalogue([mcp_tool(spec, widgets.metas.get(spec.name)) for spec in specs], widgets.resources)
    schemas = {tool.name: tool.input_schema for tool in catalogue.tools}
    server = Server[AppState](
        SERVER_NAME,
        version=__version__,
        instructions=instructions(specs),
        lifespan=lifespan,
        cache_hints={"tools/list": TOOLS_LIST_CACHE},
        get_tool_input_schema=schemas.get,  # 2026 HTTP's Mcp-Param header check reads schemas without listing
        on_list_tools=catalogue.list_tools,
        on_call_tool=_call_tool,
        # Resources and prompts are listed (empty but for the widgets) so capabilities stay what hosts saw before.
        on_list_resources=catalogue.list_resources,
        on_read_resource=catalogue.read_resource,
        on_list_resource_templates=_no_templates,
        on_list_prompts=_no_prompts,
        on_get_prompt=_unknown_prompt,
        # No on_subscriptions_listen: nothing here ever changes, so 2026-07-28 sessions read listChanged false (as
        # 2025 sessions already do) and an HTTP host holds no stream open for nothing.
    )
    server.extensions.update(widgets.extensions)  # advertised under capabilities.extensions (2026 sessions only)
    server.middleware.append(NonObjectArguments())
    return server
