import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiObject,
  type ZodOpenApiOperationObject,
  type ZodOpenApiResponseObject,
} from 'zod-openapi';
import { ERROR_CATALOGUE, type ErrorCode } from '../errors/error-codes.js';
import { KEY_ID } from '../identity/identity-formats.js';
import {
  accountListSchema,
  createdKeyListSchema,
  createKeySchema,
  ERROR_CODES,
  errorEnvelopeSchema,
  jwksSchema,
  keyListSchema,
  loginSchema,
  tokenListSchema,
} from './api-schemas.js';

/** The paths of the document, as the default configuration serves them. */
const LISTING_PATHS = {
  '/account': 'Account',
  '/accounts': 'Accounts',
  '/accounts/': 'AccountsSlash',
} as const;
const FORWARD_AUTH_PATH = '/auth/check';
export const OPENAPI_PATH = '/openapi.json';

const JSON_TYPE = 'application/json';
const HTTP_STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

type Headers = Record<string, z.ZodType>;

const REQUEST_ID = {
  'X-Request-Id': z.string().meta({
    description: "The client's X-Request-Id when well-formed, else one generated: on every answer.",
    header: { id: 'X-Request-Id' },
  }),
};
const CACHE_CONTROL = {
  'Cache-Control': z
    .string()
    .meta({ description: 'no-store unless said otherwise.', header: { id: 'Cache-Control' } }),
};
const RATE_LIMIT = {
  'RateLimit-Policy': z
    .string()
    .optional()
    .meta({
      description: 'IETF draft RateLimit headers: on every answer of a limited route.',
      header: { id: 'RateLimit-Policy' },
    }),
  RateLimit: z
    .string()
    .optional()
    .meta({
      description: 'The policy and what is left of it.',
      header: { id: 'RateLimit' },
    }),
};
const RETRY_AFTER = {
  'Retry-After': z
    .string()
    .regex(/^\d+$/)
    .meta({ description: 'Seconds to wait (RFC 9110 §10.2.3).', header: { id: 'Retry-After' } }),
};
const RETRY_AFTER_MAYBE = z
  .string()
  .regex(/^\d+$/)
  .optional()
  .meta({ description: 'Seconds to wait, when known.', header: { id: 'Retry-After-Optional' } });
const GATEWAY_HEADERS: Headers = { ...REQUEST_ID, ...CACHE_CONTROL, ...RATE_LIMIT };

/** Per status, the codes of the catalogue that answer with it (never retyped). */
function codesOf(status: number): [ErrorCode, ...ErrorCode[]] {
  const codes = ERROR_CODES.filter((code) => ERROR_CATALOGUE[code].status === status);
  const [first, ...rest] = codes;
  if (first === undefined) throw new Error(`no error code answers ${status}`);
  return [first, ...rest];
}

const CHALLENGE = {
  'WWW-Authenticate': z.string().meta({
    description:
      'The challenges of the route (RFC 9110 §11.6.1): Basic realm="…", charset="UTF-8" (RFC 7617) and/or Bearer realm="…", error="invalid_token" (RFC 6750).',
    header: { id: 'WWW-Authenticate' },
  }),
};

/** Extra headers of an error status: the challenge of a 401, the wait of a 429 or 503. */
function errorHeaders(status: number): Headers {
  if (status === 401) return CHALLENGE;
  if (status === 429) return RETRY_AFTER;
  if (status === 503) return { 'Retry-After': RETRY_AFTER_MAYBE };
  return {};
}

/** `invalid_credentials` -> `InvalidCredentials`. */
function pascalCase(code: string): string {
  return code.replace(/(?:^|_)(.)/g, (_, letter: string) => letter.toUpperCase());
}

/**
 * The envelope of one status: its code among `codes`, those of the catalogue with that
 * status unless an operation answers fewer. One schema (a component) per status and set of
 * codes, however many operations answer it.
 */
const errorSchemas = new Map<string, z.ZodType>();
function errorSchema(status: number, codes: [ErrorCode, ...ErrorCode[]]): z.ZodType {
  // Fewer codes than the status has: a component of its own, named after them.
  const named = codes.length === codesOf(status).length ? [] : codes.map(pascalCase);
  const id = `Error${status}${named.join('')}`;
  let schema = errorSchemas.get(id);
  if (schema === undefined) {
    schema = errorEnvelopeSchema
      .extend({
        // A literal would say `type: number`; the envelope's status is an integer.
        status: z.int().min(status).max(status).meta({ const: status }),
        error: z.object({ code: z.enum(codes), message: z.string() }),
      })
      .meta({ id, description: `The error envelope of a ${status}.` });
    errorSchemas.set(id, schema);
  }
  return schema;
}

