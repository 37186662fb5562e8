"""Brave Search for coding agents: an MCP server, a CLI and an async library on one core."""

from ._version import __version__

__all__ = ["__version__"]
