"""Cross-replica single flight without polling: a waiter learns from Redis itself that the owner's answer is stored.

The owner of a fetch, once its answer is stored (``cache_put_release``), pushes one element onto a list named by
its flight (the cache key and the owner's lease id); a waiter reads who holds the lease and blocks on that list
(``BLMOVE`` onto itself, so the element stays for every other waiter) until the element is there. The element
outlives the flight a while (``FLIGHT_KEPT_MS``) for a waiter that arrives after the store. A flight's list is
never reused: the next fetch of the same key has another owner id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from brave_search_mcp.state.redis_keys import flight_end_key, lease_key

if TYPE_CHECKING:
    from redis.asyncio import Redis

FLIGHT_KEPT_MS = 10_000  # how long a flight's end stays readable


class Flights:
    """The flights' ends on one Redis: ``ended`` by their owners, ``wait``-ed on by the other replicas."""

    def __init__(self, client: Redis, waits: Redis, *, read_slack: float) -> None:
        self._r = client  # bounded commands
        self._waits = waits  # blocking ones: reads that last as long as the wait
        self._slack = read_slack  # a wait that outlasts its time by this is a paused Redis: an outage, not a hang

    async def ended(self, key: str, owner: str) -> None:
        """The flight ``owner`` ran for ``key`` has stored its answer (or nothing): wake its waiters."""
        done = flight_end_key(key, owner)
        async with self._r.pipeline(transaction=False) as pipe:
            pipe.rpush(done, "1")
            pipe.pexpire(done, FLIGHT_KEPT_MS)
            await pipe.execute()

    async def wait(self, key: str, seconds: float) -> None:
        """Return once the flight leasing ``key`` has ended (at once when no lease is held), or after ``seconds``."""
        holder = await self._r.get(lease_key(key))
        if holder is None:
            return
        done = flight_end_key(key, holder.decode() if isinstance(holder, bytes) else str(holder))
        with anyio.fail_after(seconds + self._slack):
            # Redis >= 6.2 takes a fraction of a second here; redis-py's annotation says int
            await self._waits.blmove(done, done, seconds, "LEFT", "RIGHT")  # type: ignore[arg-type]
