"""Run the fake Brave server in the foreground for benches and manual demos.

From the checkout: ``uv run python -m testkit.brave --port 8787``; it accepts the key ``test-key-not-real``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from .brave import VALID_KEY, FakeBrave
from .http_server import FakeBraveServer

logger = logging.getLogger("testkit.brave")


def main(argv: list[str] | None = None) -> int:
    """Parse options, serve until Ctrl-C, return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m testkit.brave", description="Fake Brave Search API server.")
    parser.add_argument("--port", type=int, default=8787, help="port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--rate", type=int, default=1, help="requests per second per key")
    parser.add_argument("--monthly", type=int, default=2000, help="successful requests per month (0 = unlimited)")
    parser.add_argument("--key", action="append", help=f"accepted API key (repeatable; default {VALID_KEY!r})")
    parser.add_argument("--pending-polls", type=int, default=1, help="summarizer polls answered 'pending' first")
    parser.add_argument("--log-level", default="INFO", help="logging level for stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    fake = FakeBrave(
        api_keys=args.key or (VALID_KEY,),
        rate_per_second=args.rate,
        monthly_limit=args.monthly,
        summarizer_pending_polls=args.pending_polls,
    )
    # Ctrl-C stops the server even when started from nohup or a background job, which leave SIGINT ignored
    # (and Python then installs no KeyboardInterrupt handler of its own).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server = FakeBraveServer(fake, port=args.port)
    try:
        with server:
            sys.stderr.write(f"fake brave: serving on {server.base_url} (Ctrl-C to stop)\n")
            sys.stderr.flush()
            threading.Event().wait()
    except KeyboardInterrupt:
        logger.info("fake brave: interrupted, stopping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
