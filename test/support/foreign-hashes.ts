import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * bcrypt hashes as other writers make them, in the `$2y$` form the bcrypt package does not
 * read by itself.
 */

/**
 * What `htpasswd -nbBC 10` (apache2-utils; .ci/run installs it) writes for `secret`: the
 * tool an nginx user reaches for. Made at test time, so the test follows the installed tool.
 */
export async function htpasswdHash(secret: string): Promise<string> {
  const { stdout } = await promisify(execFile)('htpasswd', ['-nbBC', '10', 'user', secret]);
  const hash = stdout.trim().slice('user:'.length);
  if (!hash.startsWith('$2y$10$')) throw new Error(`htpasswd wrote an unexpected line: ${stdout}`);
  return hash;
}

/**
 * Written by PHP 8.2's password_hash (cost 10, its default): `php -r 'echo
 * password_hash("php-written password £ 0123456789", PASSWORD_BCRYPT);'`. A literal, so that
 * the suite needs no PHP.
 */
export const PHP_WRITTEN = {
  secret: 'php-written password £ 0123456789',
  hash: '$2y$10$Uo8KGv4IL.rGi1hfmcDsu.lOsYkgAg7jY27v7V7ULLKuYinCFoM0W',
} as const;
