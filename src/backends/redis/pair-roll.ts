import type { CredentialStore, KeyRecord } from '../../credentials/credential-store.js';
import { rollOf, ROLL_MESSAGES } from '../../credentials/key-roll.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { parseScopeList } from '../../identity/scopes.js';
import type { FoundPair } from './pair-lookup.js';
import { pairsHere } from './pair-runs.js';
import { claimNewId, locateMovingHere, type PairWritesDeps } from './pair-writes.js';
import type { RollOutcome } from './script-replies.js';
import { ROLL_PAIR } from './scripts.js';

/**
 * Rolling a pair (credentials/key-roll.ts): one script in its subject's slot
 * (scripts/roll-pair.lua) makes the successor from the pair as stored and ends the pair,
 * so the two never disagree and the cap is checked with both.
 */
export function redisPairRoll(deps: PairWritesDeps): CredentialStore['rollKey'] {
  const { layout, pairs } = deps;
  return async (roll, maxActive) => {
    const found = await locateMovingHere(deps, roll.key);
    if (found === undefined) return undefined;
    // The successor goes under the subject's tag, where a pair left in the single slot is
    // not: no one script could make the one and end the other.
    if (found.inSingleSlot) throw new GatewayError('conflict', { message: ROLL_MESSAGES.unmoved });
    const { subject } = found.record;
    const claim = await claimNewId(deps, roll.successor.key, subject);
    if (!claim.free) throw new Error(ROLL_MESSAGES.idTaken);
    const atMs = Date.parse(roll.at);
    const endsMs = atMs + roll.overlapSec * 1000;
    const outcome = await pairs.run(
      ROLL_PAIR,
      subject,
      pairsHere(layout, subject),
      { key: found.hash, successor: layout.key(roll.successor.key, subject) },
      {
        maxActive,
        id: roll.key,
        successorId: roll.successor.key,
        secretHash: roll.successor.secretHash,
        createdAt: roll.at,
        createdMs: atMs,
        endsAt: new Date(endsMs).toISOString(),
        endsMs,
        revokeNow: roll.overlapSec === 0 ? '1' : '0',
        channel: layout.channel,
      },
    );
    if (outcome.kind !== 'rolled') await claim.release();
    switch (outcome.kind) {
      case 'rolled':
        return rollOf(asRolled(found, outcome), roll);
      case 'absent':
        return undefined;
      case 'ended':
        throw new GatewayError('conflict', { message: ROLL_MESSAGES.ended });
      case 'at-cap':
        throw new GatewayError('limit_exceeded');
      case 'taken':
        throw new Error(ROLL_MESSAGES.idTaken);
    }
  };
}

const withoutExpiry = ({ expiresAt: _, ...pair }: KeyRecord): KeyRecord => pair;

/** The pair as the script found it: active, with the label, scopes and expiry it copied. */
function asRolled(found: FoundPair, copied: Extract<RollOutcome, { kind: 'rolled' }>): KeyRecord {
  return {
    ...withoutExpiry(found.record),
    status: 'active',
    label: copied.label,
    scopes: parseScopeList(copied.scopes),
    ...(copied.expiresAt === '' ? {} : { expiresAt: copied.expiresAt }),
  };
}
