import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenApiEndpoint } from '../../../src/endpoints/openapi-endpoint.js';
import { serveEndpoint } from '../../support/endpoint-server.js';
import { send } from '../../support/send.js';

const DOCUMENT = '{"openapi":"3.1.1"}\n';
let url: string;
let server: Server;
let etag: string;

beforeAll(async () => {
  ({ url, server } = await serveEndpoint(createOpenApiEndpoint(DOCUMENT), undefined));
  etag = (await send(url, '/openapi.json')).headers.etag as string;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('GET /openapi.json', () => {
  it('serves the document as JSON, cacheable for five minutes, with a strong ETag', async () => {
    const answer = await send(url, '/openapi.json');
    expect(answer).toMatchObject({
      status: 200,
      body: DOCUMENT,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'public, max-age=300',
      },
    });
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
  });

  it.each([
    ['the same tag', () => etag],
    ['the tag among others', () => `"other", ${etag}`],
    ['its weak form (If-None-Match compares weakly)', () => `W/${etag}`],
    ['*', () => '*'],
  ])('answers 304 without a body to If-None-Match naming %s', async (_name, tag) => {
    const answer = await send(url, '/openapi.json', { headers: { 'if-none-match': tag() } });
    expect(answer).toMatchObject({ status: 304, body: '', headers: { etag } });
  });

  it('answers 200 to If-None-Match naming another tag', async () => {
    const answer = await send(url, '/openapi.json', { headers: { 'if-none-match': '"other"' } });
    expect(answer.status).toBe(200);
  });
});
