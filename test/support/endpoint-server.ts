import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Identity } from '../../src/identity/identity.js';
import { writeError } from '../../src/errors/error-envelope.js';
import { toGatewayError } from '../../src/errors/gateway-error.js';
import { resolveClientAddress } from '../../src/http/client-address.js';
import { createTrustedProxies } from '../../src/http/ip-network.js';
import type { EndpointRoute } from '../../src/http/routes.js';

/**
 * One of the gateway's own endpoints behind a bare node:http server on port 0, as the caller
 * `identity`, its errors written as the gateway writes them; `url` is the server's origin.
 */
export async function serveEndpoint(
  route: EndpointRoute,
  identity: Identity | undefined,
): Promise<{ url: string; server: Server }> {
  const requestId = 'test-request';
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    // As a gateway without trusted proxies counts its clients: the peer, IPv6 by its /64.
    const client = {
      clientAddress: () =>
        resolveClientAddress(req.socket.remoteAddress ?? '', undefined, {
          trusted: createTrustedProxies([]),
          ipv4Prefix: 32,
          ipv6Prefix: 64,
        }),
    };
    route
      .handle({ req, res, requestId, identity, param: undefined, query: '', client })
      .catch((error: unknown) => writeError(res, toGatewayError(error), requestId));
  };
  const server = createServer(handler);
  // As in the gateway: `100 Continue` is the endpoint's to send, once it accepts the request.
  server.on('checkContinue', handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
