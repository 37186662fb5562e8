"""The bench commands' one logging set-up: progress on stderr, the fake's and HTTP client's access lines quiet."""

from __future__ import annotations

import logging
import sys


def configure_logging(verbose: bool = False, prog: str = "bench") -> None:
    """Progress on stderr; the fake's per-request access log stays quiet."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.DEBUG if verbose else logging.INFO, format=f"%(asctime)s {prog}: %(message)s"
    )
    for noisy in ("testkit.brave", "httpx2", "httpcore2"):  # per-request INFO lines from the fake and the HTTP client
        logging.getLogger(noisy).setLevel(logging.WARNING)
