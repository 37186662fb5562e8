"""Where state lives: parse ``BRAVE_SEARCH_STATE`` and find the user's cache directory, then open the backend.

The URL arrives as an argument (config.py is the only reader of the environment); the default path
needs a few environment values too, so the caller passes them in as a mapping.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import anyio

from .base import LEASE_SECONDS, RETRY_INTERVAL_SECONDS, Clock, Sleep, StateBackend, StateOptions
from .memory import MemoryBackend

APP_DIR = "brave-search-mcp"
STATE_FILE = "state.sqlite3"


@dataclass(frozen=True)
class StateLocation:
    """A parsed state URL: which backend, and its file or server."""

    kind: str  # "memory" | "sqlite" | "redis"
    path: Path | None = None  # sqlite; None = the default file
    url: str | None = None  # redis


def default_state_path(environ: Mapping[str, str], *, platform: str = sys.platform, home: Path | None = None) -> Path:
    """The per-user cache file, platformdirs-style: XDG_CACHE_HOME or ~/.cache; ~/Library/Caches; %LOCALAPPDATA%."""
    base_home = home if home is not None else Path.home()
    if platform.startswith("win"):
        local = environ.get("LOCALAPPDATA")
        root = Path(local) if local else base_home / "AppData" / "Local"
        return root / APP_DIR / "Cache" / STATE_FILE
    if platform == "darwin":
        return base_home / "Library" / "Caches" / APP_DIR / STATE_FILE
    xdg = environ.get("XDG_CACHE_HOME", "")
    root = Path(xdg) if xdg and Path(xdg).is_absolute() else base_home / ".cache"
    return root / APP_DIR / STATE_FILE


def parse_state_url(url: str | None) -> StateLocation:
    """Validate ``BRAVE_SEARCH_STATE``; ValueError names the variable and the accepted forms."""
    if url is None or not url.strip():
        return StateLocation("sqlite")
    text = url.strip()
    if text == "memory":
        return StateLocation("memory")
    parts = urlsplit(text)
    if parts.scheme == "sqlite":
        if parts.netloc:
            raise ValueError(
                f"BRAVE_SEARCH_STATE: sqlite URLs take an absolute path (sqlite:///abs/path), got {text!r}"
            )
        if not parts.path:
            return StateLocation("sqlite")
        path = Path(parts.path if not parts.path.startswith("//") else "/" + parts.path.lstrip("/"))
        if not path.is_absolute():
            raise ValueError(f"BRAVE_SEARCH_STATE: sqlite path must be absolute, got {text!r}")
        return StateLocation("sqlite", path=path)
    if parts.scheme in ("redis", "rediss", "unix"):
        if parts.scheme != "unix" and not parts.hostname:
            raise ValueError("BRAVE_SEARCH_STATE: a redis URL needs a host (redis://host:port/db)")
        return StateLocation("redis", url=text)
    raise ValueError(
        "BRAVE_SEARCH_STATE must be 'memory', 'sqlite:///absolute/path' or 'redis://host:port/db'"
        f" (got a value with scheme {parts.scheme or 'none'!r})"
    )


async def open_state(
    url: str | None,
    *,
    cache_max_entries: int,
    cache_max_bytes: int | None = None,
    default_path: Path | None = None,
    clock: Clock = time.time,
    sleep: Sleep = anyio.sleep,
    lease_seconds: float = LEASE_SECONDS,
    retry_interval: float = RETRY_INTERVAL_SECONDS,
) -> StateBackend:
    """Open the backend ``url`` names (None = SQLite at ``default_path``, else at ``default_state_path({})``)."""
    where = parse_state_url(url)
    if where.kind == "memory":
        return MemoryBackend(clock=clock, sleep=sleep, cache_max_entries=cache_max_entries)
    options = StateOptions(cache_max_entries, clock, sleep, cache_max_bytes, lease_seconds, retry_interval)
    if where.kind == "redis":
        from .redis import open_redis

        assert where.url is not None
        return await open_redis(where.url, options)
    from .sqlite import open_sqlite

    return await open_sqlite(where.path or default_path or default_state_path({}), options)
