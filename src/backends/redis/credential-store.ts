import { Cluster } from 'ioredis';
import type { CredentialStore, RetentionOptions } from '../../credentials/credential-store.js';
import type { Unlock } from '../../protection/lockout.js';
import type { RedisClient, RedisConnection, StoreLog } from './client.js';
import type { RedisLayout } from './layout.js';
import { redisExpiringPairs } from './expiring-pairs.js';
import { redisLastUse } from './last-use.js';
import { createPairLookup } from './pair-lookup.js';
import { redisPairListing } from './pair-listing.js';
import { redisPairRoll } from './pair-roll.js';
import { createPairRun } from './pair-runs.js';
import { redisPairWrites } from './pair-writes.js';
import {
  SUBSCRIBER_TIMEOUT_MS,
  subscribeRevocations,
  type RevocationSubscription,
} from './revocations.js';
import type { ScriptRunner } from './run-script.js';
import type { SingleSlot } from './single-slot.js';
import { subjectPairs } from './subject-pairs.js';
import { subscriberConnections } from './subscriber-connections.js';
import { redisSessionRecords } from './session-records.js';
import { redisUserRecords } from './user-records.js';
import { redisVerifiedRecords } from './verified-records.js';

export interface RedisCredentialStoreDeps {
  readonly client: RedisClient;
  readonly connection: RedisConnection;
  readonly runner: ScriptRunner;
  readonly layout: RedisLayout;
  /** The single-slot layout of earlier versions, read and moved from; undefined: none. */
  readonly single: SingleSlot | undefined;
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  readonly now: () => number;
  /** How long ended pairs are kept (keys.retainEndedDays). */
  readonly retention: RetentionOptions;
  /** Where the revocation subscription's changes of state are logged; none: silent. */
  readonly log?: StoreLog | undefined;
  /** Told of the unlocks the revocation channel carries (`keys unlock`); none: ignored. */
  readonly unlocks?: UnlockListener | undefined;
}

/** What hears the lockouts an operator lifts: the locks this process remembers. */
export interface UnlockListener {
  readonly unlocked: (unlock: Unlock) => void;
  /** The subscription stands (again): unlocks published while it did not were lost. */
  readonly missed: () => void;
}

/**
 * The credential store on Redis: the layout of layout.ts, the scripts of scripts/. While a
 * single-slot layout of earlier versions is configured, pairs and users not found here are
 * read there, and a subject's pairs are moved here before any script changes or lists them,
 * so that one script always sees all of them (single-slot.ts). Each part is its own module:
 * finding a pair (pair-lookup.ts), listing (pair-listing.ts), changing pairs (pair-writes.ts;
 * rolling one, pair-roll.ts), users (user-records.ts), the portal's sessions
 * (session-records.ts), last uses (last-use.ts), verified records (verified-records.ts), the
 * pairs ending soon (expiring-pairs.ts).
 */
export function createRedisCredentialStore(deps: RedisCredentialStoreDeps): CredentialStore {
  const { client, connection, runner, layout, single, now, retention } = deps;
  const runPairs = createPairRun({ runner, now, retention });
  const lookup = createPairLookup({ runner, layout, single, now, retention });
  const pairs = subjectPairs(runPairs, single);
  const writes = { runner, layout, single, lookup, pairs, runPairs };
  return {
    getKey: async (key) => (await lookup.locate(key))?.record,
    ...redisVerifiedRecords(runner, layout),
    ...redisPairListing(pairs, layout),
    ...redisPairWrites(writes),
    rollKey: redisPairRoll(writes),
    ...redisExpiringPairs({ runner, layout, now }),
    recordLastUse: redisLastUse({
      runner,
      layout,
      single,
      tagOf: lookup.tagOf,
      perSlot: client instanceof Cluster,
    }),
    ...redisUserRecords(runner, layout, single),
    ...redisSessionRecords(runner, layout, single),
    ping: () => runner.ping(),
    health: connection,
    ...revocationsAndClose(deps),
  };
}

/** The subscription to the revocation channel (once), and closing the store with it. */
function revocationsAndClose(
  deps: RedisCredentialStoreDeps,
): Pick<CredentialStore, 'subscribe' | 'close'> {
  const { client, connection, layout } = deps;
  let subscription: RevocationSubscription | undefined;
  return {
    subscribe(listener, flush) {
      if (subscription !== undefined) throw new Error('subscribe() may be called once');
      subscription = subscribeRevocations({
        connections: subscriberConnections(client, SUBSCRIBER_TIMEOUT_MS),
        channel: layout.channel,
        listener,
        unlocked: deps.unlocks?.unlocked,
        flush: (start) => {
          deps.unlocks?.missed();
          flush(start);
        },
        log: deps.log,
      });
    },
    async close() {
      connection.closing();
      await Promise.allSettled([client.quit(), subscription?.close()]);
      client.disconnect();
    },
  };
}
