"""The one tool registry: the tuple of every use case's spec, and the ones the settings turn on.

Adding a tool is its use-case slice (``usecases/<tool>.py`` exporting ``SPEC``), its envelope model, its
fake route and its tests, plus one line here. Every face — the MCP server, the CLI and skill commands,
the library's check, help, status, the server's instructions and ``manifest.json`` — reads this tuple.
"""

from __future__ import annotations

from typing import Any

from brave_search_mcp.config import ConfigError, Settings
from brave_search_mcp.config_sources import OFFICIAL_TOOLS, OFFICIAL_VARIABLES
from brave_search_mcp.tools import help, status
from brave_search_mcp.usecases import answer, llm_context, local_search, read_url, summarize, web_search
from brave_search_mcp.usecases.contract import ToolSpec

AnySpec = ToolSpec[Any, Any]


def all_tools() -> tuple[AnySpec, ...]:
    """Every tool this server knows, in the order ``tools/list`` shows them."""
    return (
        web_search.SPEC,
        summarize.SPEC,
        llm_context.SPEC,
        local_search.SPEC,
        answer.SPEC,
        read_url.SPEC,
        help.SPEC,
        status.SPEC,
    )


def enabled_tools(settings: Settings) -> tuple[AnySpec, ...]:
    """The tools the settings turn on, in registry order; unknown names fail naming their variable."""
    tools = all_tools()
    known = [tool.name for tool in tools]
    for setting in ("enabled_tools", "disabled_tools"):
        unknown = [name for name in getattr(settings, setting) or () if name not in known]
        if unknown:
            variable = settings.variable_set(setting)
            if variable in OFFICIAL_VARIABLES:  # the official server's variable takes its names (and ours)
                raise ConfigError(
                    f"{variable} names unknown tools {unknown}; it takes the official server's tool names "
                    f"({', '.join(OFFICIAL_TOOLS)}) or ours ({', '.join(known)})"
                )
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


def instructions(tools: tuple[AnySpec, ...]) -> str:
    """The server's instructions to the model, naming every enabled tool and when to use it."""
    lines = "; ".join(f"{spec.name}: {spec.guide}" for spec in tools)
    return (
        f"Brave Search tools. {lines}. Failures return isError with error.code and error.retryable: "
        "follow the advice in the text."
    )
