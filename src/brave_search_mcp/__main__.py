"""``python -m brave_search_mcp`` behaves like the ``brave-search-mcp`` console script."""

import sys

from .cli import main

sys.exit(main())
