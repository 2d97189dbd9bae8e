import { createHash } from 'node:crypto';
import { writeJson } from '../http/json-response.js';
import type { EndpointRoute } from '../http/routes.js';

/**
 * `GET /openapi.json`: the OpenAPI document of the public API, without credentials. The
 * document is the product's, fixed for a build, so a client may keep it five minutes and
 * then revalidate with the strong ETag (RFC 9110 §8.8.3, §13.1.2): a matching If-None-Match
 * answers 304 without the body.
 */
export function createOpenApiEndpoint(document: string): EndpointRoute {
  const etag = `"${createHash('sha256').update(document).digest('base64url')}"`;
  const caching = { 'cache-control': 'public, max-age=300', etag };
  return {
    kind: 'endpoint',
    name: 'openapi',
    methods: new Set(['GET', 'HEAD']),
    allow: ['GET', 'HEAD'],
    schemes: null,
    scopes: [],
    handle: ({ req, res, requestId }) => {
      if (matches(req.headers['if-none-match'], etag)) {
        res.writeHead(304, { ...caching, 'x-request-id': requestId });
        res.end();
      } else writeJson(res, 200, document, requestId, caching);
      return Promise.resolve();
    },
  };
}

/** If-None-Match (RFC 9110 §13.1.2): `*`, or a list of tags compared weakly. */
function matches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}
