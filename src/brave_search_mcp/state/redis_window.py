"""The Lua that reads and moves the starts of a key's window after their reservation (``redis_scripts.RESERVE``
records them): a start whose request left late is moved to when it left, and a spent window an answer reports is
checked against the starts recorded around that request."""

# Both scripts take the caller's now and times on the caller's clock, then '1' to work on the server's clock (the
# starts' own): each time is moved by the server's clock minus ``now``.
_SHIFT = """
local shift = 0
if ARGV[#ARGV] == '1' then
  local t = redis.call('TIME')
  shift = tonumber(t[1]) + tonumber(t[2]) / 1000000 - tonumber(ARGV[#ARGV - 2])
end
"""
# KEYS: the starts of each family a start was granted in.  ARGV: its member, now, when its request left, clock.
# The start is counted from when its request left: moved, and renamed so that a retry (a lost reply) finds nothing.
RETIME = (
    _SHIFT
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
# KEYS: the starts of the key's window.  ARGV: since, now, until, clock.  Returns how many fall in (since, until].
STARTED = (
    _SHIFT
    + """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'zset' then return 0 end
local since = string.format('%.17g', tonumber(ARGV[1]) + shift)
return redis.call('ZCOUNT', KEYS[1], '(' .. since, string.format('%.17g', tonumber(ARGV[3]) + shift))
"""
)
