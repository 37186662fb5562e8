"""Rendering an app shell in headless Chromium, so that a page a visitor's browser would draw reads as its text.

One browser per process (``Renderer``, owned by the composition root and closed with the server), launched on
first need through Playwright from an executable already installed (``browser_find``), reused by every read,
at most ``MAX_PAGES`` pages at once; a browser that crashed or was killed is relaunched by the next read, and
no failure of the browser escapes as anything but ``RenderFailed`` (the read then answers with the static
HTML and a warning). Each render gets a fresh context (no cookies, storage, cache or service workers kept;
no downloads; no permissions) whose only way out is its own ``guard_proxy`` (every connection checked by the
address policy, bytes capped); Playwright's routing aborts images, media, fonts and any request past
``MAX_REQUESTS``. Time is capped by the caller's budget, inside the read's deadline.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from brave_search_mcp.reader.addresses import AddressPolicy, Resolver
from brave_search_mcp.reader.browser_find import BrowserChoice, find_browser
from brave_search_mcp.reader.guard_proxy import guard_proxy

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright, Route

logger = logging.getLogger(__name__)

MAX_PAGES = 3  # renders at once; more wait their turn (within their own deadline)
MAX_REQUESTS = 150  # requests (and connections: WebSockets) one render may make; later ones are aborted
BYTES_FACTOR = 4  # a render may receive this many times BRAVE_SEARCH_READ_MAX_BYTES over all its requests
IDLE_SECONDS = 1.5  # after "load": how long to wait for the network to go quiet (scripts fetching content)
SNAPSHOT_SECONDS = 2.0  # kept back from the budget to read the DOM (a busy page answers late)
CLOSE_SECONDS = 3.0
BLOCKED_TYPES = frozenset({"image", "media", "font"})
# The flags this machine's Chromium runs with: no GPU, no QUIC (UDP would not go through the proxy), no
# traffic of its own (updates, sync, field trials, safe browsing lists), WebRTC kept off non-proxied UDP; every
# connection through a proxy (each context names its own guard proxy, and loopback is not bypassed), and
# the process-wide default a dead end, so nothing outside a context can go anywhere.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",  # the server may run as root (containers); the guard proxy is what keeps a page in
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-domain-reliability",
    "--dns-prefetch-disable",
    "--disable-dev-shm-usage",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",  # (a "--force-" spelling is silently ignored)
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)


class RenderUnavailable(Exception):
    """No browser can render here (the extra or an executable is missing, or it would not start): say how to fix."""


class RenderFailed(Exception):
    """The render did not give a page (the browser crashed, the page did not load in time): the static read stands."""


class _BrowserGone(Exception):
    """The browser would not open a context: it died since the last read (killed, crashed) and is relaunched."""


@dataclass(frozen=True)
class Rendered:
    """A rendered page: its DOM as HTML, where the browser ended up, and what the render did on the network."""

    html: str
    final_url: str
    hops: tuple[tuple[str, tuple[str, ...]], ...]  # hosts the page reached and the checked addresses used
    requests: int  # requests the page made (routed), aborted ones included
    refused: tuple[str, ...]  # hosts the address policy refused
    complete: bool  # the page finished loading within the budget (else the DOM as it stood)


class Renderer:
    """The process's one browser: launched on first need, shared by reads, relaunched after a crash."""

    def __init__(self, browser_setting: str | None) -> None:
        self.browser_setting = browser_setting
        self.launches = 0  # how many times a browser was started (tests and status)
        self.version: str | None = None
        self._choice: BrowserChoice | None = None
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = anyio.Lock()
        self._pages = anyio.Semaphore(MAX_PAGES)
        self._closed = False

    def choice(self) -> BrowserChoice:
        """The browser this process renders with (looked up once)."""
        if self._choice is None:
            self._choice = find_browser(self.browser_setting)
        return self._choice

    def describe(self) -> dict[str, Any]:
        """For ``status``: whether rendering is available, with which browser, and whether it is running."""
        choice = self.choice()
        running = self._browser is not None and self._browser.is_connected()
        return {
            "available": choice.available,
            "browser": choice.executable,
            "found_by": choice.source,
            "reason": choice.reason,
            "running": running,
            "version": self.version,
            "launches": self.launches,
        }

    async def render(
        self, url: str, *, policy: AddressPolicy, resolver: Resolver, seconds: float, max_bytes: int
    ) -> Rendered:
        """``url`` drawn by its scripts, within ``seconds`` (the wait for a free page included), receiving at most
        ``max_bytes`` over all its requests (then its connections are cut and the DOM is read as it stands)."""
        end = time.monotonic() + seconds
        try:
            with anyio.fail_after(max(0.001, seconds)):
                async with self._pages:
                    for _ in range(2):  # a browser found dead is relaunched once, within the same time
                        browser = await self._ready()
                        try:
                            return await self._render(browser, url, (policy, resolver, max_bytes), end)
                        except _BrowserGone:
                            await self._forget(browser)
                    raise RenderFailed("the browser stopped twice in a row")
        except TimeoutError:
            raise RenderFailed("the browser did not finish within the read's time") from None
        except (RenderFailed, RenderUnavailable):
            raise
        except Exception as exc:  # whatever else the browser or its driver does, the read goes on without it
            logger.warning("read_url: rendering failed unexpectedly", exc_info=True)
            raise RenderFailed(f"the browser failed ({type(exc).__name__})") from None

    async def _ready(self) -> Browser:
        """The running browser, launched now if there is none or it died."""
        async with self._lock:
            if self._closed:
                raise RenderUnavailable("the server is closing")
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            choice = self.choice()
            if choice.executable is None:
                raise RenderUnavailable(choice.reason or "no browser")
            await self._drop()
            try:
                from playwright.async_api import Error, async_playwright
            except ImportError:
                raise RenderUnavailable("Playwright is not installed") from None
            try:
                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                self._browser = await self._playwright.chromium.launch(
                    executable_path=choice.executable, args=list(CHROMIUM_FLAGS), timeout=30_000
                )
            except (Error, OSError) as exc:  # no driver, or no browser that starts
                await self._stop_driver()  # a driver that died with it is started afresh next time
                raise RenderUnavailable(f"{choice.executable} did not start: {_first_line(exc)}") from None
            self.launches += 1
            self.version = self._browser.version
            logger.info("read_url: rendering with %s %s", choice.executable, self.version)
            return self._browser

    async def _render(
        self, browser: Browser, url: str, rules: tuple[AddressPolicy, Resolver, int], end: float
    ) -> Rendered:
        from playwright.async_api import Error

        policy, resolver, max_bytes = rules
        async with guard_proxy(policy, resolver, max_bytes=max_bytes, max_connections=MAX_REQUESTS) as proxy:
            try:
                context = await browser.new_context(
                    proxy={"server": f"http://127.0.0.1:{proxy.port}"},
                    service_workers="block",
                    accept_downloads=False,
                    permissions=[],
                    java_script_enabled=True,
                    ignore_https_errors=False,
                )
            except Error as exc:
                logger.warning("read_url: the browser is gone (%s); relaunching it", _first_line(exc))
                raise _BrowserGone from None
            try:
                html, final_url, requests, complete = await _draw(context, url, end)
            except Error as exc:
                raise RenderFailed(f"the browser failed: {_first_line(exc)}") from None
            finally:
                with anyio.move_on_after(CLOSE_SECONDS, shield=True), contextlib.suppress(Error):
                    await context.close()
            hops = tuple((host, tuple(addresses)) for host, addresses in proxy.hops.items())
            return Rendered(html, final_url, hops, requests, tuple(proxy.refused), complete and not proxy.over_budget)

    async def _forget(self, browser: Browser) -> None:
        """Drop ``browser`` if it is still the current one (another read may have relaunched already)."""
        async with self._lock:
            if self._browser is browser:
                await self._drop()

    async def _drop(self) -> None:
        """Forget a browser that is gone (its process killed or crashed), closing what is left of it."""
        if self._browser is not None:
            old, self._browser = self._browser, None
            with anyio.move_on_after(CLOSE_SECONDS, shield=True):
                try:
                    await old.close()
                except Exception as exc:  # a dead browser's close may fail any way: it is gone either way
                    logger.debug("read_url: closing a dead browser: %s", type(exc).__name__)

    async def aclose(self) -> None:
        """Close the browser and Playwright's driver (the server is stopping)."""
        async with self._lock:
            self._closed = True
            await self._drop()
            await self._stop_driver()

    async def _stop_driver(self) -> None:
        """Stop Playwright's driver process (it is started again by the next launch)."""
        if self._playwright is not None:
            playwright, self._playwright = self._playwright, None
            with anyio.move_on_after(CLOSE_SECONDS, shield=True):
                try:
                    await playwright.stop()
                except Exception as exc:  # a driver that already died: nothing is left to stop
                    logger.debug("read_url: stopping Playwright: %s", type(exc).__name__)


