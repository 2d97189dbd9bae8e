import { describe, expect, it } from 'vitest';
import type { LockoutConfig } from '../../../../src/config/config-schema.js';
import { parseConfig } from '../../../../src/config/load-config.js';
import type { Lockout, LockoutTarget } from '../../../../src/protection/lockout.js';
import { createMemoryLockout } from '../../../../src/backends/memory/lockout-store.js';

// The in-process lockout keeps at most lockout.maxTrackedCounters counters. A flood of junk
// attempts (new keys from new addresses: three counters each) must not push out the counters
// that hold an attacker back, or each flood would hand the attacker a fresh count.

const MAX_COUNTERS = 30;
const THRESHOLD = 4;

function config(): LockoutConfig {
  return parseConfig(
    JSON.stringify({
      lockout: {
        initialLockSec: 60,
        maxTrackedCounters: MAX_COUNTERS,
        basic: { keyAddress: { threshold: THRESHOLD, maxLockSec: 600 } },
      },
    }),
    'memory-lockout.yaml',
  ).lockout;
}

const VICTIM: LockoutTarget = {
  kind: 'basic',
  id: 'ak_victim',
  address: '10.9.0.1',
  network: '10.9.0.1',
};

async function fail(lockout: Lockout, target: LockoutTarget) {
  const decision = await lockout.begin(target);
  if (decision.kind !== 'allow') throw new Error(`refused: ${JSON.stringify(decision)}`);
  return decision.attempt.settle('failure');
}

/** Ten times the bound of junk counters: a new key from a new address each time. */
async function flood(lockout: Lockout): Promise<void> {
  for (let i = 0; i < MAX_COUNTERS * 10; i += 1) {
    const address = `10.8.${Math.floor(i / 250)}.${i % 250}`;
    await fail(lockout, { kind: 'basic', id: `ak_junk${i}`, address, network: address });
  }
}

describe('memory lockout under a flood of junk counters', () => {
  it('keeps a victim counter at half its threshold: two more failures still lock it', async () => {
    const lockout = createMemoryLockout(config());
    await fail(lockout, VICTIM);
    await fail(lockout, VICTIM);
    await flood(lockout);
    expect(await fail(lockout, VICTIM)).toEqual([]);
    expect(await fail(lockout, VICTIM)).toEqual([
      { scope: 'basic_key_address', lockSec: 60, failures: THRESHOLD },
    ]);
    expect(await lockout.begin(VICTIM)).toMatchObject({
      kind: 'refuse',
      scope: 'basic_key_address',
    });
  });

  it('keeps a locked counter locked', async () => {
    const lockout = createMemoryLockout(config());
    for (let i = 0; i < THRESHOLD; i += 1) await fail(lockout, VICTIM);
    await flood(lockout);
    expect(await lockout.begin(VICTIM)).toMatchObject({
      kind: 'refuse',
      scope: 'basic_key_address',
    });
  });

  it('still forgets ordinary counters beyond the bound, least recently used first', async () => {
    const lockout = createMemoryLockout(config());
    // One failure each: below half the threshold, so a flood may push them out.
    await fail(lockout, VICTIM);
    await flood(lockout);
    for (let i = 1; i < THRESHOLD; i += 1) expect(await fail(lockout, VICTIM)).toEqual([]);
  });
});
