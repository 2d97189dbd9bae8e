import { newFleetKeyText } from '../../credentials/verified-record.js';
import {
  DEFAULT_RETAIN_ENDED_SEC,
  IN_PROCESS_HEALTH,
  type CredentialStore,
  type KeyRecord,
  type RetentionOptions,
  type UserRecord,
} from '../../credentials/credential-store.js';
import { memoryExpiring } from './memory-expiring.js';
import { memoryPairReads, memoryPairWrites } from './memory-pairs.js';
import { createMemoryState } from './memory-state.js';
import { memorySessions } from './memory-sessions.js';
import { memoryUsers } from './memory-users.js';

/**
 * The embedded store for the zero-setup default and single-instance use: one process,
 * nothing persisted. Revocations reach only this process's listeners. Its parts share one
 * state (memory-state.ts): the pairs (memory-pairs.ts), the users (memory-users.ts) and the portal's sessions
 * (memory-sessions.ts).
 */
export function createMemoryStore(
  seed: { keys?: readonly KeyRecord[]; users?: readonly UserRecord[] } = {},
  /** Milliseconds since the epoch: what decides whether a pair has expired. */
  now: () => number = Date.now,
  retention: RetentionOptions = { retainEndedSec: DEFAULT_RETAIN_ENDED_SEC },
): CredentialStore {
  const state = createMemoryState(seed, now, retention);
  // Made at once: the store lives as long as its process, and so does every record under it.
  const fleetKey = newFleetKeyText();
  return {
    ...memoryPairReads(state),
    ...memoryPairWrites(state),
    ...memoryExpiring(state),
    ...memoryUsers(state),
    ...memorySessions(state),
    fleetKey: () => Promise.resolve(fleetKey),
    ping: () => Promise.resolve(),
    health: IN_PROCESS_HEALTH,
    subscribe(listener) {
      state.listeners.push(listener);
    },
    close: () => Promise.resolve(),
  };
}
