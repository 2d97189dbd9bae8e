import { BCRYPT_COST } from '../config/config-schema.js';
import { createSecretHasher } from '../credentials/secret-hasher.js';
import { CliError, EXIT } from './cli-error.js';

/**
 * `--cost`, when given: decimal digits naming a cost `credentials.bcryptCost` allows (a hash
 * made at another cost is one the gateway would not be configured to make). Without it the
 * caller uses the configuration's `credentials.bcryptCost`.
 */
export function checkCostOption(cost: string): number {
  // Only digits: Number() would also take "1e1", "0x5" and " 5".
  const value = /^\d{1,2}$/.test(cost) ? Number(cost) : NaN;
  if (!(value >= BCRYPT_COST.min && value <= BCRYPT_COST.max))
    throw new CliError(
      `--cost must be a whole number from ${BCRYPT_COST.min} to ${BCRYPT_COST.max}`,
      EXIT.usage,
    );
  return value;
}

/** The bcrypt hash of `secret` at `cost`, as one line: what the web application may store. */
export async function hashPasswordCommand(
  secret: string,
  cost: number,
  write: (text: string) => void,
): Promise<void> {
  write(`${await createSecretHasher(cost).hash(secret)}\n`);
}
