import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiObject,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathItemObject,
  type ZodOpenApiResponseObject,
} from 'zod-openapi';
import { ERROR_CATALOGUE, type ErrorCode } from '../errors/error-codes.js';
import { KEY_ID } from '../identity/identity-formats.js';
import { OWN_PATHS, ownPathTemplate } from '../routing/own-paths.js';
import {
  accountListSchema,
  createdKeyListSchema,
  createKeySchema,
  ERROR_CODES,
  errorEnvelopeSchema,
  jwksSchema,
  keyEventListSchema,
  keyListSchema,
  loginSchema,
  rolledKeyListSchema,
  rollKeySchema,
  tokenListSchema,
} from './api-schemas.js';

/** The paths of the document, as the default configuration serves them. */
const LISTING_PATHS = {
  '/account': 'Account',
  '/accounts': 'Accounts',
  '/accounts/': 'AccountsSlash',
} as const;
const FORWARD_AUTH_PATH = '/auth/check';
export const OPENAPI_PATH = OWN_PATHS.openapi.path;

/** Every method a path item can name (OpenAPI 3.1 §4.8.9), in the order Allow lists them. */
export const PATH_ITEM_METHODS = [
  'get',
  'head',
  'post',
  'put',
  'delete',
  'patch',
  'options',
  'trace',
] as const;
type Method = (typeof PATH_ITEM_METHODS)[number];

/**
 * The methods each path takes in the default configuration: the listing route's `methods`
 * and each endpoint's own. Any other method is answered 405 with `Allow` naming these.
 */
const LISTING_METHODS = ['get', 'head'] as const satisfies readonly Method[];

