import { luaScript as script } from '../luaScript.js';

/**
 * The pool's Lua scripts. Every script starts with the same prologue: it reads Redis `TIME` (one
 * clock for every instance), reclaims the leases whose expiry has passed (a crashed holder's lease
 * frees itself) and publishes the units that freed, so waiters elsewhere wake up.
 *
 * Keys (one hash tag, so one Cluster slot): KEYS[1] a sorted set of leases scored by expiry (ms,
 * Redis time), members `<lease id>#<cost>`; KEYS[2] the units in use (the sum of the members' costs,
 * rebuilt from the set if it is ever missing). ARGV[1] is the channel a release publishes on.
 * Both keys expire 1 s after the last lease: an abandoned pool leaves nothing behind.
 */
const PROLOGUE = `
local leases, used, channel = KEYS[1], KEYS[2], ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function costOf(member) return tonumber(string.match(member, '#(%d+)$')) or 1 end
local inuse
local raw = redis.call('GET', used)
if raw then
  inuse = tonumber(raw)
  local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
  if #expired > 0 then
    local freed = 0
    for i = 1, #expired do freed = freed + costOf(expired[i]) end
    redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
    inuse = math.max(0, inuse - freed)
    redis.call('SET', used, inuse, 'KEEPTTL')
    redis.call('PUBLISH', channel, freed)
  end
else
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  inuse = 0
  local live = redis.call('ZRANGE', leases, 0, -1)
  for i = 1, #live do inuse = inuse + costOf(live[i]) end
end
local function store()
  local last = redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')
  if last[2] then
    local at = tonumber(last[2]) + 1000
    redis.call('SET', used, inuse, 'PXAT', at)
    redis.call('PEXPIREAT', leases, at)
  else
    redis.call('DEL', leases, used)
  end
end
`;

/** ARGV: channel, member, cost, limit, ttlMs. Returns `{1, inuse}` (granted) or `{0, inuse}`. */
const ACQUIRE = `${PROLOGUE}
local cost, limit, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if inuse + cost > limit then return {0, inuse} end
redis.call('ZADD', leases, now + ttl, ARGV[2])
inuse = inuse + cost
store()
return {1, inuse}
`;

/**
 * ARGV: channel, member, and optionally the releasing instance's id. Returns `{removed (1 or 0: it had
 * expired), inuse}`; publishes `<cost>` or `<cost>:<instance>` (that instance woke its own waiters).
 */
const RELEASE = `${PROLOGUE}
local removed = redis.call('ZREM', leases, ARGV[2])
if removed == 1 then
  local cost = costOf(ARGV[2])
  inuse = math.max(0, inuse - cost)
  store()
  redis.call('PUBLISH', channel, ARGV[3] and (cost .. ':' .. ARGV[3]) or cost)
end
return {removed, inuse}
`;

/** ARGV: channel, ttlMs, member... Returns one flag per member: 1 renewed, 0 gone (expired or never there). */
const RENEW = `${PROLOGUE}
local ttl = tonumber(ARGV[2])
local out = {}
for i = 3, #ARGV do
  if redis.call('ZSCORE', leases, ARGV[i]) then
    redis.call('ZADD', leases, 'XX', now + ttl, ARGV[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
store()
return out
`;

/** ARGV: channel. Returns `{inuse, leases}` after reclaiming. */
const STATUS = `${PROLOGUE}
return {inuse, redis.call('ZCARD', leases)}
`;

/** @internal The pool's scripts. */
export const poolScripts = {
  acquire: script(ACQUIRE),
  release: script(RELEASE),
  renew: script(RENEW),
  status: script(STATUS),
} as const;
