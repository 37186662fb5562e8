"""Which browser renders app shells, found without starting anything: so ``status`` can say, and reads can know.

Rendering needs two things installed beforehand, never downloaded while serving: Playwright for Python (the
``browser`` extra: ``pip install 'brave-search-mcp[browser]'``) and a Chromium-family executable. The
executable is ``BRAVE_SEARCH_READ_BROWSER`` when set (``off`` turns rendering off), else the first of the
distribution's Chromium, Google Chrome, or the Chromium that ``playwright install chromium`` put in
Playwright's own cache.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from brave_search_mcp.config import playwright_browsers_dir

SYSTEM_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
# where ``playwright install chromium`` puts its builds, per platform, under Playwright's cache folder
_PLAYWRIGHT_BUILDS = (
    "chromium-*/chrome-linux*/chrome",
    "chromium-*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
    "chromium-*/chrome-mac*/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
    "chromium-*/chrome-win*/chrome.exe",
)
HOW_TO_ENABLE = (
    "install the extra (pip install 'brave-search-mcp[browser]') and a Chromium (the distribution's chromium "
    "package, Google Chrome, or `playwright install chromium`), or name one in BRAVE_SEARCH_READ_BROWSER"
)


@dataclass(frozen=True)
class BrowserChoice:
    """The executable that would render (None when none can), where it was found, and why not when it cannot."""

    executable: str | None
    source: str | None = None  # "BRAVE_SEARCH_READ_BROWSER", "system" or "playwright"
    reason: str | None = None  # why rendering is unavailable

    @property
    def available(self) -> bool:
        """Whether a read may render (both Playwright and an executable are there)."""
        return self.executable is not None


def playwright_installed() -> bool:
    """Whether Playwright for Python can be imported (the ``browser`` extra), without importing it."""
    return importlib.util.find_spec("playwright") is not None


def find_browser(setting: str | None) -> BrowserChoice:
    """The browser the settings and this machine give, or why there is none (a cheap look, nothing started)."""
    if setting is not None and setting.strip().lower() in ("off", "none", "false", "0"):
        return BrowserChoice(None, reason="rendering is turned off (BRAVE_SEARCH_READ_BROWSER=off)")
    if not playwright_installed():
        return BrowserChoice(None, reason=f"Playwright is not installed: {HOW_TO_ENABLE}")
    if setting is not None:
        named = shutil.which(setting.strip())
        if named is None:
            return BrowserChoice(None, reason=f"BRAVE_SEARCH_READ_BROWSER names no executable: {setting.strip()!r}")
        return BrowserChoice(named, source="BRAVE_SEARCH_READ_BROWSER")
    for name in SYSTEM_BROWSERS:
        found = shutil.which(name)
        if found is not None:
            return BrowserChoice(found, source="system")
    cache = playwright_browsers_dir()
    for pattern in _PLAYWRIGHT_BUILDS:
        builds = sorted(cache.glob(pattern), reverse=True)  # the newest build first
        for build in builds:
            if _executable(build):
                return BrowserChoice(str(build), source="playwright")
    return BrowserChoice(None, reason=f"no Chromium-family browser was found: {HOW_TO_ENABLE}")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