async def _draw(context: BrowserContext, url: str, end: float) -> tuple[str, str, int, bool]:
    """Open ``url``, let its scripts run until it loads and the network is quiet (or time is up), read the DOM."""
    from playwright.async_api import Error
    from playwright.async_api import TimeoutError as PageTimeout

    made = 0

    async def route(route: Route) -> None:
        nonlocal made
        request = route.request
        made += 1
        scheme = request.url.split(":", 1)[0].lower()
        if scheme not in ("http", "https") or request.resource_type in BLOCKED_TYPES or made > MAX_REQUESTS:
            await route.abort("blockedbyclient")
            return
        await route.continue_()

    await context.route("**/*", route)
    page = await context.new_page()
    complete = True
    left = end - time.monotonic() - SNAPSHOT_SECONDS
    try:
        response = await page.goto(url, wait_until="load", timeout=max(1.0, left * 1000))
        if response is not None and response.status >= 400:
            raise RenderFailed(f"the browser was answered HTTP {response.status}")
        quiet = min(IDLE_SECONDS, end - time.monotonic() - SNAPSHOT_SECONDS)
        if quiet > 0:
            with contextlib.suppress(PageTimeout):  # still fetching: what it has drawn by now is read
                await page.wait_for_load_state("networkidle", timeout=quiet * 1000)
    except PageTimeout:
        complete = False  # never finished loading: read the DOM as it stands
    except Error as exc:
        if page.url in ("", "about:blank"):
            raise
        logger.debug("read_url: render stopped early: %s", _first_line(exc))
        complete = False
    if page.url.split(":", 1)[0].lower() not in ("http", "https"):  # it went on to a refused or failed address
        raise RenderFailed("the page navigated away to a browser error page")
    html = await page.content()
    return html, page.url, made, complete


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
