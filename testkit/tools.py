"""The tool boundary over a test client, as the composition root builds it, for tests that call tools by name."""

from __future__ import annotations

from typing import Any

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.compose import build_tools
from brave_search_mcp.config import Settings
from brave_search_mcp.tools.boundary import ToolBoundary


def tool_boundary(settings: Settings, client: BraveClient, **options: Any) -> ToolBoundary:
    """The enabled tools over ``client`` (``clock``, ``sleep`` and ``others`` may be passed through)."""
    return build_tools(settings, client, **options)
