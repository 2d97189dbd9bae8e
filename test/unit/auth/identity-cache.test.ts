import { describe, expect, it } from 'vitest';
import { createIdentityCache } from '../../../src/auth/identity-cache.js';
import type { Identity } from '../../../src/identity/identity.js';

const basic = (key: string, subject: string): Identity => ({
  subject,
  method: 'basic',
  key,
  scopes: [],
});
const bearer = (subject: string): Identity => ({
  subject,
  method: 'bearer',
  source: 'gw',
  scopes: [],
});

describe('createIdentityCache', () => {
  it('evicts every entry of a key and nothing else', () => {
    const cache = createIdentityCache({ maxEntries: 10, ttlMs: 60_000 });
    cache.set('a1', basic('ak_a', 'alice'));
    cache.set('a2', basic('ak_a', 'alice'));
    cache.set('b1', basic('ak_b', 'alice'));
    cache.evictKey('ak_a');
    expect([cache.get('a1'), cache.get('a2'), cache.get('b1')]).toEqual([
      undefined,
      undefined,
      basic('ak_b', 'alice'),
    ]);
  });

  it('evicts every entry of a subject, Basic and Bearer alike, and nothing else', () => {
    const cache = createIdentityCache({ maxEntries: 10, ttlMs: 60_000 });
    cache.set('a1', basic('ak_a', 'alice'));
    cache.set('t1', bearer('alice'));
    cache.set('c1', basic('ak_c', 'carol'));
    cache.evictSubject('alice');
    expect([cache.get('a1'), cache.get('t1'), cache.get('c1')]).toEqual([
      undefined,
      undefined,
      basic('ak_c', 'carol'),
    ]);
    expect(cache.size).toBe(1);
  });

  it('forgets an entry the LRU pushed out, so a later eviction of its key touches no other entry', () => {
    const cache = createIdentityCache({ maxEntries: 2, ttlMs: 60_000 });
    cache.set('a1', basic('ak_a', 'alice'));
    cache.set('b1', basic('ak_b', 'bob'));
    cache.set('c1', basic('ak_c', 'carol'));
    expect(cache.get('a1')).toBeUndefined();
    // Pushed out and re-verified under the same id: filed again, evictable again.
    cache.set('a1', basic('ak_a', 'alice'));
    cache.evictKey('ak_a');
    expect([cache.get('a1'), cache.get('c1')]).toEqual([undefined, basic('ak_c', 'carol')]);
  });

  it('files a replaced entry under its new key and subject only', () => {
    const cache = createIdentityCache({ maxEntries: 10, ttlMs: 60_000 });
    cache.set('x', basic('ak_a', 'alice'));
    cache.set('x', basic('ak_b', 'bob'));
    cache.evictKey('ak_a');
    cache.evictSubject('alice');
    expect(cache.get('x')).toEqual(basic('ak_b', 'bob'));
    cache.evictSubject('bob');
    expect(cache.get('x')).toBeUndefined();
  });

  it('ends an entry at its own time by the injected clock', () => {
    const clock = { ms: 1_000 };
    const cache = createIdentityCache({ maxEntries: 10, ttlMs: 60_000, now: () => clock.ms });
    cache.set('t1', bearer('alice'), 1_500);
    clock.ms += 499;
    expect(cache.get('t1')).toEqual(bearer('alice'));
    clock.ms += 2;
    expect(cache.get('t1')).toBeUndefined();
  });

  it('keeps an entry no longer than the cache TTL when its credential ends later', () => {
    const clock = { ms: 1_000 };
    const cache = createIdentityCache({ maxEntries: 10, ttlMs: 1_000, now: () => clock.ms });
    cache.set('a1', basic('ak_a', 'alice'), 1_000_000);
    clock.ms += 999;
    expect(cache.get('a1')).toEqual(basic('ak_a', 'alice'));
    clock.ms += 2;
    expect(cache.get('a1')).toBeUndefined();
  });

  it('caches nothing for a credential whose end has come', () => {
    const clock = { ms: 5_000 };
    const cache = createIdentityCache({ maxEntries: 10, ttlMs: 60_000, now: () => clock.ms });
    cache.set('a1', basic('ak_a', 'alice'), 5_000);
    expect(cache.get('a1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('does not file an entry the byte bound refused', () => {
    const cache = createIdentityCache({
      maxEntries: 10,
      ttlMs: 60_000,
      maxSize: 100,
      sizeOf: (id) => id.length,
    });
    cache.set('x'.repeat(101), bearer('alice'));
    cache.set('t1', bearer('alice'));
    cache.evictSubject('alice');
    expect([cache.size, cache.get('t1')]).toEqual([0, undefined]);
  });

  it('clears entries and indexes together', () => {
    const cache = createIdentityCache({ maxEntries: 10, ttlMs: 60_000 });
    cache.set('a1', basic('ak_a', 'alice'));
    cache.clear();
    cache.set('b1', basic('ak_a', 'alice'));
    cache.evictKey('ak_a');
    expect(cache.size).toBe(0);
  });

  it('counts hits, misses, and as evictions only the entries its bound pushed out', () => {
    // Not 0: lru-cache reads an entry set at time 0 as one without a TTL.
    const clock = { ms: 1_000 };
    const counters = { hits: 0, misses: 0, evictions: 0 };
    const cache = createIdentityCache({
      maxEntries: 2,
      ttlMs: 1_000,
      now: () => clock.ms,
      counters,
    });
    cache.set('a1', basic('ak_a', 'alice'));
    cache.set('b1', basic('ak_b', 'bob'));
    cache.get('a1');
    cache.get('zz');
    cache.set('c1', basic('ak_c', 'carol')); // over the bound: b1, the least recently used, goes
    cache.evictKey('ak_a'); // revoked: not an eviction
    clock.ms = 3_000;
    cache.get('c1'); // expired: a miss, not an eviction
    expect(counters).toEqual({ hits: 1, misses: 2, evictions: 1 });
  });
});
