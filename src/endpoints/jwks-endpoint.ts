import type { JSONWebKeySet } from 'jose';
import { writeJson } from '../http/json-response.js';
import type { EndpointRoute } from '../http/routes.js';
import { jwksSchema } from '../openapi/api-schemas.js';

/**
 * `GET /.well-known/jwks.json`: the public keys of the tokens the gateway issues. Served in
 * the RFC 7517 shape (`{"keys":[...]}`), not the listing envelope, because JWKS clients
 * (jose, every OIDC library) read exactly that shape.
 */
export function createJwksEndpoint(jwks: JSONWebKeySet): EndpointRoute {
  // Once, at start: jose types `kty` as optional, RFC 7517 §4.1 and the document require it.
  const body = JSON.stringify(jwksSchema.parse(jwks));
  return {
    kind: 'endpoint',
    name: 'jwks',
    methods: new Set(['GET', 'HEAD']),
    allow: ['GET', 'HEAD'],
    schemes: null,
    scopes: [],
    handle: ({ res, requestId }) => {
      writeJson(res, 200, body, requestId, { 'cache-control': 'public, max-age=300' });
      return Promise.resolve();
    },
  };
}
