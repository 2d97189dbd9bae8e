import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/observability/create-logger.js';

export type LogEntry = Record<string, unknown>;

/** A gateway logger whose JSON lines the test reads, and awaits. */
export interface CapturedLogger {
  readonly logger: Logger;
  readonly lines: LogEntry[];
  /** The first line (written or to come) with this msg and every value of `fields`. */
  until(msg: string, fields?: LogEntry): Promise<LogEntry>;
}

export function capturedLogger(level = 'info'): CapturedLogger {
  const lines: LogEntry[] = [];
  const waiters: { matches: (line: LogEntry) => boolean; resolve: (line: LogEntry) => void }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n')) {
        if (text === '') continue;
        const line = JSON.parse(text) as LogEntry;
        lines.push(line);
        for (const waiter of waiters.filter((w) => w.matches(line))) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
      done();
    },
  });
  return {
    logger: createLogger(level, stream),
    lines,
    until(msg, fields = {}) {
      const matches = (line: LogEntry): boolean =>
        line.msg === msg && Object.entries(fields).every(([name, value]) => line[name] === value);
      const seen = lines.find(matches);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ matches, resolve }));
    },
  };
}
