import { createSecretHasher } from '../credentials/secret-hasher.js';
import { CliError, EXIT } from './cli-error.js';

/** bcrypt's own range of costs (log2 of its rounds): the package refuses any other. */
const MIN_COST = 4;
const MAX_COST = 31;

/**
 * `--cost`, when given: an integer bcrypt accepts. Without it the caller uses the
 * configuration's `credentials.bcryptCost`, the cost the gateway compares unknown keys at.
 */
export function checkCostOption(cost: number): number {
  if (!Number.isInteger(cost) || cost < MIN_COST || cost > MAX_COST)
    throw new CliError(`--cost must be an integer from ${MIN_COST} to ${MAX_COST}`, EXIT.usage);
  return cost;
}

/** The bcrypt hash of `secret` at `cost`, as one line: what the web application may store. */
export async function hashPasswordCommand(
  secret: string,
  cost: number,
  write: (text: string) => void,
): Promise<void> {
  write(`${await createSecretHasher(cost).hash(secret)}\n`);
}
