import type { StoreLog } from '../../src/backends/redis/client.js';

/** A line as the gateway's logger would write it: its level, its fields, its message. */
export interface RecordedLine {
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** A StoreLog that keeps every line, and says when one comes. */
export interface RecordingLog extends StoreLog {
  readonly lines: RecordedLine[];
  /** Resolves with the first line (already written or still to come) with this message. */
  until(msg: string): Promise<RecordedLine>;
}

export function recordingLog(): RecordingLog {
  const lines: RecordedLine[] = [];
  const waiters: { msg: string; resolve: (line: RecordedLine) => void }[] = [];
  const write = (level: string, fields: Record<string, unknown>, msg: string): void => {
    const line = { level, ...fields, msg };
    lines.push(line);
    for (const waiter of waiters.filter((w) => w.msg === msg)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  };
  return {
    lines,
    info: (fields, msg) => write('info', fields, msg),
    warn: (fields, msg) => write('warn', fields, msg),
    until: (msg) => {
      const seen = lines.find((line) => line.msg === msg);
      return seen !== undefined
        ? Promise.resolve(seen)
        : new Promise((resolve) => waiters.push({ msg, resolve }));
    },
  };
}
