import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import {
  createLeasedBuckets,
  RETRY_SHARED_AFTER_US,
  type LeaseSettings,
} from '../../../src/protection/leased-buckets.js';
import { createLocalBucketStore } from '../../../src/protection/local-buckets.js';
import type {
  BucketRequest,
  RateBucketStore,
  TakeResult,
} from '../../../src/protection/rate-bucket-store.js';
import type { RatePolicy } from '../../../src/protection/rate-policy.js';

// Processes sharing one bucket store on a simulated clock: every lease protocol property is
// read exactly, without a timer. The shared store is the in-process GCRA (the Redis script's
// twin, compared in rate-bucket-store-contract.test.ts).

const SETTINGS: LeaseSettings = { spanMs: 25, lifeMs: 1000 };
const SEC = 1_000_000;
/** 1,000 requests per second, a burst of 100. */
const POLICY: RatePolicy = { requests: 1000, periodSec: 1, burst: 100 };

interface Fleet {
  clock: number;
  /** Takes the shared store answered (its round trips). */
  calls: number;
  failing: boolean;
  readonly shared: RateBucketStore;
}

function fleet(): Fleet {
  const f: Fleet = {
    clock: 0,
    calls: 0,
    failing: false,
    shared: {
      shared: true,
      take(request) {
        if (f.failing)
          return Promise.reject(
            new GatewayError('credential_store_unavailable', { cause: new Error('down') }),
          );
        f.calls += 1;
        return Promise.resolve(inner.take(request));
      },
    },
  };
  const inner = createLocalBucketStore({ maxBuckets: 100, nowUs: () => f.clock });
  return f;
}

function processOn(
  f: Fleet,
  fallbacks: unknown[] = [],
  settings: LeaseSettings = SETTINGS,
  maxLeases = 100,
): RateBucketStore {
  return createLeasedBuckets(settings, {
    shared: f.shared,
    fallback: createLocalBucketStore({ maxBuckets: 100, nowUs: () => f.clock }),
    onFallback: (error) => fallbacks.push(error),
    maxLeases,
    nowUs: () => f.clock,
  });
}

const bucket = (over: Partial<BucketRequest> = {}): BucketRequest => ({
  bucket: { kind: 'subject', subject: 'alice' },
  policy: POLICY,
  ...over,
});

async function send(
  store: RateBucketStore,
  over: Partial<BucketRequest> = {},
): Promise<TakeResult> {
  return store.take({ buckets: [bucket(over)] });
}

/**
 * Sends `rate` requests per second from each process, for `seconds`, evenly spaced and
 * interleaved; counts what each admitted.
 */
