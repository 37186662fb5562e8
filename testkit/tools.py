"""The tool boundary over a test client, as the composition root builds it, for tests that call tools by name."""

from __future__ import annotations

from typing import Any

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.config import Settings
from brave_search_mcp.tools.boundary import ToolBoundary
from brave_search_mcp.tools.registry import enabled_tools
from brave_search_mcp.usecases.service import SearchService


def tool_boundary(settings: Settings, client: BraveClient, **service_options: Any) -> ToolBoundary:
    """The enabled tools over one service on ``client`` (clock and sleep may be passed through)."""
    return ToolBoundary(SearchService(settings, client, **service_options), enabled_tools(settings))
