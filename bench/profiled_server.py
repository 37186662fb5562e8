"""``python -m bench.profiled_server OUT``: the real stdio server under cProfile, imports excluded.

Imports everything the server needs first, then enables the profiler and serves until stdin
closes; the stats land in OUT (pstats format). So the profile holds start-up and the calls the
bench sends, with the SDK's dispatch, pydantic and the pipe included, not the import of modules.
"""

from __future__ import annotations

import cProfile
import sys


def serve_profiled(out: str) -> int:
    """Serve MCP on stdio with the profiler on; write the stats to ``out`` when stdin closes."""
    import brave_search_mcp.faces.mcp_server  # noqa: F401  (what ``serve`` imports lazily: keep it out of the profile)
    from brave_search_mcp.faces.cli import main

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        return main(["serve"])
    finally:
        profiler.disable()
        profiler.dump_stats(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python -m bench.profiled_server OUT\n")
        sys.exit(2)
    sys.exit(serve_profiled(sys.argv[1]))
