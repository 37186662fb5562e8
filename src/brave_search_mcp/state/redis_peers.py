"""The Redis heartbeat of the processes that share a plan (``peers``): a sorted set of their ids, each scored by
its last beat, kept and counted in one script.

A member or a score no process of this project wrote (another type of key under the name, a time ahead of the
clock, a member that is no process id) is dropped before counting: a broken set never fails a reservation and never
divides the plan among processes that do not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brave_search_mcp.state.redis_keys import peers_key

if TYPE_CHECKING:
    from redis.asyncio import Redis

# KEYS: the set.  ARGV: member, now ('': the server's clock), seconds a member stays alive, ms the set outlives the
# last beat.  Returns how many members are alive (this one included).
BEAT = """
local key, member = KEYS[1], ARGV[1]
local now, alive = tonumber(ARGV[2]), tonumber(ARGV[3])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local kind = redis.call('TYPE', key)['ok']
if kind ~= 'zset' and kind ~= 'none' then redis.call('DEL', key) end
redis.call('ZADD', key, now, member)
redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. string.format('%.17g', now - alive))
redis.call('ZREMRANGEBYSCORE', key, '(' .. string.format('%.17g', now + alive), '+inf')
for _, m in ipairs(redis.call('ZRANGE', key, 0, 1000)) do
  if #m ~= 32 or not string.match(m, '^%x+$') then redis.call('ZREM', key, m) end
end
redis.call('PEXPIRE', key, ARGV[4])
return redis.call('ZCARD', key)
"""


class RedisHeartbeat:
    """``peers.Heartbeat`` on a redis.asyncio client. ``server_clock``: beats are timed by the server's clock (the
    replicas' clocks may disagree), else by the ``now`` given (a test's fake clock)."""

    def __init__(self, client: Redis, *, server_clock: bool) -> None:
        self._r = client
        self._beat = client.register_script(BEAT)
        self._server_clock = server_clock

    async def beat(self, member: str, now: float, alive: float) -> int:
        """Note ``member`` alive now; how many members are."""
        args: list[str | int] = [
            member,
            "" if self._server_clock else repr(float(now)),
            repr(float(alive)),
            int(alive * 2000),
        ]
        return int(await self._beat(keys=[peers_key()], args=args))

    async def leave(self, member: str) -> None:
        """Forget ``member``."""
        await self._r.zrem(peers_key(), member)
