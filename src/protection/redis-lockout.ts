import type { LockoutConfig } from '../config/config-schema.js';
import type { ScriptRunner } from '../credentials/credential-store.js';
import { RESERVATION_MS, type LockoutLimit } from './lockout-policy.js';
import {
  counterIds,
  counterLimits,
  LOCKOUT_SCOPES,
  toRetryAfterSec,
  type LockStarted,
  type Lockout,
  type LockoutTarget,
} from './lockout.js';

/**
 * The policy of lockout-policy.ts in Lua, one script for every step so that each is atomic
 * across instances and workers, on Redis's clock. A counter is a hash: `f` failures, `p`
 * pending attempts, `pt` when the last was reserved, `lu` locked until (ms); each expires
 * (PEXPIRE) `windowMs` after its lock ends, and never sooner than a reservation's life.
 *
 * ARGV: op (`begin`, `check`, `success`, `failure`, `error`), windowMs, reservationMs, then
 * per key: threshold, initialLockMs, maxLockMs.
 * Returns for begin/check: {0} (allowed, reserved unless check) or {1, index, waitMs, locked}
 * (locked 1 when that counter is locked, 0 when only its attempts in flight refuse);
 * for failure: {index, lockMs, failures}... of each lock started; otherwise {}.
 */
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
local windowMs = tonumber(ARGV[2])
local reservationMs = tonumber(ARGV[3])

local function lockMsAfter(f, threshold, initial, cap)
  if f < threshold then return 0 end
  return math.min(initial * 2 ^ (f - threshold), cap)
end

local function keep(key, lu)
  local ms = math.max(math.max(0, lu - now) + windowMs, reservationMs)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end

local states = {}
for i, key in ipairs(KEYS) do
  local v = redis.call('HMGET', key, 'f', 'p', 'pt', 'lu')
  local s = { f = tonumber(v[1]) or 0, p = tonumber(v[2]) or 0, pt = tonumber(v[3]) or 0,
    lu = tonumber(v[4]) or 0, exists = v[1] ~= false or v[2] ~= false }
  if now - s.pt > reservationMs then s.p = 0 end
  local base = 3 + (i - 1) * 3
  s.threshold = tonumber(ARGV[base + 1])
  s.initial = tonumber(ARGV[base + 2])
  s.cap = tonumber(ARGV[base + 3])
  states[i] = s
end

if op == 'begin' or op == 'check' then
  local longest, which, locked = 0, 0, 0
  for i, s in ipairs(states) do
    local wait, lock = 0, 0
    if s.lu > now then
      wait, lock = s.lu - now, 1
    elseif s.p > 0 and s.f + s.p >= s.threshold then
      wait = math.max(1, lockMsAfter(s.f + s.p, s.threshold, s.initial, s.cap))
    end
    if wait > longest then longest, which, locked = wait, i, lock end
  end
  if longest > 0 then return { 1, which, longest, locked } end
  if op == 'check' then return { 0 } end
  for i, key in ipairs(KEYS) do
    redis.call('HSET', key, 'f', states[i].f, 'p', states[i].p + 1, 'pt', now, 'lu', states[i].lu)
    keep(key, states[i].lu)
  end
  return { 0 }
end

local locks = {}
for i, key in ipairs(KEYS) do
  local s = states[i]
  if op == 'success' and i == 2 then
    redis.call('DEL', key)
  elseif op == 'failure' then
    local f = s.f + 1
    local lockMs = lockMsAfter(f, s.threshold, s.initial, s.cap)
    local lu = s.lu
    if lockMs > 0 then
      lu = now + lockMs
      table.insert(locks, i)
      table.insert(locks, lockMs)
      table.insert(locks, f)
    end
    redis.call('HSET', key, 'f', f, 'p', math.max(0, s.p - 1), 'lu', lu)
    keep(key, lu)
  elseif s.exists then
    redis.call('HSET', key, 'p', math.max(0, s.p - 1))
  end
end
return locks
`;

/** The lockout shared by every gateway on one Redis, through the store's script runner. */
export function createRedisLockout(config: LockoutConfig, scripts: ScriptRunner): Lockout {
  const windowMs = config.windowSec * 1000;
  const args = (op: string, limits: readonly LockoutLimit[]): (string | number)[] => [
    op,
    windowMs,
    RESERVATION_MS,
    ...limits.flatMap((l) => [l.threshold, l.initialLockMs, l.maxLockMs]),
  ];
  const keysOf = (target: Pick<LockoutTarget, 'kind' | 'id' | 'network'>): string[] =>
    counterIds(target).map((id) => scripts.keyPrefix + id);
  const refusal = (kind: LockoutTarget['kind'], reply: unknown) => {
    const [refused, index, wait, locked] = reply as [number, number?, number?, number?];
    if (refused !== 1) return undefined;
    const scopes = LOCKOUT_SCOPES[kind];
    return {
      kind: 'refuse' as const,
      scope: scopes[(index ?? 1) - 1] ?? scopes[0],
      retryAfterSec: toRetryAfterSec(wait ?? 0),
      locked: locked === 1,
    };
  };

  return {
    async begin(target) {
      const keys = keysOf(target);
      const limits = counterLimits(config, target.kind);
      const refused = refusal(target.kind, await scripts.run(SCRIPT, keys, args('begin', limits)));
      if (refused !== undefined) return refused;
      let settled = false;
      return {
        kind: 'allow',
        attempt: {
          async settle(outcome) {
            if (settled) return [];
            settled = true;
            const reply = (await scripts.run(SCRIPT, keys, args(outcome, limits))) as number[];
            const locks: LockStarted[] = [];
            for (let i = 0; i + 2 < reply.length; i += 3) {
              const scopes = LOCKOUT_SCOPES[target.kind];
              locks.push({
                scope: scopes[(reply[i] ?? 1) - 1] ?? scopes[0],
                lockSec: (reply[i + 1] ?? 0) / 1000,
                failures: reply[i + 2] ?? 0,
              });
            }
            return locks;
          },
        },
      };
    },
    async checkAddress(kind, network) {
      const keys = keysOf({ kind, id: '', network }).slice(0, 1);
      const limits = counterLimits(config, kind).slice(0, 1);
      return refusal(kind, await scripts.run(SCRIPT, keys, args('check', limits)));
    },
  };
}
