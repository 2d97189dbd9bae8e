import type { CredentialStore } from '../../credentials/credential-store.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { newFleetKeyText } from '../../credentials/verified-record.js';
import type { RedisLayout } from './layout.js';
import { storedTag } from './pair-runs.js';
import type { ScriptRunner } from './run-script.js';
import { KEEP_VERIFIED_RECORD } from './scripts.js';

/**
 * The Redis store's part in verified records: the fleet key, made once by whichever gateway
 * asks first (SET NX, then read back, so that every gateway on this Redis keeps the same one),
 * and the compare-and-set that keeps a record beside its pair. A pair still in the single-slot
 * layout of earlier versions gets none: the script finds no hash here and writes nothing.
 */
export function redisVerifiedRecords(
  runner: ScriptRunner,
  layout: RedisLayout,
): Pick<CredentialStore, 'fleetKey' | 'keepVerifiedRecord'> {
  return {
    async fleetKey() {
      await runner.call(layout.fleetKey, (c, k) => c.set(k, newFleetKeyText(), 'NX'));
      const text = await runner.call(layout.fleetKey, (c, k) => c.get(k));
      // Deleted between the two calls (an operator rotating it): made again on the next ask.
      if (text === null) throw new GatewayError('credential_store_unavailable');
      return text;
    },
    async keepVerifiedRecord(key, secretHash, record) {
      const tag = await storedTag(runner, layout, key);
      if (tag === undefined) return false;
      return runner.run(
        KEEP_VERIFIED_RECORD,
        { key: layout.keyAt(tag, key) },
        { secretHash, record },
      );
    },
  };
}
