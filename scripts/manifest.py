"""manifest.json (MCPB) generated from the registry, so the bundle can never list tools the server lacks.

``python scripts/manifest.py`` rewrites the repository's manifest.json; ``--check`` exits 1 (printing
what differs) when the committed file is not what the registry and the package version generate.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from brave_search_mcp._version import __version__
from brave_search_mcp.tools.registry import all_tools

MANIFEST = Path(__file__).resolve().parent.parent / "manifest.json"
HOME = "https://github.com/brave-search-mcp/brave-search-mcp"


def build() -> dict[str, Any]:
    """The whole manifest: fixed package facts, the package version and the registry's tools."""
    return {
        "$schema": "https://raw.githubusercontent.com/anthropics/mcpb/main/schemas/mcpb-manifest-v0.3.schema.json",
        "manifest_version": "0.3",
        "name": "brave-search-mcp",
        "display_name": "Brave Search",
        "version": __version__,
        "description": (
            "Reliable, cheap, context-efficient Brave Search for coding agents: web, news, image and video "
            "search, grounding context, places and cited answers."
        ),
        "long_description": (
            "A stdio MCP server (Python) over the Brave Search API, with a free SearXNG fallback. Results come as "
            "compact numbered text plus a versioned JSON envelope; errors come back as tool results with a code "
            "and a retryable flag. It throttles to your plan's rate, retries what can succeed later, and caches "
            "identical requests. Needs a Brave Search API key."
        ),
        "author": {"name": "brave-search-mcp developers"},
        "homepage": HOME,
        "repository": {"type": "git", "url": HOME},
        "support": f"{HOME}/issues",
        "license": "MIT",
        "keywords": ["brave", "search", "web search", "mcp", "summarizer", "agents"],
        "server": {
            "type": "python",
            "entry_point": "server/main.py",
            "mcp_config": {
                "command": "python3",
                "args": ["-I", "${__dirname}/server/main.py"],
                "env": {"BRAVE_API_KEY": "${user_config.brave_api_key}"},
                "platform_overrides": {"win32": {"command": "python"}},
            },
        },
        "tools": [{"name": spec.name, "description": spec.description} for spec in all_tools()],
        "tools_generated": False,
        "user_config": {
            "brave_api_key": {
                "type": "string",
                "title": "Brave Search API key",
                "description": (
                    "Your Brave Search API subscription token (from the Brave Search API dashboard). Stored by the "
                    "host as a secret."
                ),
                "sensitive": True,
                "required": True,
            }
        },
        "privacy_policies": ["https://search.brave.com/help/privacy-policy"],
        "compatibility": {"platforms": ["darwin", "linux", "win32"], "runtimes": {"python": ">=3.11"}},
    }


def render() -> str:
    """The manifest as it is committed: two-space JSON, non-ASCII kept, a final newline."""
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write manifest.json, or with --check say whether the committed one is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if manifest.json is not what would be written")
    args = parser.parse_args(argv)
    wanted = render()
    if args.check:
        current = MANIFEST.read_text(encoding="utf-8") if MANIFEST.exists() else ""
        if current != wanted:
            sys.stderr.write("manifest.json is stale: run `uv run python scripts/manifest.py`\n")
            return 1
        return 0
    MANIFEST.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