async function load(
  f: Fleet,
  processes: readonly { store: RateBucketStore; rate: number }[],
  seconds: number,
): Promise<number[]> {
  const admitted = processes.map(() => 0);
  const events: { at: number; who: number }[] = [];
  const start = f.clock;
  processes.forEach(({ rate }, who) => {
    for (let i = 0; i < rate * seconds; i += 1)
      events.push({ at: start + Math.floor(((i + 0.5) * SEC) / rate), who });
  });
  events.sort((a, b) => a.at - b.at || a.who - b.who);
  for (const { at, who } of events) {
    f.clock = at;
    const result = await send(processes[who]?.store ?? f.shared);
    if (result.allowed) admitted[who] = (admitted[who] ?? 0) + 1;
  }
  f.clock = start + seconds * SEC;
  return admitted;
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

describe('lease-mode buckets', () => {
  it('cost a steady credential a small fraction of a store call per request', async () => {
    const f = fleet();
    const [admitted] = await load(f, [{ store: processOn(f), rate: 800 }], 5);
    expect(admitted).toBe(4000);
    // A lease is 25 ms of this process's demand: 20 requests, one call each.
    expect(f.calls / 4000).toBeLessThanOrEqual(0.06);
  });

  it('ask the store for every request in exact mode', async () => {
    const f = fleet();
    const store = processOn(f);
    for (let i = 0; i < 50; i += 1) await send(store, { mode: 'exact' });
    expect(f.calls).toBe(50);
  });

  it('admit what the policy allows within ±2% over 5 s across a skewed fleet that switches sides', async () => {
    const f = fleet();
    const processes = [0, 1, 2, 3].map(() => processOn(f));
    // Twice the limit in all, 90% of it on the first two processes, then on the other two.
    const hot = 900;
    const cold = 100;
    const first = await load(
      f,
      processes.map((store, i) => ({ store, rate: i < 2 ? hot : cold })),
      5,
    );
    const second = await load(
      f,
      processes.map((store, i) => ({ store, rate: i < 2 ? cold : hot })),
      5,
    );
    // The first 5 s also hold the burst (100); later windows only the rate.
    expect(Math.abs(sum(first) - 5100) / 5000).toBeLessThanOrEqual(0.02);
    expect(Math.abs(sum(second) - 5000) / 5000).toBeLessThanOrEqual(0.02);
    // The bound: never more than the policy plus one lease (25 ms of the rate) per process.
    expect(sum(first) + sum(second)).toBeLessThanOrEqual(100 + 10_000 + 4 * 25);
    // Over its limit, the fleet still asks the store about once per lease, and not for the
    // requests it refuses: 20,000 were checked.
    expect(f.calls / 20_000).toBeLessThanOrEqual(0.1);
  });

  it('never admit more than the policy plus one lease per process, over any interval', async () => {
    const f = fleet();
    const processes = [0, 1, 2].map(() => processOn(f));
    const times: number[] = [];
    // Bursts from all three, far over the limit, at uneven moments.
    for (let round = 0; round < 200; round += 1) {
      f.clock += ((round * 7919) % 13) * 1000;
      for (const store of processes)
        for (let i = 0; i < 5; i += 1) if ((await send(store)).allowed) times.push(f.clock);
    }
    for (let i = 0; i < times.length; i += 1) {
      for (let j = i; j < times.length; j += 25) {
        const elapsedSec = ((times[j] ?? 0) - (times[i] ?? 0)) / SEC;
        expect(j - i + 1).toBeLessThanOrEqual(POLICY.burst + elapsedSec * 1000 + 3 * 25);
      }
    }
  });

  it('lose at most the lease a process held when it dies', async () => {
    const f = fleet();
    const dying = processOn(f);
    await load(f, [{ store: dying, rate: 2000 }], 1);
    // The bucket is empty now, and the dead process held at most one lease of 25.
    const [admitted] = await load(f, [{ store: processOn(f), rate: 2000 }], 5);
    // Besides the dead one's lease: at most one lease of the living process unspent at the
    // end, and one accrued in the store while it waited for it.
    expect(admitted).toBeGreaterThanOrEqual(5000 - 3 * 25);
    expect(admitted).toBeLessThanOrEqual(5000);
  });

  it('take the next lease before this one is spent: steady traffic never waits for the store', async () => {
    const f = fleet();
    const store = processOn(f);
    await send(store);
    // 800 a second for a second: a request decided in process answers at once (not a
    // promise); one that finds the lease spent waits for the store's answer.
    let decidedAtOnce = 0;
    for (let i = 1; i < 800; i += 1) {
      f.clock = i * 1250;
      const result = store.take({ buckets: [bucket()] });
      if (!(result instanceof Promise)) decidedAtOnce += 1;
      expect((await result).allowed).toBe(true);
    }
    // Only the first ones, before the process knew its demand, waited for a lease.
    expect(decidedAtOnce).toBeGreaterThanOrEqual(790);
  });

  it('take one lease at a time: requests arriving meanwhile await it', async () => {
    const f = fleet();
    const store = processOn(f);
    const results = await Promise.all(Array.from({ length: 64 }, () => send(store)));
    expect(results.every((r) => r.allowed)).toBe(true);
    // Each lease is as large as allowed (25): the first request's, then the waiting ones'.
    expect(f.calls).toBeLessThanOrEqual(4);
  });

  it('refuse without asking the store until the next lease would be there', async () => {
    const f = fleet();
    const store = processOn(f);
    // The burst (100) at one instant: leases of at most 25 (the next taken while a quarter of
    // the last is left), the last one emptying the bucket.
    for (let i = 0; i < 100; i += 1) expect((await send(store)).allowed).toBe(true);
    const calls = f.calls;
    expect(calls).toBeLessThanOrEqual(6);
    const refused = await send(store);
    expect(refused.allowed).toBe(false);
    expect(f.calls).toBe(calls);
    // The next lease is there at most 25 ms on (one request per ms).
    expect(refused.retryAfterUs).toBeGreaterThan(0);
    expect(refused.retryAfterUs).toBeLessThanOrEqual(25_000);
    expect(refused.states[0]).toMatchObject({ name: 'subject', remaining: 0, granted: 0 });
  });

  it('keep limiting while the store is gone: the lease first, then the fallback at the policy', async () => {
    const f = fleet();
    const fallbacks: unknown[] = [];
    const store = processOn(f, fallbacks);
    await load(f, [{ store, rate: 800 }], 1);
    f.failing = true;
    // Over the limit for 2 s: the fallback admits the policy (its own burst, then the rate).
    const [admitted] = await load(f, [{ store, rate: 2000 }], 2);
    expect(admitted).toBeGreaterThanOrEqual(2000);
    expect(admitted).toBeLessThanOrEqual(2000 + 100 + 25);
    // Each failure reported; the store is tried again once a second, not per request.
    expect(fallbacks.length).toBeGreaterThanOrEqual(1);
    expect(fallbacks.length).toBeLessThanOrEqual(3);
    f.failing = false;
    f.clock += RETRY_SHARED_AFTER_US;
    const calls = f.calls;
    await send(store);
    expect(f.calls).toBe(calls + 1);
  });

  it('never refuse for a shadow limit, and report the requests it would have refused', async () => {
    const f = fleet();
    const store = processOn(f);
    const results: TakeResult[] = [];
    for (let i = 0; i < 150; i += 1) results.push(await send(store, { enforce: false }));
    expect(results.every((r) => r.allowed)).toBe(true);
    const wouldRefuse = results.filter((r) =>
      r.states.some((s) => !s.enforced && s.granted === 0 && s.remaining === 0),
    );
    // A burst of 100 at one instant: the other 50 would have been refused.
    expect(wouldRefuse).toHaveLength(50);
  });

  it('read the policy again when a lease lapses, and drop what it held', async () => {
    const f = fleet();
    const store = processOn(f);
    await send(store);
    await send(store);
    // The second request was spent from the lease the first took.
    expect(f.calls).toBe(1);
    f.clock += SETTINGS.lifeMs * 1000;
    await send(store);
    expect(f.calls).toBe(2);
  });

  it('drop the oldest lease past maxLeases: what it held is lost, never admitted twice', async () => {
    const f = fleet();
    const store = processOn(f, [], SETTINGS, 1);
    const alice = { bucket: { kind: 'subject', subject: 'alice' } } as const;
    const bob = { bucket: { kind: 'subject', subject: 'bob' } } as const;
    let admitted = 0;
    // Alternating, each take drops the other's lease: every request asks the store again,
    // and the tokens a dropped lease held stay charged there.
    for (let i = 0; i < 200; i += 1) {
      const result = await send(store, i % 2 === 0 ? alice : bob);
      if (result.allowed) admitted += 1;
    }
    expect(f.calls).toBe(200);
    // Two bursts of 100 at one instant, less what the dropped leases held.
    expect(admitted).toBeLessThan(200);
    expect(admitted).toBeGreaterThan(0);
  });
});
