import type { ServerResponse } from 'node:http';
import type { EchoUpstream } from './echo-upstream.js';
import { within } from './within.js';

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

/**
 * Sends one `GET /accounts` through the gateway at `url` to an upstream that holds it, and
 * resolves once the upstream has it: the request is then in flight (a drain must wait for it).
 */
export async function sendHeldRequest(
  upstream: EchoUpstream,
  held: ServerResponse[],
  url: string,
  authorization: string,
): Promise<{ inFlight: Promise<Response> }> {
  const upstreamHasRequest = holdRequests(upstream, held);
  const inFlight = fetch(`${url}/accounts`, { headers: { authorization } });
  // Observed on error paths too: an exit may cut it.
  inFlight.catch(() => undefined);
  await within(5_000, 'the upstream to receive the request', upstreamHasRequest);
  return { inFlight };
}
