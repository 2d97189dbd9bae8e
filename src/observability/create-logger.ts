import { pino, type Logger } from 'pino';
import { LineWriter } from './line-writer.js';

export type { Logger };

/** How long a buffered log line may wait before it is written. */
const FLUSH_INTERVAL_MS = 500;
const writers = new Set<WeakRef<LineWriter>>();

/**
 * What a writer gathered is written when the process ends: at its last turn of the event loop
 * (beforeExit) and on exit(), which runs no more asynchronous writes. One pair of listeners
 * for every writer.
 */
function writeAtExit(writer: LineWriter): void {
  if (writers.size === 0) {
    process.on('beforeExit', () => {
      for (const ref of writers) ref.deref()?.flush();
    });
    process.on('exit', () => {
      for (const ref of writers) ref.deref()?.flushSync();
    });
  }
  writers.add(new WeakRef(writer));
}

/**
 * JSON logs, written asynchronously and in batches (one write per 16 KiB or per
 * FLUSH_INTERVAL_MS, not one syscall per request line; see LineWriter). Redaction is a second line of
 * defence: no code logs headers or secrets on purpose.
 */
export function createLogger(
  level: string,
  destination: number | NodeJS.WritableStream = 1,
): Logger {
  if (typeof destination !== 'number') return pino(loggerOptions(level), destination);
  const writer = new LineWriter(destination);
  writeAtExit(writer);
  const logger = pino(loggerOptions(level), writer);
  setInterval(() => logger.flush(), FLUSH_INTERVAL_MS).unref();
  return logger;
}

/** Values that authenticate someone: headers carrying credentials, and secret fields. */
const REDACTED = [
  'headers.authorization',
  'headers["proxy-authorization"]',
  'headers.cookie',
  'headers["set-cookie"]',
  'authorization',
  'cookie',
  'secret',
  'password',
  'access_token',
  'refresh_token',
] as const;

function loggerOptions(level: string): pino.LoggerOptions {
  return {
    level,
    base: { service: 'accounts-gateway' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      // Each path at the top level and one level down (`*.`), where a logged request, error
      // or record puts them: `{ req: { headers } }`, `{ user: { password } }`. A path list
      // cannot reach every depth; code must still not log these on purpose.
      paths: REDACTED.flatMap((path) => [path, `*.${path}`]),
      censor: '[redacted]',
    },
  };
}
