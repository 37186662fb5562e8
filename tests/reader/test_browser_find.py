"""Which browser renders app shells, found without starting anything: the setting, the system's, Playwright's own;
and when there is none, a reason that says how to enable rendering."""

from __future__ import annotations

from pathlib import Path

import pytest

from brave_search_mcp.config import playwright_browsers_dir
from brave_search_mcp.reader import browser_find
from brave_search_mcp.reader.browser_find import find_browser


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_off_turns_rendering_off() -> None:
    choice = find_browser("off")
    assert not choice.available and choice.reason == "rendering is turned off (BRAVE_SEARCH_READ_BROWSER=off)"


def test_without_playwright_the_reason_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser_find, "playwright_installed", lambda: False)
    choice = find_browser(None)
    assert not choice.available
    assert choice.reason is not None and "pip install 'brave-search-mcp[browser]'" in choice.reason


def test_a_named_browser_wins_and_a_wrong_name_says_so(tmp_path: Path) -> None:
    mine = _executable(tmp_path / "my-chrome")
    assert find_browser(str(mine)).executable == str(mine)
    assert find_browser(str(mine)).source == "BRAVE_SEARCH_READ_BROWSER"
    missing = find_browser(str(tmp_path / "nothing-here"))
    assert not missing.available and missing.reason is not None and "names no executable" in missing.reason


def test_the_system_browser_then_playwrights_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir, cache = tmp_path / "bin", tmp_path / "ms-playwright"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(cache))
    none = find_browser(None)
    assert not none.available and none.reason is not None and "no Chromium-family browser" in none.reason
    fetched = _executable(cache / "chromium-1200" / "chrome-linux64" / "chrome")
    assert (find_browser(None).executable, find_browser(None).source) == (str(fetched), "playwright")
    system = _executable(bin_dir / "chromium")
    assert (find_browser(None).executable, find_browser(None).source) == (str(system), "system")


def test_playwrights_folder_follows_its_variable_and_the_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", "/opt/pw")
    assert playwright_browsers_dir() == Path("/opt/pw")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", "relative/pw")  # not a folder Playwright would use: ignored
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "/c")
    assert playwright_browsers_dir(platform="linux") == Path("/c/ms-playwright")
    monkeypatch.delenv("PLAYWRIGHT_BROWSERS_PATH")
    monkeypatch.setenv("WIN_PD_OVERRIDE_LOCAL_APPDATA", "C:/Users/u/AppData/Local")  # platformdirs' override
    assert playwright_browsers_dir(platform="win32") == Path("C:/Users/u/AppData/Local/ms-playwright")
