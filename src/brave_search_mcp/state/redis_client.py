"""Connecting to Redis as its clients expect: redis-py's own timeouts and retry, one server or a Redis Cluster."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

# A Redis that refuses connections (down) costs a call milliseconds; one that hangs (paused, or unreachable) costs the
# one call that tries it its timeouts, the others run on memory meanwhile (``guard``). Connecting may take long on a
# busy event loop (the answer is there, the loop has not run the callback yet): a generous connect timeout, a tighter
# one per command, and one more try (after a short pause) before the store counts as down.
CONNECT_TIMEOUT_SECONDS = 2.0
COMMAND_TIMEOUT_SECONDS = 0.75
RETRY_PAUSE_SECONDS = 0.05


def client_options(*, blocking: bool = False) -> dict[str, Any]:
    """redis-py's own timeouts and retry for this store (see ``CONNECT_TIMEOUT_SECONDS``): connection errors and
    timeouts are tried once more, after a constant pause, then become StoreUnavailable. ``blocking``: for commands
    that wait on the server (``BLMOVE``), whose reads the caller bounds instead of a command timeout."""
    from redis.asyncio.retry import Retry
    from redis.backoff import ConstantBackoff

    options: dict[str, Any] = {
        "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "retry": Retry(ConstantBackoff(RETRY_PAUSE_SECONDS), 1),
    }
    if not blocking:
        options["socket_timeout"] = COMMAND_TIMEOUT_SECONDS
    return options


def redact(url: str) -> str:
    """The URL with any password replaced, for logs and the status tool."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str, *, blocking: bool = False) -> Any:
    """A redis.asyncio client for ``url`` (connecting lazily: a server that is down now is tried at the first
    command); ``redis+cluster://`` (or ``rediss+cluster://``) and any node's address: a Redis Cluster client, which
    learns the other nodes from it. ``blocking``: see ``client_options``."""
    try:
        from redis.asyncio import Redis
        from redis.asyncio.cluster import RedisCluster
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ValueError(
            "BRAVE_SEARCH_STATE is a redis:// URL but redis-py is missing: install brave-search-mcp[redis]"
        ) from exc
    parts = urlsplit(url)
    if parts.scheme.endswith("+cluster"):
        plain = urlunsplit(parts._replace(scheme=parts.scheme.removesuffix("+cluster")))
        return RedisCluster.from_url(plain, **client_options(blocking=blocking))
    return Redis.from_url(url, **client_options(blocking=blocking))
