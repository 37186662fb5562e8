"""The one place the bench reaches into the package's hot path, so a reshape of src/ is one edit here.

Micro-benchmarks and the per-call profile import these names only from this module.
"""

from __future__ import annotations

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.brave.params import PreparedSearch, prepare_search
from brave_search_mcp.brave.results import ParsedAnswer, parse_answer
from brave_search_mcp.config import Settings
from brave_search_mcp.faces.mcp_server import _to_result as to_call_result
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.models.search import SearchEnvelope, SearchMeta
from brave_search_mcp.render.compact import fit_to_limits, summary_line
from brave_search_mcp.state.response_cache import make_key
from brave_search_mcp.tools.boundary import ToolBoundary, ToolOutcome

__all__ = [
    "BraveClient",
    "ParsedAnswer",
    "PreparedSearch",
    "SearchEnvelope",
    "SearchMeta",
    "Settings",
    "ToolBoundary",
    "ToolOutcome",
    "WebSearchArgs",
    "fit_to_limits",
    "make_key",
    "parse_answer",
    "prepare_search",
    "summary_line",
    "to_call_result",
]
