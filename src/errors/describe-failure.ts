import { GatewayError } from './gateway-error.js';

/**
 * A failure as a log line's `cause` reads it: the foreign error behind a GatewayError (its
 * message is the client's fixed sentence, which names nothing), by name, code and words, e.g.
 * `RedisUnavailable: Redis redis://127.0.0.1:6379: unreachable, connection refused (…)`.
 * Undefined when there is nothing more to say than the client was told.
 */
export function describeFailure(error: unknown): string | undefined {
  const cause = error instanceof GatewayError ? error.cause : error;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code === undefined
      ? `${cause.name}: ${cause.message}`
      : `${cause.name} ${code}: ${cause.message}`;
  }
  return typeof cause === 'string' ? cause : undefined;
}
