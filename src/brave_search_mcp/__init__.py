"""Brave Search for coding agents: an MCP server, a CLI and an async library on one core."""

from ._version import __version__
from .config import ConfigError, Settings
from .errors import BraveSearchError, ErrorCode, WarningCode
from .library import BraveSearch
from .models import SearchEnvelope, SummaryEnvelope

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
