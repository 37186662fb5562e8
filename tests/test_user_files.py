"""Where the user's files live: platformdirs' folders for each platform, moved by HOME and the XDG variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from brave_search_mcp.user_files import (
    default_cache_path,
    default_key_path,
    default_state_path,
    legacy_state_path,
    playwright_cache_dir,
    user_cache_dir,
    user_config_dir,
    user_state_dir,
)

XDG = ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user with a home of their own and no XDG variable (the suite's own XDG folders taken away)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in (*XDG, "LOCALAPPDATA", "WIN_PD_OVERRIDE_LOCAL_APPDATA"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _files(platform: str) -> tuple[Path, Path, Path]:
    return (
        default_key_path(platform=platform),
        default_state_path(platform=platform),
        default_cache_path(platform=platform),
    )


def test_on_linux_the_files_live_in_the_xdg_folders_under_the_home(home: Path) -> None:
    """Issue 35: counters live where no cleaner wipes them (the state folder), cached answers in the cache
    folder; the key where the register script stores it (the config folder)."""
    assert _files("linux") == (
        home / ".config/brave-search-mcp/api-key",
        home / ".local/state/brave-search-mcp/state.sqlite3",
        home / ".cache/brave-search-mcp/cache.sqlite3",
    )
    # where versions before issue 35 kept everything: the cache folder's state.sqlite3
    assert legacy_state_path(_files("linux")[2]) == home / ".cache/brave-search-mcp/state.sqlite3"
    assert playwright_cache_dir(platform="linux") == home / ".cache/ms-playwright"


def test_absolute_xdg_variables_move_the_folders_and_relative_ones_are_ignored(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The XDG spec: a relative value is invalid and ignored, so a stray ``XDG_STATE_HOME=state`` never puts the
    counters under whatever the working directory happens to be."""
    for name in XDG:
        monkeypatch.setenv(name, "relative/" + name.lower())
    assert _files("linux") == (
        home / ".config/brave-search-mcp/api-key",
        home / ".local/state/brave-search-mcp/state.sqlite3",
        home / ".cache/brave-search-mcp/cache.sqlite3",
    )
    for name in XDG:
        monkeypatch.setenv(name, f"/xdg/{name.lower()}")
    assert _files("linux") == (
        Path("/xdg/xdg_config_home/brave-search-mcp/api-key"),
        Path("/xdg/xdg_state_home/brave-search-mcp/state.sqlite3"),
        Path("/xdg/xdg_cache_home/brave-search-mcp/cache.sqlite3"),
    )
    assert (user_config_dir(), user_state_dir(), user_cache_dir()) == tuple(p.parent for p in _files(sys.platform))


def test_macos_and_windows_have_their_own_folders(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _files("darwin") == (
        home / "Library/Application Support/brave-search-mcp/api-key",
        home / "Library/Application Support/brave-search-mcp/state.sqlite3",
        home / "Library/Caches/brave-search-mcp/cache.sqlite3",
    )
    assert playwright_cache_dir(platform="darwin") == home / "Library/Caches/ms-playwright"
    monkeypatch.setenv("WIN_PD_OVERRIDE_LOCAL_APPDATA", "C:/Users/u/AppData/Local")  # platformdirs' override
    assert _files("win32") == (
        Path("C:/Users/u/AppData/Local/brave-search-mcp/api-key"),
        Path("C:/Users/u/AppData/Local/brave-search-mcp/state.sqlite3"),
        Path("C:/Users/u/AppData/Local/brave-search-mcp/Cache/cache.sqlite3"),
    )
    assert playwright_cache_dir(platform="win32") == Path("C:/Users/u/AppData/Local/ms-playwright")


def test_a_new_process_finds_the_folders_its_environment_names(tmp_path: Path) -> None:
    """The server's own process, not only this one: the environment it starts with decides where its files go."""
    env = {k: v for k, v in os.environ.items() if k not in XDG} | {
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "s"),
    }
    code = "from brave_search_mcp import user_files as f; print(f.default_state_path()); print(f.default_cache_path())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines() == [
        str(tmp_path / "s/brave-search-mcp/state.sqlite3"),
        str(tmp_path / ".cache/brave-search-mcp/cache.sqlite3"),
    ]
