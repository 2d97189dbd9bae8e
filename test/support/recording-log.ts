import type { StoreLog } from '../../src/backends/redis/client.js';

/** One line as the gateway's logger would write it: its level, its fields and its msg. */
export interface LogLine {
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** A StoreLog that keeps every line, in order. */
export function recordingLog(): StoreLog & { readonly lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    info: (fields, msg) => lines.push({ level: 'info', ...fields, msg }),
    warn: (fields, msg) => lines.push({ level: 'warn', ...fields, msg }),
  };
}
