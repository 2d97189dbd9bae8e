import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TEST_UPSTREAM_HEADER } from './openapi-validator.js';

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly rawHeaders: readonly string[];
  readonly body: string;
}

export interface EchoUpstream {
  readonly url: string;
  readonly received: RecordedRequest[];
  /** Replaces the default answer (200 with the spec's envelope) for the next requests. */
  respondWith(handler: (req: IncomingMessage, res: ServerResponse) => void): void;
  close(): Promise<void>;
}

/** What the echo upstream answers by default: the spec's envelope of an empty listing. */
export const ECHO_BODY = {
  result: 'success',
  status: 200,
  meta: { count: 0, limit: 1000, order: 'desc', last_id: null },
  data: [],
} as const;

/** A real upstream on loopback that records exactly what the gateway sent it. */
export async function startEchoUpstream(): Promise<EchoUpstream> {
  const received: RecordedRequest[] = [];
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ECHO_BODY));
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString(),
      });
      // What it answers is the test's, not the gateway's: the OpenAPI check leaves it be.
      res.setHeader(TEST_UPSTREAM_HEADER, 'echo');
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    respondWith(next) {
      handler = next;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Snapshot of what the upstream has seen so far; `since()` is what arrived after it. */
export function upstreamMark(upstream: EchoUpstream): { since(): RecordedRequest[] } {
  const count = upstream.received.length;
  return { since: () => upstream.received.slice(count) };
}
