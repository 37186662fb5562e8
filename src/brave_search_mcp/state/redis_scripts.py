"""The Redis backend's Lua scripts: each is one atomic step on the server (``redis``)."""

from __future__ import annotations


def server_shift(now: str, flag: str) -> str:
    """Lua that sets ``shift``: the server's clock minus the caller's ``now`` (an argument, on the caller's clock)
    when ``flag`` is '1' (production: times are kept on the server's clock, whatever the replicas' clocks say), else
    0 (a test's clock, used as it is)."""
    return f"""
local shift = 0
if {flag} == '1' then
  local t = redis.call('TIME')
  shift = tonumber(t[1]) + tonumber(t[2]) / 1000000 - tonumber({now})
end
"""


def once(body: str) -> str:
    """``body`` run at most once per call: a call whose reply was lost (a command timeout while the server was busy or
    paused) is sent again by the client (``redis_client``), and a paused server, once back, runs both copies. The last
    key is the call's own marker (``redis_keys.once_key``, a random token per call, in the slot of the other keys), the
    last argument how long it is kept (ms): the first copy runs ``body`` and keeps its reply there, a later copy
    returns that reply and changes nothing. So one booking counts one request, one reservation records one start."""
    return f"""
local ONCE = KEYS[#KEYS]
local done = redis.call('GET', ONCE)
if done then return cjson.decode(done) end
local function run()
{body}
end
local out = run()
redis.call('SET', ONCE, cjson.encode(out), 'PX', ARGV[#ARGV])
return out
"""


