"""Brave Search for coding agents: an MCP server, a CLI and an async library on one core."""

from brave_search_mcp._version import __version__
from brave_search_mcp.config import ConfigError, Settings
from brave_search_mcp.faces.library import BraveSearch
from brave_search_mcp.models.errors import BraveSearchError, ErrorCode, WarningCode
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.models.summary import SummaryEnvelope

__all__ = [
    "BraveSearch",
    "BraveSearchError",
    "ConfigError",
    "ErrorCode",
    "SearchEnvelope",
    "Settings",
    "SummaryEnvelope",
    "WarningCode",
    "__version__",
]
