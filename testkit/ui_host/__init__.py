"""A minimal MCP Apps host for widget tests and screenshots: fixture envelopes, a demo server, a browser harness.

The host page (``host.html``) speaks the host side of the postMessage bridge; :class:`WidgetHost` wires it to a
real in-memory MCP client, so a widget's ``tools/call`` reaches a real server. Remote image requests never leave
the machine: thumbnails from Brave's proxy are answered with generated PNGs, everything else is refused and
recorded, so a test can prove what the widget tried to load.
"""

from __future__ import annotations

import base64
import hashlib
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from playwright.async_api import ConsoleMessage, Page, Route

from brave_search_mcp.models.envelopes import Result, Section
from brave_search_mcp.models.search import SearchEnvelope, SearchMeta
from brave_search_mcp.ui import THUMBNAIL_ORIGIN, apps_extension, tool_meta

HOST_PAGE = Path(__file__).with_name("host.html")
CHROMIUM_ARGS = (
    # no host name resolves, so nothing reaches the network even if a request escaped the route
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # keep the sandboxed widget frame in the page's process: as its own process, its first requests could
    # start before Playwright's request interception reached it (seen as 1 run in 3 with 20 thumbnails)
    "--disable-features=IsolateSandboxedIframes",
)
CSP_META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')


def csp_policy(html: str, img_origins: tuple[str, ...] = ()) -> str:
    """The strict CSP a widget must declare: only its own inline script and style (by hash), no connections."""

    def hashes(tag: str) -> str:
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.S)
        return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in bodies)

    images = " ".join(("data:", *img_origins))
    return (
        f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; img-src {images}; "
        "connect-src 'none'; base-uri 'none'; form-action 'none'"
    )


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, so thumbnails render offline without shipping binary fixtures."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def _meta(query: str, search_type: str, returned: int, offset: int, has_more: bool) -> SearchMeta:
    return SearchMeta.model_validate(
        {
            "query": query,
            "search_type": search_type,
            "requested": returned,
            "returned": returned,
            "offset": offset,
            "has_more": has_more,
            "trace_id": "t-ui",
            "server_version": "0.0.0",
        }
    )


def web_envelope(query: str, offset: int = 0) -> dict[str, Any]:
    """Three web results per page; page N's titles say which page they came from, so paging is visible."""
    results = [
        Result(
            title=f"{query.title()} guide part {offset * 3 + i} (page {offset + 1})",
            url=f"https://docs{i}.example.org/{query.replace(' ', '-')}/p{offset}",
            snippet=f"How to use {query}: step {i} explains the options & trade-offs.",
            age=f"{i + 1} days ago",
            site=f"docs{i}.example.org",
        )
        for i in range(1, 4)
    ]
    env = SearchEnvelope(
        summary=f'3 web results for "{query}" (offset {offset}, more available).',
        sections=[Section(key="web", label="Web results", results=results)],
        meta=_meta(query, "web", 3, offset, has_more=offset < 9),
    )
    return env.dump()


def images_envelope(query: str) -> dict[str, Any]:
    """Four image results whose thumbnails come from Brave's proxy and full images from the origin sites."""
    results = [
        Result(
            title=f"{query} picture {i}",
            url=f"https://photos{i}.example.com/gallery/{i}",
            site=f"photos{i}.example.com",
            thumbnail=f"{THUMBNAIL_ORIGIN}/thumb/{i}.jpg",
            image_url=f"https://cdn{i}.example.net/full/{i}.jpg",
            width=1600,
            height=1200,
        )
        for i in range(1, 5)
    ]
    env = SearchEnvelope(
        summary=f'4 image results for "{query}".',
        sections=[Section(key="images", label="Image results", results=results)],
        meta=_meta(query, "images", 4, 0, has_more=False),
    )
    return env.dump()


