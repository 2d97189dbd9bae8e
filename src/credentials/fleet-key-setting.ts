import { readFileSync } from 'node:fs';
import type { GatewayConfig } from '../config/config-schema.js';
import { parseFleetKey, type FleetKey } from './verified-record.js';

type VerifiedRecordsConfig = GatewayConfig['auth']['basic']['verifiedRecords'];

/**
 * The operator's fleet key: `fleetKey`, else the file `fleetKeyFile` names; undefined when
 * neither is set (the store's own is used). Throws an Error saying what is wrong with the file.
 */
export function configuredFleetKey(settings: VerifiedRecordsConfig): FleetKey | undefined {
  const text =
    settings.fleetKey ??
    (settings.fleetKeyFile === undefined ? undefined : readFileSync(settings.fleetKeyFile, 'utf8'));
  if (text === undefined) return undefined;
  const key = parseFleetKey(text);
  if (key === undefined)
    throw new Error('must hold at least 32 bytes in base64 (openssl rand -base64 32)');
  return key;
}
