import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/observability/create-logger.js';

/** A line the logger wrote, parsed. */
export type LogLine = Record<string, unknown>;

export interface CapturedLog {
  /** A real logger (pino, with its redaction), writing into memory. */
  readonly logger: Logger;
  readonly lines: () => LogLine[];
  readonly text: () => string;
  /** Resolves with the first line (already written or still to come) with this message. */
  readonly until: (msg: string) => Promise<LogLine>;
}

export function capturedLog(level = 'info'): CapturedLog {
  let text = '';
  const waiters: { msg: string; resolve: (line: LogLine) => void }[] = [];
  const parse = (): LogLine[] =>
    text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LogLine);
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      const lines = parse();
      for (const waiter of [...waiters]) {
        const line = lines.find((l) => l.msg === waiter.msg);
        if (line === undefined) continue;
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
      done();
    },
  });
  return {
    logger: createLogger(level, stream),
    lines: parse,
    text: () => text,
    until: (msg) => {
      const seen = parse().find((line) => line.msg === msg);
      return seen !== undefined
        ? Promise.resolve(seen)
        : new Promise((resolve) => waiters.push({ msg, resolve }));
    },
  };
}