/**
 * `extra`: headers beyond every error's. `id`: a component many operations share. `codes`:
 * those the operation can answer, when fewer than all the catalogue's of the status.
 */
function errorResponse(
  status: number,
  why: string,
  {
    extra = {},
    id,
    codes = codesOf(status),
  }: { extra?: Headers; id?: string; codes?: [ErrorCode, ...ErrorCode[]] } = {},
): ZodOpenApiResponseObject {
  return {
    ...(id === undefined ? {} : { id }),
    description: `${HTTP_STATUS_TEXT[status] ?? 'Error'}: ${why} (${codes.join(', ')}).`,
    headers: z.object({ ...GATEWAY_HEADERS, ...errorHeaders(status), ...extra }),
    content: { [JSON_TYPE]: { schema: errorSchema(status, codes) } },
  };
}

function success(
  description: string,
  schema: z.ZodType | undefined,
  headers: Headers = GATEWAY_HEADERS,
): ZodOpenApiResponseObject {
  return {
    description,
    headers: z.object(headers),
    ...(schema === undefined ? {} : { content: { [JSON_TYPE]: { schema } } }),
  };
}

const WHY = {
  400: 'a malformed Authorization header, path or body',
  401: 'no credentials, or credentials that are not valid',
  403: 'the credentials lack a scope the route requires',
  404: 'nothing matches',
  413: 'the body is larger than server.maxBodyBytes',
  415: 'the body is not application/json',
  405: 'the method is not the route’s',
  429: 'a rate limit or a lockout after failed attempts',
  503: 'the credential store cannot be asked, or the gateway is overloaded',
} as const;

/** What every authenticated operation may answer besides its success. */
const AUTHENTICATED = {
  400: errorResponse(400, WHY[400], { id: 'BadRequest' }),
  401: errorResponse(401, WHY[401], { id: 'Unauthorized' }),
  403: errorResponse(403, WHY[403], { id: 'Forbidden' }),
  429: errorResponse(429, WHY[429], { id: 'TooManyRequests' }),
  503: errorResponse(503, WHY[503], { id: 'Unavailable' }),
};
const WITH_BODY = {
  413: errorResponse(413, WHY[413], { id: 'ContentTooLarge' }),
  415: errorResponse(415, WHY[415], { id: 'UnsupportedMediaType' }),
};
const ADDRESS_LIMITED = errorResponse(429, 'the address rate limit', { id: 'AddressRateLimited' });
/** Framing is checked before any route: a second Authorization line is refused even here. */
const PUBLIC_BAD_REQUEST = errorResponse(
  400,
  'two Authorization header lines, or a malformed path or framing',
  { id: 'PublicBadRequest' },
);
const SECURITY = [{ basic: [] }, { bearer: [] }];

/** One component: zod-openapi registers an id once, so every listing shares this object. */
const UPSTREAM_ANSWER: ZodOpenApiResponseObject = {
  id: 'UpstreamAnswer',
  description:
    'Any other status is the upstream’s answer, passed through: its status, headers and body as the upstream sent them (a 404, a 500…), with X-Request-Id added.',
  headers: z.object(REQUEST_ID),
};

/** `name`: the path's spelling in the operation's id (ids are unique in a document). */
function listing(method: 'GET' | 'HEAD', name: string): ZodOpenApiOperationObject {
  return {
    operationId: `${method === 'GET' ? 'list' : 'headList'}${name}`,
    summary: 'The accounts of the authenticated subject (spec §4.1), forwarded to the upstream.',
    description:
      'The three spellings are one route, forwarded to one canonical upstream path with the query string kept byte for byte. The 200 is the upstream’s answer, streamed back unchanged; the gateway adds X-Request-Id.',
    security: SECURITY,
    responses: {
      200: success(
        'The listing, in the spec’s envelope.',
        method === 'GET' ? accountListSchema : undefined,
        { ...REQUEST_ID, ...RATE_LIMIT },
      ),
      ...AUTHENTICATED,
      502: errorResponse(502, 'the upstream refused or reset the connection'),
      504: errorResponse(504, 'the upstream did not answer in time'),
      default: UPSTREAM_ANSWER,
    },
  };
}

function keyList(method: 'GET' | 'HEAD'): ZodOpenApiOperationObject {
  return {
    operationId: method === 'GET' ? 'listKeys' : 'headKeys',
    summary: "The caller's key pairs, never a secret or a hash, paged by the envelope's meta.",
    security: SECURITY,
    requestParams: {
      query: z.object({
        limit: z.int().min(1).max(1000).optional().meta({ description: '1000 by default.' }),
        order: z.enum(['desc', 'asc']).optional(),
        last_id: z.string().optional().meta({ description: "The previous page's meta.last_id." }),
      }),
    },
    responses: {
      200: success('A page of pairs.', method === 'GET' ? keyListSchema : undefined),
      ...AUTHENTICATED,
    },
  };
}

