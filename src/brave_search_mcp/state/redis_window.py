"""The Lua that reads and moves the starts of a key's window after their reservation (``redis_scripts.RESERVE``
records them): a start whose request left late is moved to when it left, and a spent window an answer reports is
checked against the starts recorded around that request."""

from brave_search_mcp.state.redis_scripts import server_shift

# KEYS: the starts of each family a start was granted in.  ARGV: its member, now, when its request left (both on the
# caller's clock), then '1' to keep it on the server's clock (``server_shift``).
# The start is counted from when its request left: moved, and renamed so that a retry (a lost reply) finds nothing.
RETIME = (
    server_shift("ARGV[2]", "ARGV[4]")
    + """
for _, key in ipairs(KEYS) do
  if redis.call('TYPE', key)['ok'] == 'zset' and redis.call('ZSCORE', key, ARGV[1]) then
    redis.call('ZREM', key, ARGV[1])
    redis.call('ZADD', key, string.format('%.17g', tonumber(ARGV[3]) + shift), ARGV[1] .. ':left')
  end
end
return 0
"""
)
# KEYS: the starts of the key's window.  ARGV: since, now, until (on the caller's clock), then the clock flag.
# Returns how many starts fall in (since, until].
STARTED = (
    server_shift("ARGV[2]", "ARGV[4]")
    + """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'zset' then return 0 end
local since = string.format('%.17g', tonumber(ARGV[1]) + shift)
return redis.call('ZCOUNT', KEYS[1], '(' .. since, string.format('%.17g', tonumber(ARGV[3]) + shift))
"""
)
