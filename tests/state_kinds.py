"""What the state tests that run on both shared stores share: one redis-server per module (None where it is not
installed: the Redis cases skip, the SQLite ones still run) and the store kind, ``sqlite`` then ``redis``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.redis_server import RedisServer, redis_server_binary


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer | None]:
    """The module's redis-server, or None."""
    if redis_server_binary() is None:
        yield None
        return
    with RedisServer() as server:
        yield server


@pytest.fixture(params=["sqlite", "redis"])
def kind(request: pytest.FixtureRequest, redis_server: RedisServer | None) -> str:
    """Each test once per store."""
    if request.param == "redis" and redis_server is None:
        pytest.skip("redis-server is not installed here")
    return str(request.param)
