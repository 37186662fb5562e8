"""Where state lives: parse ``BRAVE_SEARCH_STATE``, find the user's state and cache files, then open the backend.

The URL and the default files arrive as arguments (config.py is the only reader of the environment).
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from brave_search_mcp.clock import Clock, Sleep
from brave_search_mcp.config import parse_state_url
from brave_search_mcp.state.base import LEASE_SECONDS, RETRY_INTERVAL_SECONDS, StateBackend, StateOptions
from brave_search_mcp.state.memory import MemoryBackend
from brave_search_mcp.user_files import default_cache_path, default_state_path, legacy_state_path


async def open_state(
    url: str | None,
    *,
    cache_max_entries: int,
    cache_max_bytes: int | None = None,
    default_path: Path | None = None,
    cache_path: Path | None = None,
    clock: Clock = time.time,
    sleep: Sleep = anyio.sleep,
    lease_seconds: float = LEASE_SECONDS,
    retry_interval: float = RETRY_INTERVAL_SECONDS,
) -> StateBackend:
    """Open the backend ``url`` names. None: SQLite, the state at ``default_path`` and the cache at ``cache_path``
    (each by default where config.py's rule puts it), the counters an older version kept beside the cache moved
    once; ``sqlite:///path``: that one file holds both."""
    where = parse_state_url(url)
    if where.kind == "memory":
        return MemoryBackend(clock=clock, sleep=sleep, cache_max_entries=cache_max_entries)
    options = StateOptions(cache_max_entries, clock, sleep, cache_max_bytes, lease_seconds, retry_interval)
    if where.kind == "redis":
        from brave_search_mcp.state.redis import open_redis

        assert where.url is not None
        return await open_redis(where.url, options)
    from brave_search_mcp.state.sqlite import open_sqlite

    if where.path is not None:
        return await open_sqlite(where.path, options)
    cache = cache_path or default_cache_path()
    state = default_path or default_state_path()
    return await open_sqlite(state, options, cache_path=cache, legacy_path=legacy_state_path(cache))
