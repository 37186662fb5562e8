"""Entry point of the MCPB bundle: serve stdio from the bundle's own ``lib/`` folder, offline.

``scripts/pack-mcpb.sh`` copies this file to ``server/main.py`` in the bundle, next to ``lib/`` (the
package and its dependencies, installed for one platform and Python version). The host runs it with
``python3 -I``, so neither PYTHONPATH nor the user's site-packages can shadow what the bundle ships.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    """Put the bundled lib/ first on the import path, then run the package's command line (stdio server)."""
    lib = Path(__file__).resolve().parent.parent / "lib"
    if not lib.is_dir():
        print(f"brave-search-mcp bundle: {lib} is missing; repack the bundle", file=sys.stderr)
        return 2
    sys.path.insert(0, str(lib))
    from brave_search_mcp.faces.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
