import { ListenError } from '../http/listen.js';
import type { Logger } from '../observability/create-logger.js';
import { ListenerTlsError } from '../tls/listener-tls.js';

/**
 * The one line a failed start is logged with, by whichever process failed: `cannot listen`
 * with the address, the port's role and the system code, else `start failed` with the error
 * (a refused certificate as its one sentence).
 */
export function logStartFailure(logger: Logger, error: unknown): void {
  if (error instanceof ListenError) {
    logger.error(
      { address: error.address, listener: error.listener, code: error.code },
      'cannot listen',
    );
  } else if (error instanceof ListenerTlsError) {
    // A configuration's problem, named in full by its message: a stack says nothing more.
    logger.error({ problems: [error.message] }, 'start failed');
  } else logger.error({ err: error }, 'start failed');
}