def places_envelope(query: str) -> dict[str, Any]:
    """Three places (open, closed, unknown) with coordinates, as ``brave_local_search`` returns them."""
    rows = [
        ("Blue Bottle Coffee", True, "Tue 07:00–18:00", 37.7825, -122.4095, "4.5/5 (1250 reviews)", "$$"),
        ("Sightglass Coffee", False, "Opens Wed 08:00", 37.7770, -122.4084, "4.3/5 (980 reviews)", "$"),
        ("Ritual Coffee Roasters", None, None, 37.7564, -122.4213, None, None),
    ]
    results = [
        Result(
            title=name,
            url=f"https://{name.split()[0].lower()}.example.com",
            address=f"{10 + i} Mint St, San Francisco, CA 94103",
            phone=f"+1 415-555-01{i:02d}",
            rating=rating,
            open_now=open_now,
            hours=hours,
            latitude=lat,
            longitude=lon,
            price_range=price,
            distance=f"{0.3 * (i + 1):.1f} km",
            categories=["Coffee & Tea"],
        ).dump()
        for i, (name, open_now, hours, lat, lon, rating, price) in enumerate(rows)
    ]
    return {
        "api_version": "v1",
        "summary": f'3 places for "{query}".',
        "sections": [{"key": "places", "label": "Places", "section_limit_reached": False, "results": results}],
        "meta": {"query": query, "returned": 3, "offset": 0, "has_more": False, "provider": "brave"},
        "warnings": [],
    }


def _result(envelope: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=envelope["summary"])], structured_content=envelope)


def demo_server() -> MCPServer[Any]:
    """A small server with the two UI tools (fixture data) and the widget resources, as ``--ui`` would serve them."""
    server: MCPServer[Any] = MCPServer("brave-search-ui-demo", extensions=[apps_extension()], log_level="WARNING")

    def brave_web_search(query: str, search_type: str = "web", offset: int = 0) -> CallToolResult:
        """Fixture web/image search."""
        if query == "fail":
            envelope = {
                "api_version": "v1",
                "error": {"code": "RATE_LIMITED", "message": "Slow down.", "retryable": True},
            }
            return CallToolResult(
                is_error=True, content=[TextContent(type="text", text="Slow down.")], structured_content=envelope
            )
        return _result(images_envelope(query) if search_type == "images" else web_envelope(query, offset))

    def brave_local_search(query: str) -> CallToolResult:
        """Fixture place search."""
        return _result(places_envelope(query))

    server.add_tool(brave_web_search, meta=tool_meta("brave_web_search"))
    server.add_tool(brave_local_search, meta=tool_meta("brave_local_search"))
    return server


def wire(model: Any) -> dict[str, Any]:
    """An SDK model as the JSON a host sees (camelCase, no None)."""
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


@dataclass
class WidgetHost:
    """Loads one widget into the host page of a Playwright ``page``, with server tools proxied to ``client``."""

    page: Page
    client: Client
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    async def _route(self, route: Route) -> None:
        url = route.request.url
        if url.startswith("file:"):
            await route.continue_()
            return
        self.requests.append(url)
        if url.startswith(THUMBNAIL_ORIGIN + "/"):
            seed = hashlib.sha256(url.encode()).digest()
            await route.fulfill(status=200, content_type="image/png", body=png(96, 72, (seed[0], seed[1], seed[2])))
        else:
            await route.abort()

    async def _call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        self.tool_calls.append(params)
        return wire(await self.client.call_tool(params["name"], params.get("arguments") or {}))

    async def open(self, tool: str, args: dict[str, Any], theme: str = "light") -> None:
        """Call ``tool`` on the server, then show the widget its ``_meta`` links to, as an Apps host would."""
        listed = {t.name: t for t in (await self.client.list_tools()).tools}
        uri = (listed[tool].meta or {})["ui"]["resourceUri"]
        (content,) = (await self.client.read_resource(uri)).contents
        result = wire(await self.client.call_tool(tool, args))
        await self.show(getattr(content, "text", ""), wire(content).get("_meta", {}), args, result, theme)

    async def show(
        self, html: str, resource_meta: dict[str, Any], args: dict[str, Any], result: dict[str, Any], theme: str
    ) -> None:
        """Load ``html`` in the host page and hand it ``args`` and ``result``; its tool calls go to ``client``."""

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                self.errors.append(message.text)

        self.page.on("console", on_console)
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url} ({r.failure})"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        await self.page.route("**/*", self._route)
        await self.page.expose_function("callServerTool", self._call_tool)
        await self.page.goto(HOST_PAGE.as_uri())
        await self.page.evaluate(
            "([h, m, i, r, t]) => startHost(h, m, i, r, t)", [html, resource_meta, args, result, theme]
        )

    async def log(self) -> list[dict[str, Any]]:
        """Every message the widget sent to the host, in order."""
        messages: list[dict[str, Any]] = await self.page.evaluate("log")
        return messages