const JSON_TYPE = 'application/json';
const HTTP_STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
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
/** RFC 6750 §3.1: a Bearer token that lacks a scope is told which. */
const SCOPE_CHALLENGE = {
  'WWW-Authenticate': z
    .string()
    .optional()
    .meta({
      description:
        'When the credential is a Bearer token that lacks a scope the route requires: Bearer realm="…", error="insufficient_scope", scope="…" (RFC 6750 §3.1).',
      header: { id: 'WWW-Authenticate-Insufficient-Scope' },
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
 * The envelope of one status: the ErrorEnvelope, its status that one and its code among
 * `codes` (those of the catalogue with that status unless an operation answers fewer). One
 * schema (a component) per status and set of codes, however many operations answer it.
 */
const errorSchemas = new Map<string, z.ZodType>();
function errorSchema(status: number, codes: [ErrorCode, ...ErrorCode[]]): z.ZodType {
  // Fewer codes than the status has: a component of its own, named after them.
  const named = codes.length === codesOf(status).length ? [] : codes.map(pascalCase);
  const id = `Error${status}${named.join('')}`;
  let schema = errorSchemas.get(id);
  if (schema === undefined) {
    // allOf the envelope and what narrows it: every error is the ErrorEnvelope.
    schema = z
      .intersection(
        errorEnvelopeSchema,
        z.looseObject({
          // A literal would say `type: number`; the envelope's status is an integer.
          status: z.int().min(status).max(status).meta({ const: status }),
          error: z.looseObject({ code: z.enum(codes) }),
        }),
      )
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
  400: 'a malformed request: its framing (a second Host or Authorization line, no Host on HTTP/1.1, a Transfer-Encoding other than chunked, a body on GET or HEAD, a Connection header naming Content-Length or Transfer-Encoding), its path or query (a dot segment, an encoded slash or backslash, a fragment, a spelling another route decides), a malformed Authorization header, or a query or body the operation reads and refuses',
  401: 'no credentials, or credentials that are not valid',
  403: 'the credentials lack a scope the route requires',
  404: 'nothing matches',
  405: 'the method is not the route’s; Allow names those it takes',
  408: 'the request head, or a body the operation reads, did not arrive within server.headersTimeoutMs or server.requestTimeoutMs',
  413: 'the body is larger than server.maxBodyBytes',
  415: 'the body is not application/json',
  429: 'a rate limit or a lockout after failed attempts',
  431: 'more header lines than server.maxHeaderCount, or a head over 16 KiB',
  503: 'the credential store cannot be asked, or the gateway is overloaded',
} as const;

const ALLOW = {
  Allow: z.string().meta({
    description: 'The methods the route takes (RFC 9110 §10.2.1).',
    header: { id: 'Allow' },
  }),
};

/** Refused before a route is chosen: every operation may answer these. */
const UNROUTED = {
  400: errorResponse(400, WHY[400], { id: 'BadRequest' }),
  408: errorResponse(408, WHY[408], { id: 'RequestTimeout' }),
  431: errorResponse(431, WHY[431], { id: 'HeadersTooLarge' }),
};
const METHOD_NOT_ALLOWED = errorResponse(405, WHY[405], {
  id: 'MethodNotAllowed',
  extra: ALLOW,
});

/** What every authenticated operation may answer besides its success. */
const AUTHENTICATED = {
  ...UNROUTED,
  401: errorResponse(401, WHY[401], { id: 'Unauthorized' }),
  403: errorResponse(403, WHY[403], { id: 'Forbidden', extra: SCOPE_CHALLENGE }),
  429: errorResponse(429, WHY[429], { id: 'TooManyRequests' }),
  503: errorResponse(503, WHY[503], { id: 'Unavailable' }),
};
const WITH_BODY = {
  413: errorResponse(413, WHY[413], { id: 'ContentTooLarge' }),
  415: errorResponse(415, WHY[415], { id: 'UnsupportedMediaType' }),
};
/** The routes without credentials: counted by rateLimits.address, when it is set. */
const ADDRESS_LIMITED = {
  429: errorResponse(429, 'the address rate limit (rateLimits.address)', {
    id: 'AddressRateLimited',
  }),
  503: errorResponse(
    503,
    'the rate limit store cannot be asked, the address limit is in exact mode and rateLimits.onStoreError is closed',
    { id: 'AddressLimitUnavailable', codes: ['credential_store_unavailable'] },
  ),
};
const SECURITY = [{ basic: [] }, { bearer: [] }];

const TAGS = {
  accounts: 'Accounts',
  keys: 'Key pairs',
  tokens: 'Tokens',
  discovery: 'Discovery',
  forwardAuth: 'Forward auth',
} as const;
type Tag = (typeof TAGS)[keyof typeof TAGS];

/** One component: zod-openapi registers an id once, so every listing shares this object. */
const UPSTREAM_ANSWER: ZodOpenApiResponseObject = {
  id: 'UpstreamAnswer',
  description:
    'Any other status is the upstream’s answer, passed through: its status, headers and body as the upstream sent them (a 404, a 500…), with X-Request-Id added.',
  headers: z.object(REQUEST_ID),
};

function allowOf(methods: readonly Method[]): string {
  return methods.map((method) => method.toUpperCase()).join(', ');
}

/** What a path's refused methods share beyond the 405 (see notTaken). */
interface NotTakenExtras {
  /** Refusals that come before the method's (a `/keys/{key}` that is no key id). */
  readonly responses?: ZodOpenApiOperationObject['responses'];
  /** The path's template parameters, which every operation on it names. */
  readonly requestParams?: ZodOpenApiOperationObject['requestParams'];
}

/**
 * A method the path does not take: 405 with Allow, once framing and the path have passed
 * (the method is checked before credentials are read). `name`: the path's spelling in the
 * operation's id.
 */
function notTaken(
  method: Method,
  name: string,
  tag: Tag,
  allow: readonly Method[],
  extras: NotTakenExtras,
): ZodOpenApiOperationObject {
  return {
    operationId: `${method}${name}NotAllowed`,
    tags: [tag],
    summary: `Not taken: 405 with Allow: ${allowOf(allow)}.`,
    description: `The path takes ${allowOf(allow)} only: ${method.toUpperCase()} is answered 405 with that Allow, before any credential is read.`,
    // Refused before any credential is read: none is asked for.
    security: [],
    ...(extras.requestParams === undefined ? {} : { requestParams: extras.requestParams }),
    responses: { ...UNROUTED, 405: METHOD_NOT_ALLOWED, ...extras.responses },
  };
}

/** A path item: `taken` as built, every other method of a path item 405 (see notTaken). */
function pathItem(
  name: string,
  tag: Tag,
  taken: Partial<Record<Method, ZodOpenApiOperationObject>>,
  extras: NotTakenExtras = {},
): ZodOpenApiPathItemObject {
  const allow = PATH_ITEM_METHODS.filter((method) => taken[method] !== undefined);
  return Object.fromEntries(
    PATH_ITEM_METHODS.map((method) => [
      method,
      taken[method] ?? notTaken(method, name, tag, allow, extras),
    ]),
  );
}

/** `name`: the path's spelling in the operation's id (ids are unique in a document). */
function listing(method: 'GET' | 'HEAD', name: string): ZodOpenApiOperationObject {
  return {
    operationId: `${method === 'GET' ? 'list' : 'headList'}${name}`,
    tags: [TAGS.accounts],
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
    tags: [TAGS.keys],
    summary: "The caller's key pairs, never a secret or a hash, paged by the envelope's meta.",
    description:
      'Needs the scopes of keys.requiredScopes. A query that is not a page (limit outside 1–1000, an unknown order or last_id) is a 400.',
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

function keyEvents(method: 'GET' | 'HEAD'): ZodOpenApiOperationObject {
  return {
    operationId: method === 'GET' ? 'listKeyEvents' : 'headKeyEvents',
    tags: [TAGS.keys],
    summary:
      "The audit trail's events of the caller's subject (its pairs made, rolled, revoked; its users changed), never a secret or a hash, paged by the envelope's meta.",
    description:
      'Needs the scopes of keys.requiredScopes. Newest first unless order=asc; last_id is the previous page’s meta.last_id, an event id. A query that is not a page (limit outside 1–1000, an unknown order, a last_id that is no event id) is a 400. Events older than audit.retainDays, or past the subject’s audit.maxEventsPerSubject newest, are gone.',
    security: SECURITY,
    requestParams: {
      query: z.object({
        limit: z.int().min(1).max(1000).optional().meta({ description: '1000 by default.' }),
        order: z.enum(['desc', 'asc']).optional(),
        last_id: z
          .string()
          .optional()
          .meta({ description: "The previous page's meta.last_id: an event id." }),
      }),
    },
    responses: {
      200: success('A page of events.', method === 'GET' ? keyEventListSchema : undefined),
      ...AUTHENTICATED,
    },
  };
}

function jwks(method: 'GET' | 'HEAD'): ZodOpenApiOperationObject {
  return {
    operationId: method === 'GET' ? 'getJwks' : 'headJwks',
    tags: [TAGS.tokens],
    summary: 'The public keys of the tokens the gateway issues (RFC 7517), not in the envelope.',
    description:
      'Served without credentials, in the bare RFC 7517 shape JWKS clients read; counted by rateLimits.address.',
    security: [],
    responses: {
      200: success(
        'The key set; Cache-Control: public, max-age=300.',
        method === 'GET' ? jwksSchema : undefined,
      ),
      ...UNROUTED,
      ...ADDRESS_LIMITED,
    },
  };
}

function openapi(method: 'GET' | 'HEAD'): ZodOpenApiOperationObject {
  return {
    operationId: method === 'GET' ? 'getOpenApi' : 'headOpenApi',
    tags: [TAGS.discovery],
    summary: 'This document.',
    description:
      'Served without credentials, the same bytes as docs/openapi.json; counted by rateLimits.address.',
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
      ...UNROUTED,
      ...ADDRESS_LIMITED,
    },
  };
}

const FORWARD_AUTH_DESCRIPTION = `Off by default (forwardAuth.enabled); its path is forwardAuth.path (${FORWARD_AUTH_PATH} by default). Answered only to server.trustedProxies. The original request is named by X-Forwarded-Method with X-Forwarded-Uri, or X-Original-Method with X-Original-URI, or (Envoy) by calling the check's path followed by the original path with the original method; it is decided by the route's rules as if it had come itself. Every error answer of the check itself carries X-Auth-Error with its code (those refused before the check is read, for their framing, target or size, do not); with the check off, its path answers 404 like any unknown one.`;

const AUTH_ERROR = (status: number) =>
  z.enum(codesOf(status)).meta({
    description: 'The error code, for a proxy that reads the check’s headers only.',
  });

/**
 * An error of the check, with X-Auth-Error: one component per status, shared by its methods.
 * A 400 or 404 may come before the check is read (for the request's own framing or target,
 * or with the check off), without it.
 */
const checkErrors = new Map<number, ZodOpenApiResponseObject>();
function checkError(status: 400 | 401 | 403 | 404 | 405 | 429 | 503): ZodOpenApiResponseObject {
  let response = checkErrors.get(status);
  if (response === undefined) {
    const header =
      status === 400 || status === 404 ? AUTH_ERROR(status).optional() : AUTH_ERROR(status);
    response = errorResponse(status, WHY[status], {
      id: `Check${HTTP_STATUS_TEXT[status]?.replace(/ /g, '') ?? status}`,
      extra: {
        'X-Auth-Error': header,
        ...(status === 405 ? ALLOW : {}),
        ...(status === 403 ? SCOPE_CHALLENGE : {}),
      },
    });
    checkErrors.set(status, response);
  }
  return response;
}

const ALLOWED = success(
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
);

/**
 * The forward-auth check as proxies call it: the original request named in headers, the
 * check's own method not read (proxies send GET, some the original's), so each method asks
 * the same and a 405 is the named method's.
 */
function forwardAuth(method: Method): ZodOpenApiOperationObject {
  return {
    operationId: method === 'get' ? 'forwardAuth' : `${method}ForwardAuth`,
    tags: [TAGS.forwardAuth],
    summary:
      'The forward-auth check (nginx auth_request, Caddy, Traefik): the original request named in headers; any method of the check asks the same.',
    description: FORWARD_AUTH_DESCRIPTION,
    security: SECURITY,
    requestParams: {
      header: z.object({
        'X-Forwarded-Method': z.string().optional(),
        'X-Forwarded-Uri': z.string().optional(),
        'X-Original-Method': z.string().optional(),
        'X-Original-URI': z.string().optional(),
      }),
    },
    responses: {
      200: ALLOWED,
      ...UNROUTED,
      ...Object.fromEntries(
        ([400, 401, 403, 404, 405, 429, 503] as const).map((status) => [
          status,
          checkError(status),
        ]),
      ),
    },
  };
}

const ENVOY_PATH_PARAMETER = {
  path: z.object({
    path: z.string().meta({
      description:
        'The original request’s path without its leading slash (it may hold more slashes), and its query after the check’s.',
    }),
  }),
};

/**
 * The check as Envoy ext_authz calls it: the original method and path under the check's
 * path, so the methods it takes are the named route's (the default listing's GET and HEAD).
 */
function forwardAuthEnvoy(method: 'GET' | 'HEAD'): ZodOpenApiOperationObject {
  return {
    operationId: `${method === 'GET' ? 'forwardAuth' : 'headForwardAuth'}Envoy`,
    tags: [TAGS.forwardAuth],
    summary:
      'The forward-auth check as Envoy ext_authz calls it: the original method and path under the check’s path.',
    description: FORWARD_AUTH_DESCRIPTION,
    security: SECURITY,
    requestParams: ENVOY_PATH_PARAMETER,
    responses: {
      200: ALLOWED,
      ...UNROUTED,
      ...Object.fromEntries(
        ([400, 401, 403, 404, 429, 503] as const).map((status) => [status, checkError(status)]),
      ),
    },
  };
}

/**
 * Another method under the Envoy path: the named route's 405 (with Allow and X-Auth-Error),
 * once the check has found the peer trusted (403), the request named (400) and a route (404).
 */
function envoyNotTaken(method: Method): ZodOpenApiOperationObject {
  const taken = allowOf(LISTING_METHODS);
  return {
    operationId: `${method}ForwardAuthEnvoyNotAllowed`,
    tags: [TAGS.forwardAuth],
    summary: `The original method is not the route’s: 405 with Allow: ${taken}.`,
    description: `${FORWARD_AUTH_DESCRIPTION} The default listing takes ${taken} only: ${method.toUpperCase()} is answered 405 with that Allow, before any credential is read.`,
    security: [],
    requestParams: ENVOY_PATH_PARAMETER,
    responses: {
      ...UNROUTED,
      ...Object.fromEntries(
        ([400, 403, 404, 405] as const).map((status) => [status, checkError(status)]),
      ),
    },
  };
}

const tokenExchange: ZodOpenApiOperationObject = {
  operationId: 'issueToken',
  tags: [TAGS.tokens],
  summary: "A web-app user's password for a short-lived Bearer JWT (spec §5.2).",
  description:
    'No Authorization header is read: the body holds the login. Failed attempts count towards lockout.token; a locked-out login is a 429 whatever the password.',
  security: [],
  requestBody: { required: true, content: { [JSON_TYPE]: { schema: loginSchema } } },
  responses: {
    200: success('The token; Pragma: no-cache.', tokenListSchema, {
      ...GATEWAY_HEADERS,
      Pragma: z.literal('no-cache'),
    }),
    ...UNROUTED,
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
  tags: [TAGS.keys],
  summary: 'A new pair for the caller’s subject; its secret is shown once.',
  description:
    'Needs the scopes of keys.requiredScopes; the new pair carries at most the caller’s scopes (403 beyond them) and, for a Basic caller, lives no longer than the caller’s pair.',
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

/** `/keys/` followed by no key id matches no route. */
const NOT_A_KEY = errorResponse(
  404,
  'the last segment is not a key id, or no pair with this key belongs to the caller',
  {
    id: 'KeyNotFound',
  },
);

const KEY_PARAMETER = {
  path: z.object({
    key: z.string().regex(KEY_ID.pattern).meta({ description: 'The pair’s key.' }),
  }),
};

const revokeKey: ZodOpenApiOperationObject = {
  operationId: 'revokeKey',
  tags: [TAGS.keys],
  summary: 'Revokes one of the caller’s pairs.',
  description:
    'Needs the scopes of keys.requiredScopes. A pair of another subject is as unknown as one that does not exist (404).',
  security: SECURITY,
  requestParams: {
    ...KEY_PARAMETER,
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
    404: NOT_A_KEY,
    409: errorResponse(409, 'the last active pair, without ?force=true'),
  },
};

const rollKey: ZodOpenApiOperationObject = {
  operationId: 'rollKey',
  tags: [TAGS.keys],
  summary:
    'A successor of one of the caller’s pairs, with its label, scopes and expiry; its secret is shown once, and the rolled pair ends after the overlap.',
  description:
    'Needs the scopes of keys.requiredScopes, and all of the pair’s (403 otherwise); a Basic caller may roll only a pair that ends no later than its own (403). The rolled pair keeps working for overlap_sec (3600 when absent; 0 revokes it at once), never past its own expiry, and every gateway refuses it from then on. The rolled pair does not count under keys.maxActivePerSubject: a subject at the cap may roll. A pair of another subject is as unknown as one that does not exist (404).',
  security: SECURITY,
  requestParams: KEY_PARAMETER,
  requestBody: { required: false, content: { [JSON_TYPE]: { schema: rollKeySchema } } },
  responses: {
    201: success(
      'The new pair with its secret, and the rolled pair as it is now; Pragma: no-cache.',
      rolledKeyListSchema,
      { ...GATEWAY_HEADERS, Pragma: z.literal('no-cache') },
    ),
    ...AUTHENTICATED,
    ...WITH_BODY,
    404: NOT_A_KEY,
    409: errorResponse(409, 'the pair is revoked or expired: there is nothing to roll'),
    422: errorResponse(
      422,
      'keys.maxActivePerSubject active pairs already besides the one rolled (during an earlier roll’s overlap)',
    ),
  },
};

/** A parameterized path's template parameter, in the 405s of the methods it does not take. */
const ANY_KEY_SEGMENT = {
  path: z.object({
    key: z.string().meta({ description: 'Any segment: one not a key id is a 404.' }),
  }),
};

const DESCRIPTION = `An authenticating reverse proxy in front of an accounts API: Basic key:secret (RFC 7617) or Bearer JWT (RFC 6750). Every answer carries X-Request-Id; every error the gateway itself answers with is the ErrorEnvelope, its \`status\` the HTTP status and its \`code\` one of ErrorCode:

${ERROR_CODES.map((code) => `- ${ERROR_CATALOGUE[code].status} \`${code}\`: ${ERROR_CATALOGUE[code].message}`).join('\n')}

Each operation lists every status it answers, those refused before a route is read included (400 for framing or the path, 408, 431); every method a path does not take is listed too, answered 405 with Allow. Not listed under any path: a request whose target names no path (authority-form such as \`other.example:80\`, a CONNECT, \`accounts\` without its slash) is 400 \`invalid_path\`; a head that does not parse is 400 \`bad_request\`, or 408 or 431; plain HTTP sent to a TLS listener is 400 \`bad_request\`; a method OpenAPI cannot name is 405 like any other the path does not take; 500 \`internal_error\` is a fault of the gateway; \`draining\` is answered by the admin port's /readyz only. Paths are those of the default configuration: configured routes (routes[]) may add and rename them, and take other methods.`;

const SERVERS_DESCRIPTION =
  'The gateway that served this document: a relative URL resolves against the address the document was fetched from (GET /openapi.json on the public port), whichever host, port, scheme or load balancer a deployment puts in front. No absolute URL would be true of every deployment.';

/** The OpenAPI 3.1 document of the public API: pure, the same on every call. */
export function buildOpenApiDocument(): ReturnType<typeof createDocument> {
  const document: ZodOpenApiObject = {
    openapi: '3.1.1',
    info: {
      title: 'accounts-gateway',
      version: '1.0.0',
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: SERVERS_DESCRIPTION }],
    tags: [
      { name: TAGS.accounts, description: 'The listing, forwarded to the upstream.' },
      { name: TAGS.keys, description: 'A subject’s own key pairs.' },
      { name: TAGS.tokens, description: 'Bearer tokens the gateway issues, and their keys.' },
      { name: TAGS.discovery, description: 'This document.' },
      { name: TAGS.forwardAuth, description: 'The check other proxies ask (off by default).' },
    ],
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
    },
    paths: {
      ...Object.fromEntries(
        Object.entries(LISTING_PATHS).map(([path, name]) => [
          path,
          pathItem(name, TAGS.accounts, { get: listing('GET', name), head: listing('HEAD', name) }),
        ]),
      ),
      [OWN_PATHS.keys.path]: pathItem('Keys', TAGS.keys, {
        get: keyList('GET'),
        head: keyList('HEAD'),
        post: createKey,
      }),
      [OWN_PATHS.keyEvents.path]: pathItem('KeyEvents', TAGS.keys, {
        get: keyEvents('GET'),
        head: keyEvents('HEAD'),
      }),
      [ownPathTemplate(OWN_PATHS.key)]: pathItem(
        'Key',
        TAGS.keys,
        { delete: revokeKey },
        {
          responses: { 404: NOT_A_KEY },
          requestParams: {
            path: z.object({
              key: z.string().meta({ description: 'Any last segment: one not a key id is a 404.' }),
            }),
          },
        },
      ),
      [ownPathTemplate(OWN_PATHS.keyRoll)]: pathItem(
        'KeyRoll',
        TAGS.keys,
        { post: rollKey },
        { responses: { 404: NOT_A_KEY }, requestParams: ANY_KEY_SEGMENT },
      ),
      [OWN_PATHS.token.path]: pathItem('Token', TAGS.tokens, { post: tokenExchange }),
      [OWN_PATHS.jwks.path]: pathItem('Jwks', TAGS.tokens, {
        get: jwks('GET'),
        head: jwks('HEAD'),
      }),
      [OPENAPI_PATH]: pathItem('OpenApi', TAGS.discovery, {
        get: openapi('GET'),
        head: openapi('HEAD'),
      }),
      [FORWARD_AUTH_PATH]: Object.fromEntries(
        PATH_ITEM_METHODS.map((method) => [method, forwardAuth(method)]),
      ),
      [`${FORWARD_AUTH_PATH}/{path}`]: Object.fromEntries(
        PATH_ITEM_METHODS.map((method) => [
          method,
          method === 'get' || method === 'head'
            ? forwardAuthEnvoy(method === 'get' ? 'GET' : 'HEAD')
            : envoyNotTaken(method),
        ]),
      ),
    },
  };
  return createDocument(document);
}
