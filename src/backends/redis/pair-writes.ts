import type { CredentialStore, KeyRecord } from '../../credentials/credential-store.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { parseKeyId } from '../../identity/key-id.js';
import type { RedisLayout } from './layout.js';
import type { FoundPair, PairLookup } from './pair-lookup.js';
import { pairsHere, pairsInSingleSlot, type PairRun } from './pair-runs.js';
import type { ScriptRunner } from './run-script.js';
import {
  COUNT_ACTIVE_PAIRS,
  CREATE_PAIR,
  REPLACE_HASH,
  REVOKE_PAIR,
  REVOKE_SUBJECT_PAIRS,
} from './scripts.js';
import type { SingleSlot } from './single-slot.js';
import type { SubjectPairs } from './subject-pairs.js';

export interface PairWritesDeps {
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  readonly single: SingleSlot | undefined;
  readonly lookup: PairLookup;
  readonly pairs: SubjectPairs;
  /** A pair script run where the pairs are, moving none. */
  readonly runPairs: PairRun;
}

type PairWrites = Pick<
  CredentialStore,
  'createKey' | 'revokeKey' | 'revokeSubjectKeys' | 'replaceHash'
>;

/** The changes to pairs (and the compare-and-set of a user's hash, which replaceHash shares). */
export function redisPairWrites(deps: PairWritesDeps): PairWrites {
  const { layout, pairs } = deps;
  return {
    createKey: createKeyWith(deps),
    revokeKey: revokeKeyWith(deps),
    revokeSubjectKeys: (subject, at) =>
      pairs.run(
        REVOKE_SUBJECT_PAIRS,
        subject,
        pairsHere(layout, subject),
        {},
        { revokedAt: at, channel: layout.channel },
      ),
    replaceHash: replaceHashWith(deps),
  };
}

/** A new pair's id as claimed for its subject; `release` undoes the claim, when it made one. */
interface IdClaim {
  readonly free: boolean;
  release(): Promise<void>;
}

/**
 * Claims the id `key` of a new pair of `subject`. A self-describing id must carry the
 * subject's tag; an id without one is found through its index entry, claimed first (SET NX):
 * an id another subject's pair holds is taken (`free` false).
 */
export async function claimNewId(
  deps: Pick<PairWritesDeps, 'runner' | 'layout' | 'lookup'>,
  key: string,
  subject: string,
): Promise<IdClaim> {
  const { runner, layout, lookup } = deps;
  const tag = layout.tagOf(subject);
  const parsed = parseKeyId(key);
  if (parsed.kind === 'tagged' && parsed.tag !== tag)
    throw new TypeError("a self-describing key id carries its subject's tag");
  const kept = { free: true, release: () => Promise.resolve() };
  if (parsed.kind === 'tagged') return kept;
  const claimed = (await runner.call(layout.keyTag(key), (c, k) => c.set(k, tag, 'NX'))) === 'OK';
  if (!claimed) return { ...kept, free: (await lookup.tagOf(key)) === tag };
  return {
    free: true,
    release: async () => {
      await runner.call(layout.keyTag(key), (c, k) => c.del(k));
    },
  };
}

/**
 * The pair of `key`, moved here first when the single slot holds it, with the rest of its
 * subject's pairs (or alone: no index named it), so that a script counting the subject's
 * pairs sees them all. A pair that cannot move (a tag that is not its subject's) is found
 * where it is (`inSingleSlot`).
 */
export async function locateMovingHere(
  deps: Pick<PairWritesDeps, 'single' | 'lookup' | 'pairs'>,
  key: string,
): Promise<FoundPair | undefined> {
  const { single, lookup, pairs } = deps;
  const first = await lookup.locate(key);
  if (first === undefined || !first.inSingleSlot || single === undefined) return first;
  await pairs.moveHere(first.record.subject);
  await single.movePair(key);
  return lookup.locate(key);
}

function createKeyWith(deps: PairWritesDeps): CredentialStore['createKey'] {
  const { layout, pairs } = deps;
  return async (record, maxActive) => {
    const { key, subject } = record;
    const claim = await claimNewId(deps, key, subject);
    if (!claim.free) return false;
    const createdMs = Date.parse(record.createdAt);
    const created = await pairs.run(
      CREATE_PAIR,
      subject,
      pairsHere(layout, subject),
      { key: layout.key(key, subject) },
      {
        maxActive,
        id: key,
        secretHash: record.secretHash,
        label: record.label,
        createdAt: record.createdAt,
        createdMs: Number.isNaN(createdMs) ? 0 : createdMs,
        expiresAt: record.expiresAt ?? '',
        scopes: record.scopes.join(' '),
      },
    );
    if (created !== 'created') await claim.release();
    return created === 'created';
  };
}

function revokeKeyWith(deps: PairWritesDeps): CredentialStore['revokeKey'] {
  const { layout, single, pairs, runPairs } = deps;
  return async (key, at, options = {}) => {
    // Keeping the last usable pair counts all of the subject's; a pair that cannot move from
    // the single slot is revoked where it is.
    const found = await locateMovingHere(deps, key);
    if (found === undefined) return undefined;
    const { subject } = found.record;
    const left = found.inSingleSlot && single !== undefined;
    const place = left ? pairsInSingleSlot(single.layout, subject) : pairsHere(layout, subject);
    // A pair left in the single slot is not among its subject's pairs here, which its
    // script cannot see: an active pair here means it is not the last one.
    const keepLast =
      options.keepLastActive === true &&
      !(
        left &&
        (await runPairs(COUNT_ACTIVE_PAIRS, subject, pairsHere(layout, subject), {}, {})) > 0
      );
    const outcome = await pairs.run(
      REVOKE_PAIR,
      subject,
      place,
      { key: found.hash },
      {
        id: key,
        revokedAt: at,
        keepLastActive: keepLast ? '1' : '0',
        channel: layout.channel,
      },
    );
    if (outcome === 'last-active') throw new GatewayError('conflict');
    if (outcome === 'absent') return undefined;
    return revoked(found.record, at);
  };
}

/** The record as revoked at `at`: a pair revoked before keeps its own time. */
const revoked = (record: KeyRecord, at: string): KeyRecord =>
  record.status === 'revoked' ? record : { ...record, status: 'revoked' as const, revokedAt: at };

function replaceHashWith(deps: PairWritesDeps): CredentialStore['replaceHash'] {
  const { runner, layout, single, lookup } = deps;

  /** A compare-and-set here, then, for a hash not here, in the single slot. */
  const replaceAt = async (
    here: string | undefined,
    there: string | undefined,
    field: string,
    expected: string,
    next: string,
  ): Promise<boolean> => {
    for (const hash of [here, there]) {
      if (hash === undefined) continue;
      const replaced = await runner.run(REPLACE_HASH, { hash }, { field, expected, next });
      if (replaced !== 'absent') return replaced === 'replaced';
    }
    return false;
  };

  return async (owner, expected, next) => {
    if (owner.kind === 'user')
      return replaceAt(
        layout.user(owner.username),
        single?.layout.user(owner.username),
        'password_hash',
        expected,
        next,
      );
    const tag = await lookup.tagOf(owner.key);
    return replaceAt(
      tag === undefined ? undefined : layout.keyAt(tag, owner.key),
      single?.layout.key(owner.key),
      'secret_hash',
      expected,
      next,
    );
  };
}
