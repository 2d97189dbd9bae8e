import { beforeAll, describe, expect, it } from 'vitest';
import { createSecretVerifier } from '../../../src/auth/secret-verifier.js';
import { createSecretHasher } from '../../../src/credentials/secret-hasher.js';
import { countingHasher } from '../../support/counting-hasher.js';

// The gateway at cost 5; stored hashes at 4 (cheaper), 5 and 6 (dearer), and in every variant.
const CONFIGURED_COST = 5;
const SECRET = 'the-secret-0123456789';

let dummyHash: string;
let cheap: string;
let current: string;
let dear: string;

beforeAll(async () => {
  const hashAt = (cost: number, secret = SECRET) => createSecretHasher(cost).hash(secret);
  [dummyHash, cheap, current, dear] = await Promise.all([
    hashAt(CONFIGURED_COST, 'a random dummy secret'),
    hashAt(4),
    hashAt(CONFIGURED_COST),
    hashAt(6),
  ]);
});

function setup() {
  const hasher = countingHasher(createSecretHasher(CONFIGURED_COST));
  const verifier = createSecretVerifier({
    hasher,
    dummyHash,
    maxConcurrentHashes: 4,
    maxQueuedHashes: 16,
  });
  return { hasher, verifier };
}

describe('createSecretVerifier: verify', () => {
  it('compares a wrong secret against a hash cheaper than the configured cost and against the dummy hash, so it costs no less than an unknown key', async () => {
    const { hasher, verifier } = setup();
    await expect(verifier.verify('wrong', cheap)).resolves.toBe(false);
    expect(hasher.compares()).toEqual([
      { secret: 'wrong', hash: cheap },
      { secret: 'wrong', hash: dummyHash },
    ]);
  });

  it('answers the right secret of a cheaper hash true, the dummy compare beside it changing nothing', async () => {
    const { verifier } = setup();
    await expect(verifier.verify(SECRET, cheap)).resolves.toBe(true);
  });

  it('pairs a stored hash bcrypt would answer at once (malformed) with the dummy hash too', async () => {
    const { hasher, verifier } = setup();
    const malformed = `${current}\u0000`;
    await expect(verifier.verify(SECRET, malformed)).resolves.toBe(false);
    expect(hasher.compares().map((c) => c.hash)).toEqual([malformed, dummyHash]);
  });

  it('compares once against a hash at or above the configured cost, whatever the answer', async () => {
    const { hasher, verifier } = setup();
    await expect(verifier.verify('wrong', current)).resolves.toBe(false);
    await expect(verifier.verify(SECRET, dear)).resolves.toBe(true);
    expect(hasher.compares().map((c) => c.hash)).toEqual([current, dear]);
  });

  it('compares an absent hash against the dummy hash once and answers false', async () => {
    const { hasher, verifier } = setup();
    await expect(verifier.verify(SECRET, undefined)).resolves.toBe(false);
    expect(hasher.compares()).toEqual([{ secret: SECRET, hash: dummyHash }]);
  });
});

describe('createSecretVerifier: isCurrent', () => {
  it('holds only $2b$ hashes at the configured cost as current', () => {
    const { verifier } = setup();
    expect(verifier.isCurrent(current)).toBe(true);
    expect(verifier.isCurrent(cheap)).toBe(false);
    expect(verifier.isCurrent(dear)).toBe(false);
    expect(verifier.isCurrent(`$2y$${current.slice(4)}`)).toBe(false);
    expect(verifier.isCurrent(`$2a$${current.slice(4)}`)).toBe(false);
    expect(verifier.isCurrent('not a hash')).toBe(false);
  });
});
