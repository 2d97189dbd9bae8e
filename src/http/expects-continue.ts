import type { IncomingHttpHeaders } from 'node:http';

/** Node's own test for 'checkContinue' (lib/_http_server.js), so the two never disagree. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * Whether the client waits for `100 Continue` before its body. Any other expectation is
 * ignored, as nginx does (RFC 9110 §10.1.1 lets a server answer 417; it need not): such a
 * client is not sent a 100 it did not ask for.
 */
export function expectsContinue(headers: IncomingHttpHeaders): boolean {
  const expect = headers.expect;
  return expect !== undefined && CONTINUE.test(expect);
}
