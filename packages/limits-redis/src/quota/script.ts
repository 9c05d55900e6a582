import { luaScript } from '../luaScript.js';

/**
 * @internal The whole multi-axis judgement of a quota, in one script (so atomic on Redis).
 *
 * KEYS: one counter per axis, in judgement order (a hash `{ w: window index, n: count }`).
 * ARGV: windowMs, amount, then each axis' limit.
 * Reply: `{ refused, resetInMs, count1, …, countN }` where `refused` is the 1-based index of the first
 * axis whose count + amount exceeds its limit (nothing charged), or 0 when every axis was charged.
 *
 * The time is Redis `TIME`, so every client shares one clock. A counter whose stored window is not
 * the current one counts 0 (the window index is stored, not inferred from expiry, so a key read at
 * the very end of its window is never carried into the next). Each key expires at its window's end.
 */
const QUOTA_SCRIPT_SOURCE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local windowMs = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])
local win = math.floor(now / windowMs)
local endMs = (win + 1) * windowMs
local counts = {}
for i = 1, #KEYS do
  local v = redis.call('HMGET', KEYS[i], 'w', 'n')
  local c = 0
  if v[1] and tonumber(v[1]) == win then c = tonumber(v[2]) end
  counts[i] = c
end
for i = 1, #KEYS do
  if counts[i] + amount > tonumber(ARGV[2 + i]) then
    return {i, endMs - now, unpack(counts)}
  end
end
for i = 1, #KEYS do
  counts[i] = counts[i] + amount
  redis.call('HSET', KEYS[i], 'w', string.format('%d', win), 'n', counts[i])
  redis.call('PEXPIREAT', KEYS[i], string.format('%d', endMs))
end
return {0, endMs - now, unpack(counts)}
`;

/** @internal The script and its SHA-1 (the doc above). */
export const QUOTA_SCRIPT = luaScript(QUOTA_SCRIPT_SOURCE);