# ``plan.decide`` in Lua, so a reservation is one atomic step: the contract test tests/test_rate_contract.py runs
# this script and the Python rule on the same inputs and demands the same decisions. A plan is a hash of
# PlanState's fields (an absent field is None / never).
# KEYS: own plan, own starts[, shared plan, shared starts].  ARGV: now, initial plan (JSON), member, margin
# factor, margin seconds, keep seconds, recovery factor, recovery period, probe hold, pinned rate, pinned burst,
# spread seconds, then the bounds of a sound plan (``PlanState.check`` and ``trusted``): least and most rate, most
# burst, clock skew, month, longest pause, default trial period; then '1' to decide on the server's clock (the
# initial plan's times moved to it; '' : on ``now``).
# Returns {granted 1/0, ready, reason, plan as field/value pairs, the server's clock minus ``now`` (0: not used),
# 1 when the stored plan was dropped and rebuilt, 1 when a granted start fills the key's window (``Decision.full``:
# the shared family's window when there is one)}; ready and the plan's times are on the clock decided on. Run
# ``once`` (its marker the last key, after the starts; its ms the last argument): a retried reservation records one
# start and is decided once.
RESERVE = once(
    server_shift("ARGV[1]", "ARGV[20]")
    + """
local NEVER = -math.huge
local SHARED = #KEYS > 3  -- a shared family's plan and starts, before the ``once`` marker
local now = tonumber(ARGV[1]) + shift
local TIMES = {penalty_at = true, strike_at = true, blocked_until = true, probe_until = true, quota_until = true,
  quota_trial_at = true}
local SHIFT = string.format('%.17g', shift)
local MF, MS, KEEP = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local RF, RP, HOLD = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local SPREAD = tonumber(ARGV[12])
local MINR, MAXR, MAXB = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local SKEW, MONTH, MAXWAIT, EVERY = tonumber(ARGV[16]), tonumber(ARGV[17]), tonumber(ARGV[18]), tonumber(ARGV[19])
local function finite(v) return v ~= nil and v == v and v ~= math.huge and v ~= -math.huge end
local function load(key)
  local raw = redis.call('HGETALL', key)
  if #raw == 0 then return nil, true end
  local p, ok = {}, true
  for i = 1, #raw, 2 do
    local v = tonumber(raw[i + 1])
    if not finite(v) then ok = false end
    p[raw[i]] = v
  end
  return p, ok
end
local function t(p, f) if p[f] == nil then return NEVER end return p[f] end
local function whole(v, low, high) return v >= low and v <= high and v == math.floor(v) end
local function sound(p)
  for _, f in ipairs({'plan_rate', 'penalty_rate'}) do
    if p[f] ~= nil and (p[f] < MINR or p[f] > MAXR) then return false end
  end
  if not whole(p.plan_burst or 1, 1, MAXB) then return false end
  local every = p.quota_every or EVERY
  if every <= 0 or every > MONTH then return false end
  local ahead = now + SKEW
  return math.max(t(p, 'penalty_at'), t(p, 'strike_at')) <= ahead and t(p, 'blocked_until') <= ahead + MAXWAIT
    and t(p, 'probe_until') <= ahead + HOLD and t(p, 'quota_until') <= ahead + MONTH
    and t(p, 'quota_trial_at') <= ahead + every
end
local function pairs_of(p)
  local out = {}
  for f, v in pairs(p) do out[#out + 1] = f; out[#out + 1] = string.format('%.17g', v) end
  return out
end
local function in_force(p)
  if p.plan_rate == nil then return nil, nil end
  local rate, burst = p.plan_rate, p.plan_burst or 1
  if p.penalty_rate ~= nil then
    local minutes = math.floor((now - t(p, 'penalty_at')) / RP)
    if minutes < 0 then minutes = 0 end
    if minutes > 200 then minutes = 200 end
    rate = math.min(rate, p.penalty_rate * RF ^ minutes)
  end
  return rate, burst
end
local function spread(p)
  local rate, burst = in_force(p)
  if rate == nil or rate >= p.plan_rate then return nil end
  return math.max(1, math.min(burst, math.floor(rate * SPREAD)))
end
local function nth(key, n)
  local last = redis.call('ZREVRANGE', key, n - 1, n - 1, 'WITHSCORES')
  if #last < 2 then return NEVER end
  return tonumber(last[2])
end
local function recent(key, rate, burst, at_once)
  local h = 0
  if rate ~= nil then h = burst / rate * MF + MS end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - math.max(h, KEEP))
  redis.call('ZREMRANGEBYSCORE', key, '(' .. string.format('%.17g', now + SKEW), '+inf')
  if rate == nil then return NEVER end
  local at = nth(key, burst) + h
  if at_once ~= nil then at = math.max(at, nth(key, at_once) + at_once / rate) end
  return at
end
local own, own_ok = load(KEYS[1])
local dropped = 0
if own ~= nil and not (own_ok and sound(own)) then
  own, dropped = nil, 1
  redis.call('DEL', KEYS[1])
end
if own == nil then
  own = {}
  for f, v in pairs(cjson.decode(ARGV[2])) do
    if v ~= cjson.null then
      if TIMES[f] then v = v + shift end
      own[f] = v
    end
  end
  redis.call('HSET', KEYS[1], unpack(pairs_of(own)))
end
local shared = nil
if SHARED then
  local found, found_ok = load(KEYS[3])
  if found ~= nil and found_ok and sound(found) then shared = found end
end
if t(own, 'quota_until') > now and now < t(own, 'quota_trial_at') then
  local gate = string.format('%.17g', math.min(own.quota_until, own.quota_trial_at))
  return {0, gate, 'quota', pairs_of(own), SHIFT, dropped, 0}
end
local ready, reason = now, 'ok'
local pause = t(own, 'blocked_until')
if shared ~= nil and t(shared, 'blocked_until') > pause then pause = t(shared, 'blocked_until') end
if pause > ready then ready, reason = pause, 'paused' end
local eff = own
if ARGV[10] ~= '' then
  eff = {plan_rate = tonumber(ARGV[10]), plan_burst = tonumber(ARGV[11])}
end
local rate, burst = in_force(eff)
local at = recent(KEYS[2], rate, burst, spread(eff))
if rate == nil then
  if t(own, 'probe_until') > ready then ready, reason = own.probe_until, 'probe' end
elseif at > ready then
  ready, reason = at, 'window'
end
local srate, sburst = nil, nil
if SHARED then
  local sspread = nil
  if shared ~= nil then srate, sburst = in_force(shared); sspread = spread(shared) end
  at = recent(KEYS[4], srate, sburst, sspread)
  if at > ready then ready, reason = at, 'window' end
end
if ready > now then return {0, string.format('%.17g', ready), reason, pairs_of(own), SHIFT, dropped, 0} end
-- Whether this start fills the key's one window: with it, ``burst`` starts younger than the horizon (``plan.fills``).
local function fills(key, r, b)
  if r == nil then return 0 end
  if b <= 1 or nth(key, b - 1) > now - (b / r * MF + MS) then return 1 end
  return 0
end
local full
if SHARED then full = fills(KEYS[4], srate, sburst) else full = fills(KEYS[2], rate, burst) end
local changed = false
if rate == nil then own.probe_until = now + HOLD; changed = true end
if t(own, 'quota_until') > now then own.quota_trial_at = now + (own.quota_every or EVERY); changed = true end
if changed then redis.call('HSET', KEYS[1], unpack(pairs_of(own))) end
local ms = math.ceil((math.max(KEEP, 60) + 1) * 1000)
for i = 2, #KEYS - 1, 2 do
  redis.call('ZADD', KEYS[i], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[i], ms)
end
return {1, string.format('%.17g', now), 'ok', pairs_of(own), SHIFT, dropped, full}
"""
)
# A stored count that is not a whole number a month can reach (``most``) is a broken record: it restarts from 0
# instead of closing the spending cap (or failing every booking, or the outage's counts on their way back) for the
# rest of the month. Returns the count, and 1 when it was broken (0 otherwise).
_COUNT = """
local function count(key, most)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'none' and kind ~= 'string' then
    redis.call('DEL', key)
    return 0, 1
  end
  local n = tonumber(redis.call('GET', key) or '0')
  if n == nil or n ~= n or n < 0 or n > most or n ~= math.floor(n) then
    redis.call('SET', key, '0', 'KEEPTTL')
    return 0, 1
  end
  return n, 0
end
"""
# The store's epoch (nil when it has none) and 1 when the stored one was damaged (not a string of 32 hex digits,
# as ``uuid4().hex``): it is replaced by ``known``, the id the caller last read (the server kept what it held: a new
# id would have every process put its counts back on top of them), or deleted when the caller knows none.
_EPOCH_OF = """
local function epoch_of(key, known)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then return nil, 0 end
  if kind == 'string' then
    local v = redis.call('GET', key)
    if string.len(v) == 32 and string.find(v, '^%x+$') then return v, 0 end
  end
  redis.call('DEL', key)
  if known == '' then return nil, 1 end
  redis.call('SET', key, known)
  return known, 1
end
"""
# KEYS: counter, epoch, ``once`` marker.  ARGV: cap (-1: none), ms to live, the epoch the caller knows ('': any),
# most, ms to keep the marker.  Returns {booked 1/0, count, 1 when the stored count was broken, 1 when the stored epoch
# was}, or {-1, 0, 0, _} when the server's epoch is another (it lost what it held: the caller's outage begins). A
# retried booking returns the first one's reply and counts nothing more.
BOOK = once(
    _COUNT
    + _EPOCH_OF
    + """
local damaged = 0
if ARGV[3] ~= '' then
  local epoch
  epoch, damaged = epoch_of(KEYS[2], ARGV[3])
  if epoch ~= ARGV[3] then return {-1, 0, 0, damaged} end
end
local n, broken = count(KEYS[1], tonumber(ARGV[4]))
local cap = tonumber(ARGV[1])
if cap >= 0 and n >= cap then return {0, n, broken, damaged} end
n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, n, broken, damaged}
"""
)
# KEYS: counter, ``once`` marker.  ARGV: most, ms to keep the marker.  Returns {1, the count} when one was given
# back, {0, 0} when the count was 0. A retried one gives back nothing more.
UNBOOK = once(
    _COUNT
    + """
if count(KEYS[1], tonumber(ARGV[1])) > 0 then return {1, redis.call('DECR', KEYS[1])} end
return {0, 0}
"""
)
# KEYS: epoch.  ARGV: a new random id, the epoch the caller last read ('': none).  Returns {the store's epoch (made
# now if it had none), 1 when the stored one was damaged}.
EPOCH = (
    _EPOCH_OF
    + """
local epoch, damaged = epoch_of(KEYS[1], ARGV[2])
if epoch == nil then
  epoch = ARGV[1]
  redis.call('SET', KEYS[1], epoch)
end
return {epoch, damaged}
"""
)
# KEYS: counter, marker, epoch, base put back, then the ``once`` markers of the caller's failed calls on the counter
# (``redis_once``).  ARGV: delta, base, ms to live (0: keep), ms to remember the marker, the batch's epoch ('':
# none), a new random id, most, the epoch the caller last read ('': none), then each failed call's sign (1 a
# booking, -1 a give-back), then ms to keep a void reply.  Returns {the count, the server's epoch, 1 when the stored
# count (or the base put back) was broken, 1 when the stored epoch was}. An outage's batch (``state.owed``): added
# once per marker; on another epoch (the server lost what it held) its base is put back where it exceeds the base
# already put back (a broken one read as none). A failed call the server ran anyway is taken out of the addition
# (memory counted it too); each gets a void reply, so a late copy of it, or a second merge, changes nothing.
MERGE = (
    _COUNT
    + _EPOCH_OF
    + """
local n, broken = count(KEYS[1], tonumber(ARGV[7]))
local epoch, damaged = epoch_of(KEYS[3], ARGV[8])
if epoch == nil then
  epoch = ARGV[6]
  redis.call('SET', KEYS[3], epoch)
end
if redis.call('EXISTS', KEYS[2]) == 1 then return {n, epoch, broken, damaged} end
local ran = 0  -- the failed calls the server ran anyway, bookings less give-backs
for i = 5, #KEYS do
  local done = redis.call('GET', KEYS[i])
  if done and cjson.decode(done)[1] == 1 then ran = ran + tonumber(ARGV[i + 4]) end
  redis.call('SET', KEYS[i], cjson.encode({0, 0, 0, 0}), 'PX', ARGV[#ARGV])  -- settled: never taken out twice
end
local ttl = redis.call('PTTL', KEYS[1])
local ms = math.max(tonumber(ARGV[3]), ttl)
local merged = n + tonumber(ARGV[1]) - ran
if ARGV[5] ~= '' and epoch ~= ARGV[5] then
  local put_back, lost = count(KEYS[4], tonumber(ARGV[7]))
  if lost == 1 then broken = 1 end
  local base = tonumber(ARGV[2])
  if base > put_back then
    merged = merged + base - put_back
    redis.call('SET', KEYS[4], base)
    if ms > 0 then redis.call('PEXPIRE', KEYS[4], ms) end
  end
end
merged = math.max(merged, 0)
redis.call('SET', KEYS[1], merged)
if ms > 0 then redis.call('PEXPIRE', KEYS[1], ms) end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[4])
return {merged, epoch, broken, damaged}
"""
)

