"""Maintainer tool for the MCP Apps widgets: refresh the screenshots in docs/.

    uv run --extra dev python -m scripts.ui_screenshots               # docs/ui-{web,images,places}.png

Screenshots use the system Chromium (``apt-get install -y chromium``) and the test host in testkit/ui_host.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import anyio
from mcp import Client
from playwright.async_api import async_playwright

from testkit.ui_host import CHROMIUM_ARGS, WidgetHost, demo_server

DOCS = Path(__file__).resolve().parent.parent / "docs"
SHOTS = (
    ("web", "brave_web_search", {"query": "python packaging"}, "light"),
    ("images", "brave_web_search", {"query": "aurora", "search_type": "images"}, "dark"),
    ("places", "brave_local_search", {"query": "coffee near Mint St"}, "light"),
)


async def screenshots() -> None:
    """One PNG per widget view, rendered from fixture results in the test host."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs the system chromium: apt-get install -y chromium")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
        try:
            for name, tool, args, theme in SHOTS:
                async with Client(demo_server(), mode="legacy") as client:
                    page = await browser.new_page(viewport={"width": 584, "height": 900})
                    host = WidgetHost(page, client)
                    await host.open(tool, args, theme)
                    await page.wait_for_function("log.some(m => m.method === 'ui/notifications/size-changed')")
                    if name == "web":
                        await page.frame_locator("#view").get_by_role("checkbox").first.check()
                    await page.wait_for_timeout(300)  # let the last size change settle before capturing
                    await page.locator("#view").screenshot(path=str(DOCS / f"ui-{name}.png"))
                    await page.close()
                print(f"docs/ui-{name}.png", file=sys.stderr)
        finally:
            await browser.close()


def main() -> None:
    """Run the chosen maintenance step."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    anyio.run(screenshots)


if __name__ == "__main__":
    main()
