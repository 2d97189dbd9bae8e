// What the recording load clients (load.ts, zipf-load.ts) share: one GET, and its line.
import type { Pool } from 'undici';

/** Milliseconds since the epoch, to the microsecond: the bench sets them against its own. */
export const epochMs = (): number => performance.timeOrigin + performance.now();

/**
 * Sends one GET of `path` with `authorization` through `pool`, pushes the line
 * `tag sentMs answeredMs status` onto `lines` (status 0: no answer) and resolves with the status.
 */
export async function sendRecorded(
  pool: Pool,
  path: string,
  authorization: string,
  tag: string,
  lines: string[],
): Promise<number> {
  const sent = epochMs();
  let status = 0;
  try {
    const answer = await pool.request({ path, method: 'GET', headers: { authorization } });
    await answer.body.dump();
    status = answer.statusCode;
  } catch {
    // A failure without an answer: status 0.
  }
  lines.push(`${tag} ${sent.toFixed(3)} ${epochMs().toFixed(3)} ${status}`);
  return status;
}