# The cache's bookkeeping, shared by the scripts below. KEYS[3..6]: last use (sorted set, ms), expiry (sorted set,
# ms), sizes (hash), bytes in all; members are cache keys. A value whose own PX ran out is gone already; one evicted
# is named in the script's answer and unlinked by the caller (its key is not the script's to compute: a Redis
# Cluster runs only keys a script is handed).
_CACHE_BOOKS = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function forget(member)
  redis.call('ZREM', KEYS[3], member)
  redis.call('ZREM', KEYS[4], member)
  local size = redis.call('HGET', KEYS[5], member)
  if size then
    redis.call('HDEL', KEYS[5], member)
    redis.call('DECRBY', KEYS[6], size)
  end
end
local function forget_expired(now)
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 100)) do
    forget(member)
  end
end
"""
# KEYS: cache, lease, then the bookkeeping.  ARGV: owner, lease ms, member.  Returns {1, value} for a stored value
# (its last use noted), else {2} when the lease was taken, {0} while another holds it: a lease only while no value
# is stored (no double fetch).
GET_OR_LEASE = (
    _CACHE_BOOKS
    + """
local value = redis.call('GET', KEYS[1])
if value then
  redis.call('ZADD', KEYS[3], 'XX', now_ms(), ARGV[3])
  return {1, value}
