import { ListenError } from '../http/listen.js';
import type { Logger } from '../observability/create-logger.js';

/**
 * The one line a failed start is logged with, by whichever process failed: `cannot listen`
 * with the address, the port's role and the system code, else `start failed` with the error.
 */
export function logStartFailure(logger: Logger, error: unknown): void {
  if (error instanceof ListenError) {
    logger.error(
      { address: error.address, listener: error.listener, code: error.code },
      'cannot listen',
    );
  } else logger.error({ err: error }, 'start failed');
}
