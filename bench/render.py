"""read_url on an app shell, as an agent feels it: the first rendered read (the browser starts) and the next ones.

Each run starts our stdio server on its shipped defaults (the browser it finds on this machine, the distribution's
Chromium in CI), then reads through the ``read_url`` tool from a real local site on 127.0.0.2 (opted in): one
static page first (the reader loaded, no browser), then three different app shells, each drawn by a 200 KB
script bundle that fetches its text as JSON. Every read is a cache miss. The wall of each call runs from the
request written to the answer read.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.sites import FakeSite
from testkit.stdio import RpcSession

from .servers import ours, started

logger = logging.getLogger(__name__)

NOT_BRAVE = "http://127.0.0.1:9"  # read_url needs no Brave
SHELLS = 3  # rendered reads per run: the first starts the browser
READ_SECONDS = 60.0  # the longest one read may take here (the server's own read timeout is shorter)
SHELL = """<!doctype html><html><head><title>App</title><script src="/bundle.js"></script></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div></body></html>"""
BUNDLE = """const padding = "%s";
window.addEventListener("DOMContentLoaded", () => fetch("/api/" + location.pathname.slice(1)).then(r => r.json())
  .then(doc => { document.getElementById("root").innerHTML = "<article><h1>" + doc.title + "</h1>" +
    doc.paragraphs.map(p => "<p>" + p + "</p>").join("") + "<pre><code class='language-js'>" + doc.code +
    "</code></pre></article>"; }));"""
STATIC = "<html><body><article><h1>Static</h1>" + "<p>Served as HTML, read as HTML, no browser.</p>" * 20


@dataclass
class RenderResult:
    """Walls of each run's reads, and whether every shell came back rendered."""

    static: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    second: list[float] = field(default_factory=list)
    third: list[float] = field(default_factory=list)
    rendered: bool = True
    browser: str | None = None
    note: str | None = None  # why nothing was rendered (no browser on this machine)


def _doc(n: int) -> str:
    paragraphs = [f"Shell {n}, paragraph {i}: text that only the script puts on the page." for i in range(12)]
    return json.dumps({"title": f"Shell {n}", "paragraphs": paragraphs, "code": f"render({n});"})


async def measure_render(runs: int, home: Path) -> RenderResult:
    """``runs`` fresh servers, each reading a static page and then ``SHELLS`` app shells."""
    found = RenderResult()
    with FakeSite(host="127.0.0.2") as site:
        site.page("/static", STATIC)
        site.page("/bundle.js", BUNDLE % ("x" * 200_000), content_type="text/javascript")
        for n in range(runs * SHELLS):
            site.page(f"/shell{n}", SHELL)
            site.page(f"/api/shell{n}", _doc(n), content_type="application/json")
        for run in range(runs):
            env = {"BRAVE_SEARCH_READ_ALLOWED_HOSTS": "127.0.0.2"}
            async with started(ours(NOT_BRAVE, home / f"run{run}", **env)) as session:
                wall, _ = await _read(session, site.url("/static"))
                found.static.append(wall)
                for slot, n in zip((found.first, found.second, found.third), range(SHELLS), strict=True):
                    wall, envelope = await _read(session, site.url(f"/shell{run * SHELLS + n}"))
                    slot.append(wall)
                    if not envelope.get("rendered"):
                        found.rendered = False
                        warnings = envelope.get("warnings") or [{"message": "no warning"}]
                        found.note = warnings[0]["message"]
                status, _ = await session.call_tool("brave_web_search_status", {})
                found.browser = status["structuredContent"]["rendering"].get("browser")
    return found


async def _read(session: RpcSession, url: str) -> tuple[float, dict[str, Any]]:
    """One read_url call: its wall (request written to answer read) and its envelope."""
    result, wall = await session.call_tool("read_url", {"url": url}, timeout=READ_SECONDS)
    envelope: dict[str, Any] = result.get("structuredContent") or {}
    return wall, envelope
