"""Start the real HTTP transport against a fake Brave URL, for subprocess tests: ``python -m testkit.http_launcher``.

It prints ``listening <port>`` on stdout once the server accepts connections (stdout is not an MCP wire here),
then serves until SIGINT/SIGTERM. The bearer token, if any, comes from ``BRAVE_SEARCH_HTTP_TOKEN`` so it never
appears in a process listing. It serves ``/metrics`` as the real server does, and sends traces when
``OTEL_EXPORTER_OTLP_ENDPOINT`` names a receiver.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import anyio

from brave_search_mcp.faces.http import TOKEN_VARIABLE, HttpOptions, serve_http
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.faces.metrics import http_observer
from testkit.settings import make_settings


def main(argv: list[str] | None = None) -> int:
    """Parse options, serve until a signal, return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m testkit.http_launcher", description=__doc__)
    parser.add_argument("--brave-url", required=True, help="base URL of a fake Brave server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = any free port")
    parser.add_argument("--allowed-host", action="append", default=[], help="extra allowed Host (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        options = HttpOptions(
            host=args.host,
            port=args.port,
            token=os.environ.get(TOKEN_VARIABLE) or None,
            allowed_hosts=tuple(args.allowed_host),
        )
    except ValueError as exc:
        sys.stderr.write(f"http_launcher: {exc}\n")
        return 2
    settings = make_settings(base_url=args.brave_url, otel_endpoint=os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
    observer = http_observer(settings)
    server = build_server(settings, observer=observer)

    def ready(port: int) -> None:
        sys.stdout.write(f"listening {port}\n")
        sys.stdout.flush()

    try:
        anyio.run(lambda: serve_http(server, options, ready=ready, metrics=observer))
    finally:
        observer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
