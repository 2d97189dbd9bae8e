import { describe, expect, it } from 'vitest';
import { bucketKey } from '../../../src/protection/local-buckets.js';
import type { BucketId } from '../../../src/protection/rate-bucket-store.js';

describe('a bucket as one string', () => {
  it('reads one way only, whatever a route, key or subject holds', () => {
    const buckets: BucketId[] = [
      { kind: 'credential', owner: { kind: 'key', key: 'ak_1', subject: 'alice' } },
      { kind: 'credential', owner: { kind: 'subject', subject: 'ak_1' } },
      { kind: 'subject', subject: 'ak_1' },
      { kind: 'subject', subject: '4:ak_1' },
      { kind: 'route', route: 'a', owner: { kind: 'key', key: 'b', subject: 's' } },
      { kind: 'route', route: 'a1:b', owner: { kind: 'subject', subject: '' } },
      { kind: 'route', route: 'ak', owner: { kind: 'subject', subject: 'k1:b' } },
      { kind: 'address', network: '10.0.0.0/24' },
      { kind: 'subject', subject: '10.0.0.0/24' },
    ];
    const keys = buckets.map(bucketKey);
    expect(new Set(keys).size).toBe(buckets.length);
  });

  it('leaves the subject out of a pair’s credential bucket: the key alone names it', () => {
    expect(
      bucketKey({ kind: 'credential', owner: { kind: 'key', key: 'ak_1', subject: 'alice' } }),
    ).toBe(bucketKey({ kind: 'credential', owner: { kind: 'key', key: 'ak_1', subject: 'bob' } }));
  });
});
