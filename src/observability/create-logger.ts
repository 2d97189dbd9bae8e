import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * JSON logs, written asynchronously (no synchronous write on the request path). Redaction
 * is a second line of defence: no code logs headers or secrets on purpose.
 */
export function createLogger(
  level: string,
  destination: number | NodeJS.WritableStream = 1,
): Logger {
  const stream =
    typeof destination === 'number'
      ? pino.destination({ dest: destination, sync: false })
      : destination;
  return pino(
    {
      level,
      base: { service: 'accounts-gateway' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          'headers.authorization',
          'headers["proxy-authorization"]',
          'headers.cookie',
          'headers["set-cookie"]',
          '*.headers.authorization',
          '*.headers["proxy-authorization"]',
          '*.headers.cookie',
          'secret',
          'password',
          '*.secret',
          '*.password',
          'access_token',
          '*.access_token',
        ],
        censor: '[redacted]',
      },
    },
    stream,
  );
}