function jwks(method: 'GET' | 'HEAD'): ZodOpenApiOperationObject {
  return {
    operationId: method === 'GET' ? 'getJwks' : 'headJwks',
    summary: 'The public keys of the tokens the gateway issues (RFC 7517), not in the envelope.',
    security: [],
    responses: {
      200: success(
        'The key set; Cache-Control: public, max-age=300.',
        method === 'GET' ? jwksSchema : undefined,
      ),
      400: PUBLIC_BAD_REQUEST,
      429: ADDRESS_LIMITED,
    },
  };
}

function openapi(method: 'GET' | 'HEAD'): ZodOpenApiOperationObject {
  return {
    operationId: method === 'GET' ? 'getOpenApi' : 'headOpenApi',
    summary: 'This document.',
    security: [],
    responses: {
      200: success(
        'The OpenAPI document; Cache-Control: public, max-age=300, with an ETag.',
        method === 'GET' ? z.object({ openapi: z.string() }).loose() : undefined,
        { ...GATEWAY_HEADERS, ETag: z.string() },
      ),
      304: success('If-None-Match named the current ETag.', undefined, {
        ...REQUEST_ID,
        ETag: z.string(),
      }),
      400: PUBLIC_BAD_REQUEST,
      429: ADDRESS_LIMITED,
    },
  };
}

const ALLOW = {
  Allow: z.string().meta({
    description: 'The methods the route takes (RFC 9110 §10.2.1).',
    header: { id: 'Allow' },
  }),
};

const FORWARD_AUTH_DESCRIPTION = `Off by default (forwardAuth.enabled); its path is forwardAuth.path (${FORWARD_AUTH_PATH} by default). Answered only to server.trustedProxies. The original request is named by X-Forwarded-Method with X-Forwarded-Uri, or X-Original-Method with X-Original-URI, or (Envoy) by calling the check's path followed by the original path with the original method; it is decided by the route's rules as if it had come itself. Every error answer of the check carries X-Auth-Error with its code; with the check off, its path answers 404 like any unknown one.`;

/**
 * The forward-auth check. `envoy`: called at the check's path followed by the original path,
 * with the original method (so a method the route lacks is the route's 405, with Allow);
 * otherwise the check's own method is not read: any method asks (proxies send GET), and a 405
 * is the named method's.
 */
function forwardAuth(method: 'GET' | 'HEAD', envoy: boolean): ZodOpenApiOperationObject {
  const statuses = envoy
    ? ([400, 401, 403, 404, 429, 503] as const)
    : ([400, 401, 403, 404, 405, 429, 503] as const);
  return {
    operationId: `${method === 'GET' ? 'forwardAuth' : 'headForwardAuth'}${envoy ? 'Envoy' : ''}`,
    summary: envoy
      ? 'The forward-auth check as Envoy ext_authz calls it: the original method and path under the check’s path.'
      : 'The forward-auth check (nginx auth_request, Caddy, Traefik): the original request named in headers; any method of the check asks the same.',
    description: FORWARD_AUTH_DESCRIPTION,
    security: SECURITY,
    requestParams: envoy
      ? {
          path: z.object({
            path: z.string().meta({
              description:
                'The original request’s path without its leading slash (it may hold more slashes), and its query after the check’s.',
            }),
          }),
        }
      : {
          header: z.object({
            'X-Forwarded-Method': z.string().optional(),
            'X-Forwarded-Uri': z.string().optional(),
            'X-Original-Method': z.string().optional(),
            'X-Original-URI': z.string().optional(),
          }),
        },
    responses: {
      200: success(
        'Allowed: exactly 200, an empty body, and the identity in X-Auth-*.',
        undefined,
        {
          ...GATEWAY_HEADERS,
          'X-Auth-Subject': z.string(),
          'X-Auth-Method': z.enum(['basic', 'bearer']),
          'X-Auth-Key': z.string().meta({ description: 'Empty for a bearer token.' }),
          'X-Auth-Scopes': z.string().meta({ description: 'Space-delimited; may be empty.' }),
          'X-Accel-Expires': z.string().optional(),
        },
      ),
      ...Object.fromEntries(
        statuses.map((status) => [
          status,
          errorResponse(status, WHY[status], {
            extra: {
              // With the check off, its path is as unknown as any other: a 404 without it.
              'X-Auth-Error':
                status === 404 ? z.enum(codesOf(status)).optional() : z.enum(codesOf(status)),
              ...(status === 405 ? ALLOW : {}),
            },
          }),
        ]),
      ),
    },
  };
}

