"""Run the fake SearXNG in the foreground for demos and benches.

From the checkout: ``uv run python -m testkit.searxng --port 8888`` (no key: SearXNG has none).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from .fake import FakeSearxng
from .http_server import FakeSearxngServer

logger = logging.getLogger("testkit.searxng")


def main(argv: list[str] | None = None) -> int:
    """Parse options, serve until Ctrl-C, return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m testkit.searxng", description="Fake SearXNG JSON API server.")
    parser.add_argument("--port", type=int, default=8888, help="port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--json-disabled", action="store_true", help="answer 403 as an instance without JSON output")
    parser.add_argument("--pages", type=int, default=3, help="pages that have results (0 = no results)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--unresponsive", action="append", default=[], help="engine reported as timed out")
    parser.add_argument("--limiter", action="store_true", help="act as an instance with server.limiter: true")
    parser.add_argument(
        "--failing", action="append", default=[], metavar="CATEGORY[:REASON]", help="a category whose engines fail"
    )
    parser.add_argument("--repeat-first-page", action="store_true", help="every page repeats page 1")
    parser.add_argument("--hang", action="store_true", help="take requests and never answer them")
    parser.add_argument("--log-level", default="INFO", help="logging level for stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    fake = FakeSearxng(pages=args.pages)
    fake.json_enabled = not args.json_disabled
    fake.delay_seconds = args.delay
    fake.unresponsive = [(name, "timeout") for name in args.unresponsive]
    if args.limiter:
        fake.enable_limiter()
    fake.failing = {category: reason or "CAPTCHA" for category, _, reason in (f.partition(":") for f in args.failing)}
    fake.repeat_first_page = args.repeat_first_page
    fake.hanging = args.hang
    # Ctrl-C stops the server even when started from nohup or a background job, which leave SIGINT ignored
    # (and Python then installs no KeyboardInterrupt handler of its own).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with FakeSearxngServer(fake, port=args.port) as server:
            sys.stderr.write(f"fake searxng: serving on {server.base_url} (Ctrl-C to stop)\n")
            sys.stderr.flush()
            threading.Event().wait()
    except KeyboardInterrupt:
        logger.info("fake searxng: interrupted, stopping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
