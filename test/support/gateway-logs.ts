import type { GatewayProcess } from './gateway-process.js';
import { within } from './within.js';

/** One JSON log line of a gateway (a worker's lines carry `worker` and `worker_pid`). */
export type LogLine = Record<string, unknown>;

/**
 * Resolves with the log lines matching `match` once there are `count` of them; rejects,
 * naming `what`, when they are not all there within `guardMs` (a guard, not a bound: a
 * worker's lines reach the primary's stdout every 500 ms, and a line may wait on a worker's
 * start, a cold start of dist/ that takes seconds on two cores shared with other work: 5 s
 * missed a replaced worker's first line under load).
 */
export function untilLogs(
  gateway: GatewayProcess,
  what: string,
  match: (line: LogLine) => boolean,
  count = 1,
  guardMs = 20_000,
): Promise<LogLine[]> {
  const found = (): LogLine[] | undefined => {
    const lines = gateway.logs.filter(match);
    return lines.length >= count ? lines : undefined;
  };
  let onData: (() => void) | undefined;
  const arrived = new Promise<LogLine[]>((resolve) => {
    const now = found();
    if (now !== undefined) return resolve(now);
    // Runs after the helper's own listener, which has parsed the chunk's lines by then.
    onData = () => {
      const lines = found();
      if (lines !== undefined) resolve(lines);
    };
    gateway.child.stdout?.on('data', onData);
  });
  return within(guardMs, what, arrived).finally(() => {
    if (onData !== undefined) gateway.child.stdout?.off('data', onData);
  });
}

/** The first log line matching `match`, once there is one (see untilLogs). */
export const untilLog = async (
  gateway: GatewayProcess,
  what: string,
  match: (line: LogLine) => boolean,
): Promise<LogLine> => (await untilLogs(gateway, what, match))[0] ?? {};

/** The access line of the request sent with this X-Request-Id: who served it, and how. */
export const requestLine = (gateway: GatewayProcess, requestId: string): Promise<LogLine> =>
  untilLog(
    gateway,
    `the log line of ${requestId}`,
    (entry) => entry.msg === 'request' && entry.request_id === requestId,
  );