const tokenExchange: ZodOpenApiOperationObject = {
  operationId: 'issueToken',
  summary: "A web-app user's password for a short-lived Bearer JWT (spec §5.2).",
  security: [],
  requestBody: { required: true, content: { [JSON_TYPE]: { schema: loginSchema } } },
  responses: {
    200: success('The token; Pragma: no-cache.', tokenListSchema, {
      ...GATEWAY_HEADERS,
      Pragma: z.literal('no-cache'),
    }),
    400: AUTHENTICATED[400],
    // The exchange reads no Authorization header: a wrong login is its only 401.
    401: errorResponse(401, 'the username or password is wrong', {
      codes: ['invalid_credentials'],
    }),
    ...WITH_BODY,
    429: AUTHENTICATED[429],
    503: AUTHENTICATED[503],
  },
};

const createKey: ZodOpenApiOperationObject = {
  operationId: 'createKey',
  summary: 'A new pair for the caller’s subject; its secret is shown once.',
  security: SECURITY,
  requestBody: { required: false, content: { [JSON_TYPE]: { schema: createKeySchema } } },
  responses: {
    201: success('The new pair with its secret; Pragma: no-cache.', createdKeyListSchema, {
      ...GATEWAY_HEADERS,
      Pragma: z.literal('no-cache'),
    }),
    ...AUTHENTICATED,
    ...WITH_BODY,
    422: errorResponse(422, 'keys.maxActivePerSubject active pairs already'),
  },
};

const revokeKey: ZodOpenApiOperationObject = {
  operationId: 'revokeKey',
  summary: 'Revokes one of the caller’s pairs.',
  security: SECURITY,
  requestParams: {
    path: z.object({
      key: z.string().regex(KEY_ID.pattern).meta({ description: 'The pair’s key.' }),
    }),
    query: z.object({
      force: z.string().optional().meta({
        description:
          'Only `true` forces: the last active pair is then revoked too. Any other value is not forced (409 on the last active pair).',
      }),
    }),
  },
  responses: {
    200: success('The revoked pair.', keyListSchema),
    ...AUTHENTICATED,
    404: errorResponse(404, 'no pair with this key belongs to the caller'),
    409: errorResponse(409, 'the last active pair, without ?force=true'),
  },
};

const DESCRIPTION = `An authenticating reverse proxy in front of an accounts API: Basic key:secret (RFC 7617) or Bearer JWT (RFC 6750). Every answer carries X-Request-Id; every error the gateway itself answers with is the ErrorEnvelope, its \`status\` the HTTP status and its \`code\` one of ErrorCode:

${ERROR_CODES.map((code) => `- ${ERROR_CATALOGUE[code].status} \`${code}\`: ${ERROR_CATALOGUE[code].message}`).join('\n')}

Besides the answers listed per operation, any request may be refused before it is routed: 400 (invalid_path, bad_request framing), 408, 431, and 404 for a path nothing serves; a method an operation lacks on a documented path answers 405 with Allow. \`draining\` is answered by the admin port's /readyz only. Paths are those of the default configuration: configured routes (routes[]) may add and rename.`;

/** The OpenAPI 3.1 document of the public API: pure, the same on every call. */
export function buildOpenApiDocument(): ReturnType<typeof createDocument> {
  const document: ZodOpenApiObject = {
    openapi: '3.1.1',
    info: { title: 'accounts-gateway', version: '1.0.0', description: DESCRIPTION },
    components: {
      securitySchemes: {
        basic: {
          type: 'http',
          scheme: 'basic',
          description: 'A key pair: base64(key:secret) (RFC 7617).',
        },
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'A token from POST /auth/token, or from a configured issuer (auth.bearer.issuers).',
        },
      },
      schemas: { ErrorEnvelope: errorEnvelopeSchema },
    },
    paths: {
      ...Object.fromEntries(
        Object.entries(LISTING_PATHS).map(([path, name]) => [
          path,
          { get: listing('GET', name), head: listing('HEAD', name) },
        ]),
      ),
      '/keys': { get: keyList('GET'), head: keyList('HEAD'), post: createKey },
      '/keys/{key}': { delete: revokeKey },
      '/auth/token': { post: tokenExchange },
      '/.well-known/jwks.json': { get: jwks('GET'), head: jwks('HEAD') },
      [OPENAPI_PATH]: { get: openapi('GET'), head: openapi('HEAD') },
      [FORWARD_AUTH_PATH]: { get: forwardAuth('GET', false) },
      [`${FORWARD_AUTH_PATH}/{path}`]: {
        get: forwardAuth('GET', true),
        head: forwardAuth('HEAD', true),
      },
    },
  };
  return createDocument(document);
}
