import type { ServerResponse } from 'node:http';
import type { EchoUpstream } from './echo-upstream.js';

/**
 * Makes the upstream hold every request it gets (its response pushed onto `held`, for the
 * test to end or destroy); resolves once the first one is held.
 */
export function holdRequests(upstream: EchoUpstream, held: ServerResponse[]): Promise<void> {
  return new Promise((resolve) => {
    upstream.respondWith((_req, res) => {
      held.push(res);
      resolve();
    });
  });
}