end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end
return {0}
"""
)
# KEYS: lease.  ARGV: owner, lease ms.  Returns 1 when the owner still held it (and holds it longer).
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
# KEYS: cache, lease, then the bookkeeping.  ARGV: owner, ms to live ('': store nothing), value, member, max
# entries, max bytes (-1: none).  The value (the least recently used ones over the bounds evicted, the expired ones
# forgotten), then the owner's lease goes. Returns the members evicted (their values for the caller to unlink).
PUT_RELEASE = (
    _CACHE_BOOKS
    + """
local evicted = {}
if ARGV[2] ~= '' then
  local now = now_ms()
  forget_expired(now)
  forget(ARGV[4])
  local size = string.len(ARGV[3])
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
  redis.call('ZADD', KEYS[3], now, ARGV[4])
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), ARGV[4])
  redis.call('HSET', KEYS[5], ARGV[4], size)
  redis.call('INCRBY', KEYS[6], size)
  local max_entries, max_bytes = tonumber(ARGV[5]), tonumber(ARGV[6])
  for _ = 1, 100000 do
    local over = redis.call('ZCARD', KEYS[3]) > max_entries
    if not over and max_bytes >= 0 then over = tonumber(redis.call('GET', KEYS[6]) or '0') > max_bytes end
    if not over then break end
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if not oldest then  -- bytes counted for no entry (a clear under way): start the count again
      redis.call('SET', KEYS[6], 0)
      break
    end
    forget(oldest)
    if oldest == ARGV[4] then redis.call('DEL', KEYS[1]) else evicted[#evicted + 1] = oldest end
  end
end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return evicted
"""
)
# KEYS: cache, lease, then the bookkeeping.  ARGV: member.
CACHE_DROP = (
    _CACHE_BOOKS
    + """
forget(ARGV[1])
redis.call('DEL', KEYS[1])
return 0
"""
)
# KEYS: the bookkeeping only, from KEYS[3] (two placeholders first).  Returns {entries, bytes}.
CACHE_STATS = (
    _CACHE_BOOKS
    + """
forget_expired(now_ms())
return {redis.call('ZCARD', KEYS[3]), tonumber(redis.call('GET', KEYS[6]) or '0')}
"""
)
# KEYS: the bookkeeping.  Deletes it (the values are deleted by a scan).
CACHE_CLEAR = """
redis.call('DEL', unpack(KEYS))
return 0
"""
# KEYS: a plan.  Returns {the plan hash as field/value pairs, the server's clock: seconds, microseconds}: what a
# plan change starts from (``PLAN_SWAP`` writes it only if it is still what was read).
PLAN_READ = """
local t = redis.call('TIME')
return {redis.call('HGETALL', KEYS[1]), t[1], t[2]}
"""
# KEYS: a plan, ``once`` marker.  ARGV: the plan as read (JSON object of field -> text), the new plan (JSON object,
# the same), ms to keep the marker. Returns 1 when written, 0 when the plan changed since it was read (the caller
# reads it again): a compare-and-set, which a Redis Cluster runs as it runs every script (WATCH/MULTI it may not).
# Run ``once``: a retried swap answers 1 again instead of 0, which would have the change made twice.
PLAN_SWAP = once("""
local expected, current = cjson.decode(ARGV[1]), {}
local raw = redis.call('HGETALL', KEYS[1])
for i = 1, #raw, 2 do current[raw[i]] = raw[i + 1] end
local n = 0
for f, v in pairs(expected) do
  if current[f] ~= v then return 0 end
  n = n + 1
end
if n * 2 ~= #raw then return 0 end
redis.call('DEL', KEYS[1])
local pairs_out = {}
for f, v in pairs(cjson.decode(ARGV[2])) do pairs_out[#pairs_out + 1] = f; pairs_out[#pairs_out + 1] = v end
if #pairs_out > 0 then redis.call('HSET', KEYS[1], unpack(pairs_out)) end
return 1
""")
