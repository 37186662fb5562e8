"""The widgets in a real headless Chromium inside a minimal MCP Apps host, wired to a real in-memory MCP server.

Needs the system ``chromium`` (``apt-get install -y chromium``; .ci/run installs it). Playwright drives it through
``executable_path``; no Playwright browser download is involved.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from playwright.async_api import Browser, FrameLocator, async_playwright, expect

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.faces.mcp_server import build_server
from brave_search_mcp.ui import THUMBNAIL_ORIGIN, widgets
from testkit.brave.brave import FakeBrave
from testkit.settings import make_settings
from testkit.ui_host import CHROMIUM_ARGS, WidgetHost, demo_server, wire

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(CHROMIUM is None, reason="needs the system chromium: apt-get install -y chromium"),
]
APPS_CLIENT = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
DARK_BG, LIGHT_BG = "rgb(30, 31, 34)", "rgb(255, 255, 255)"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def host(browser: Browser) -> AsyncIterator[WidgetHost]:
    async with Client(demo_server(), mode="legacy", extensions=[APPS_CLIENT]) as client:
        page = await browser.new_page()
        yield WidgetHost(page, client)
        await page.close()


def view(host: WidgetHost) -> FrameLocator:
    return host.page.frame_locator("#view")


async def background(host: WidgetHost) -> str:
    color: str = await view(host).locator("body").evaluate("b => getComputedStyle(b).backgroundColor")
    return color


async def sent(host: WidgetHost, method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in await host.log() if m.get("method") == method]


async def wait_for(host: WidgetHost, method: str, count: int) -> None:
    await host.page.wait_for_function(
        "([m, n]) => log.filter(x => x.method === m).length >= n", arg=[method, count], timeout=5000
    )


async def test_web_rows_selection_and_paging(host: WidgetHost) -> None:
    await host.open("brave_web_search", {"query": "python packaging", "country": "DE"}, theme="dark")
    frame = view(host)
    rows = frame.locator("li.row")
    await expect(rows).to_have_count(3)
    await expect(rows.nth(0)).to_contain_text("Python Packaging guide part 1 (page 1)")
    await expect(rows.nth(0).locator(".site")).to_have_text("docs1.example.org · 2 days ago")
    await expect(rows.nth(1).locator(".snip")).to_have_text(
        "How to use python packaging: step 2 explains the options & trade-offs."
    )
    await expect(frame.locator("#status")).to_have_text(
        '3 web results for "python packaging" (offset 0, more available).'
    )
    assert await background(host) == DARK_BG
    await host.page.evaluate("setTheme('light')")
    await expect(frame.locator("body")).to_have_css("background-color", LIGHT_BG)

    # select two results, deselect one: the model's context follows each change
    boxes = frame.get_by_role("checkbox")
    await boxes.nth(0).check()
    await boxes.nth(2).check()
    await boxes.nth(0).uncheck()
    await wait_for(host, "ui/update-model-context", 3)
    updates = await sent(host, "ui/update-model-context")
    assert [len(u["structuredContent"]["selected"]) for u in updates] == [1, 2, 1]
    assert updates[-1]["structuredContent"] == {
        "query": "python packaging",
        "selected": [
            {
                "title": "Python Packaging guide part 3 (page 1)",
                "url": "https://docs3.example.org/python-packaging/p0",
                "site": "docs3.example.org",
            }
        ],
    }
    assert "selected 1 result(s)" in updates[-1]["content"][0]["text"]
    await expect(frame.locator("#picked")).to_have_text("1 selected")

    # next page: the host is asked to run the same search (same arguments) one offset further
    prev, nxt = frame.get_by_role("button", name="‹ Previous"), frame.get_by_role("button", name="Next ›")
    await expect(prev).to_be_disabled()
    await nxt.click()
    await expect(rows.nth(0)).to_contain_text("(page 2)")
    assert await sent(host, "tools/call") == [
        {
            "name": "brave_web_search",
            "arguments": {"query": "python packaging", "country": "DE", "offset": 1, "search_type": "web"},
        }
    ]
    assert host.tool_calls == await sent(host, "tools/call")
    await expect(prev).to_be_enabled()

    # the selection survives paging; adding a page-2 result and sending asks the model with both
    await frame.get_by_role("checkbox", name="Select Python Packaging guide part 4 (page 2)").check()
    await frame.get_by_role("button", name="Send selection to chat").click()
    await wait_for(host, "ui/message", 1)
    (message,) = await sent(host, "ui/message")
    assert message == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": 'Use these 2 selected result(s) for "python packaging":\n'
                "1. Python Packaging guide part 3 (page 1) — https://docs3.example.org/python-packaging/p0\n"
                "2. Python Packaging guide part 4 (page 2) — https://docs1.example.org/python-packaging/p1",
            }
        ],
    }
    await prev.click()
    await expect(rows.nth(0)).to_contain_text("(page 1)")
    await expect(frame.get_by_role("checkbox").nth(2)).to_be_checked()

    methods = [m.get("method") for m in await host.log()]
    assert methods[:2] == ["ui/initialize", "ui/notifications/initialized"]
    assert "ui/notifications/size-changed" in methods
    assert host.requests == [], "the web view loads nothing remote"
    assert host.errors == []


async def test_images_grid_shows_thumbnails_and_opens_full_image_only_on_click(host: WidgetHost) -> None:
    await host.open("brave_web_search", {"query": "aurora", "search_type": "images"}, theme="light")
    frame = view(host)
    thumbs = frame.locator(".tile img")
    await expect(thumbs).to_have_count(4)
    for i in range(4):
        await expect(thumbs.nth(i)).to_have_js_property("complete", True)
        assert await thumbs.nth(i).evaluate("img => img.naturalWidth") == 96, "thumbnail decoded"
    await expect(frame.locator(".tile").nth(1)).to_contain_text("photos2.example.com")
    await expect(frame.get_by_role("button", name="Next ›")).to_be_hidden()
    assert sorted(host.requests) == [f"https://imgs.search.brave.com/thumb/{i}.jpg" for i in range(1, 5)]

    await frame.get_by_role("button", name="Open full image: aurora picture 3").click()
    await wait_for(host, "ui/open-link", 1)
    assert await sent(host, "ui/open-link") == [{"url": "https://cdn3.example.net/full/3.jpg"}]
    await frame.get_by_role("link", name="photos2.example.com").click()
    await wait_for(host, "ui/open-link", 2)
    assert (await sent(host, "ui/open-link"))[1] == {"url": "https://photos2.example.com/gallery/2"}
    assert not any("cdn" in url for url in host.requests), "full images are never hot-linked by the widget"
    assert await background(host) == LIGHT_BG
    await host.page.evaluate("setTheme('dark')")
    await expect(frame.locator("body")).to_have_css("background-color", DARK_BG)
    assert host.errors == []


async def test_places_list_hours_and_offline_sketch(host: WidgetHost) -> None:
    await host.open("brave_local_search", {"query": "coffee"}, theme="light")
    frame = view(host)
    places = frame.locator("li.place")
    await expect(places).to_have_count(3)
    await expect(places.nth(0).locator(".name")).to_have_text("Blue Bottle Coffee")
    await expect(places.nth(0).locator(".hours")).to_have_text("Open nowTue 07:00–18:00")
    await expect(places.nth(0).locator(".badge")).to_have_css("color", "rgb(21, 128, 61)")
    await expect(places.nth(1).locator(".hours")).to_have_text("ClosedOpens Wed 08:00")
    await expect(places.nth(2).locator(".hours")).to_have_count(0)  # no hours known: nothing, not a guess
    await expect(places.nth(0).locator(".rating")).to_have_text("4.5/5 (1250 reviews) · $$ · 0.3 km · Coffee & Tea")
    await expect(places.nth(1).locator(".address")).to_have_text("11 Mint St, San Francisco, CA 94103")
    await expect(places.nth(1).locator(".phone")).to_have_text("+1 415-555-0101")
    markers = frame.locator("#map g.marker")
    await expect(markers).to_have_count(3)
    await expect(markers.nth(2)).to_contain_text("3")
    # south is down: Ritual (lowest latitude) is drawn below Blue Bottle
    ys = [float(await markers.nth(i).locator("circle").get_attribute("cy") or "nan") for i in (0, 2)]
    assert ys[0] < ys[1]
    await host.page.evaluate("setTheme('dark')")
    await expect(frame.locator("body")).to_have_css("background-color", DARK_BG)
    await expect(places.nth(1).locator(".badge")).to_have_css("color", "rgb(248, 113, 113)")
    assert host.requests == [] and host.errors == []


async def test_error_result_shows_the_message_and_no_paging(host: WidgetHost) -> None:
    await host.open("brave_web_search", {"query": "fail"})
    frame = view(host)
    await expect(frame.locator("#status")).to_have_text("Slow down.")
    await expect(frame.locator("li")).to_have_count(0)
    await expect(frame.get_by_role("button", name="Next ›")).to_be_hidden()
    assert host.errors == []


async def test_markup_in_results_is_shown_as_text(host: WidgetHost) -> None:
    query = "<img src=https://evil.example/x onerror=alert(1)>"
    await host.open("brave_web_search", {"query": query})
    frame = view(host)
    await expect(frame.locator("li.row")).to_have_count(3)
    await expect(frame.locator("li.row").nth(0).locator("a")).to_contain_text("<Img Src=")
    await expect(frame.locator("img")).to_have_count(0)
    assert host.requests == [] and host.errors == []


@pytest.mark.parametrize("search_type", ["web", "images"])
async def test_real_server_envelopes_render(
    browser: Browser, client: BraveClient, fake: FakeBrave, search_type: str
) -> None:
    """The widget draws what the real ``brave_web_search`` returns (Brave fixtures), and pages through it."""
    spec = next(s for s in widgets() if "brave_web_search" in s.tools)
    resource_meta = {"ui": {"csp": spec.csp().model_dump(by_alias=True, exclude_none=True)}}
    args = {"query": "hello world", "search_type": search_type}
    async with Client(build_server(make_settings(), client), mode="legacy") as mcp:
        result = wire(await mcp.call_tool("brave_web_search", args))
        sections = result["structuredContent"]["sections"]
        page = await browser.new_page()
        host = WidgetHost(page, mcp)
        await host.show(spec.html(), resource_meta, args, result, "light")
        frame = view(host)
        if search_type == "images":
            (images,) = sections
            thumbs = frame.locator(".tile img")
            await expect(thumbs).to_have_count(len(images["results"]))
            await expect(thumbs.first).to_have_js_property("complete", True)
            assert await thumbs.first.evaluate("img => img.naturalWidth") == 96, host.errors
            await expect(frame.get_by_role("button", name="Next ›")).to_be_hidden()
            assert host.requests, "thumbnails are requested"
            assert all(url.startswith(THUMBNAIL_ORIGIN + "/") for url in host.requests)
        else:
            rows = [r for s in sections if s["key"] != "images" for r in s["results"]]
            await expect(frame.locator("li.row")).to_have_count(len(rows))
            await expect(frame.locator("li.row a").first).to_have_text(rows[0]["title"])
            await frame.get_by_role("button", name="Next ›").click()
            await expect(frame.locator("#status")).to_contain_text("offset 1")
            offsets = [dict(r.params).get("offset") for r in fake.requests if r.path.endswith("/web/search")]
            assert offsets == [None, "1"] or offsets == ["0", "1"], offsets
        assert host.errors == []
        await page.close()
