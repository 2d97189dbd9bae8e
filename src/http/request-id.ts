import { randomUUID } from 'node:crypto';

const WELL_FORMED = /^[A-Za-z0-9._~:+/=-]{1,128}$/;

/** Keeps the client's X-Request-Id when it is safe to echo and log; otherwise makes one. */
export function pickRequestId(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && WELL_FORMED.test(incoming) ? incoming : randomUUID();
}
