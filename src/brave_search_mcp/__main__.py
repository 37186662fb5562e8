"""``python -m brave_search_mcp`` behaves like the ``brave-search-mcp`` console script."""

import sys

from brave_search_mcp.faces.cli import main

sys.exit(main())
