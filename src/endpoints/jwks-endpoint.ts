import type { JSONWebKeySet } from 'jose';
import { writeJson } from '../http/json-response.js';
import type { EndpointRoute } from '../http/routes.js';

/**
 * `GET /.well-known/jwks.json`: the public keys of the tokens the gateway issues. Served in
 * the RFC 7517 shape (`{"keys":[...]}`), not the listing envelope, because JWKS clients
 * (jose, every OIDC library) read exactly that shape.
 */
export function createJwksEndpoint(jwks: JSONWebKeySet): EndpointRoute {
  const body = JSON.stringify(jwks);
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
