import { pino, type Logger } from 'pino';

export type { Logger };

/** How long a buffered log line may wait before it is written. */
const FLUSH_INTERVAL_MS = 500;

/**
 * JSON logs, written asynchronously and in batches (one write per 4 KiB or per
 * FLUSH_INTERVAL_MS, not one syscall per request line). Redaction is a second line of
 * defence: no code logs headers or secrets on purpose.
 */
export function createLogger(
  level: string,
  destination: number | NodeJS.WritableStream = 1,
): Logger {
  if (typeof destination !== 'number') return pino(loggerOptions(level), destination);
  const stream = pino.destination({ dest: destination, sync: false, minLength: 4096 });
  const logger = pino(loggerOptions(level), stream);
  setInterval(() => logger.flush(), FLUSH_INTERVAL_MS).unref();
  return logger;
}

function loggerOptions(level: string): pino.LoggerOptions {
  return {
    level,
    base: { service: 'accounts-gateway' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'headers.authorization',
        'headers["proxy-authorization"]',
        'headers.cookie',
        'headers["set-cookie"]',
        'secret',
        'password',
        'access_token',
      ],
      censor: '[redacted]',
    },
  };
}
