import { isIP } from 'node:net';
import { z } from 'zod';
import {
  BCRYPT_HASH,
  KEY_ID,
  SCOPE,
  SUBJECT,
  USERNAME,
  type Format,
} from '../identity/identity-formats.js';
import { checkRequestTarget } from '../routing/check-request-target.js';
import { decodeFleetKey } from '../identity/fleet-key-text.js';

/**
 * `${VAR}` substitution yields strings: number and boolean settings accept their string
 * spelling too (`port: ${PORT:-8080}`), while string settings stay strings whatever the
 * value looks like (a numeric secret is still a secret).
 */
function int<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v), schema);
}
function bool() {
  return z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean());
}

/**
 * The settings that hold a secret, and how much of each to hide wherever the configuration
 * is shown (`accounts-gateway config`): `value`, all of it; `url`, a URL's userinfo and its
 * query's values, where a password or token rides (`redis://:pw@host`, `?api_key=`), while
 * the scheme, host and path stay readable. A new setting that holds one is marked here.
 */
export const secretSettings = z.registry<{ readonly redact: 'value' | 'url' }>();
function secretValue<T extends z.ZodType>(schema: T): T {
  secretSettings.add(schema, { redact: 'value' });
  return schema;
}
function secretUrl<T extends z.ZodType>(schema: T): T {
  secretSettings.add(schema, { redact: 'url' });
  return schema;
}

/**
 * The costs of the bcrypt hashes the gateway and the CLI make (`credentials.bcryptCost`): below
 * 4 bcrypt refuses; above 15 one hash takes seconds (at 31, days), and a login waits for it.
 */
export const BCRYPT_COST = { min: 4, max: 15 } as const;

/** A host to listen on: an IP address, or a host name (RFC 1123 letters, digits, `-`, `.`). */
export function isHost(value: string): boolean {
  return isIP(value) !== 0 || /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/.test(value);
}
const hostname = z.string().refine(isHost, 'must be a host name or an IP address');
const port = int(z.number().int().min(0).max(65535));
const durationMs = int(z.number().int().positive());
const headerName = z
  .string()
  .regex(/^[a-z0-9-]+$/, 'must be a lower-case header name (letters, digits, "-")');
const formatted = (format: Format) => z.string().regex(format.pattern, `must be ${format.rule}`);
const subject = formatted(SUBJECT);
const keyId = formatted(KEY_ID);
/** Scope tokens (RFC 6749 §3.3), each once; `[]` requires or grants none. */
const scopes = z
  .array(formatted(SCOPE))
  .max(64)
  .refine((list) => new Set(list).size === list.length, 'must not repeat a scope')
  .default([]);

/**
 * A configured path: origin-form characters only (no `?`, `#`, backslash, space or control
 * character), and nothing a request path would be refused for. The route table matches
 * configured paths without checking them again, and the upstream receives `upstreamPath`
 * as it is: a dot segment, `%2e` or an encoded `/` or `\` there would be resolved by the
 * upstream into another path (`/accounts/../admin` reaching `/admin`), so the same rule as
 * for requests applies (RFC 3986 §3.3, §5.2.4).
 */
function isPlainPath(path: string): boolean {
  return /^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(path) && checkRequestTarget(path) !== undefined;
}
const plainPath = z.string().refine(isPlainPath, {
  message:
    'must be a plain absolute path (no dot segment, %2e, encoded / or \\, control character, ? or #)',
});

/**
 * The rules a path is held to after `plainPath` read a plain path only: one problem per path,
 * since the route-path rule below would only repeat it. Said with `when` rather than an
 * `abort` of the plain-path rule: an abort would also skip the cross-checks of the whole
 * configuration, which run after every rule (load-config.ts).
 */
const onPlainPath = {
  when: (payload: z.core.ParsePayload) =>
    typeof payload.value === 'string' && isPlainPath(payload.value),
};

/**
 * A path a route matches: a plain path whose only characters are letters, digits, `-._~`
 * and `/`, plus escapes of bytes that must be escaped. A client may spell a sub-delim or
 * `:`/`@` raw or escaped (`%3A`) and an upstream that decodes the path treats both alike, so
 * a route naming either spelling would let the other pass under another route.
 */
const routePath = plainPath.refine(
  (path) => /^(?:[A-Za-z0-9._~/-]|%(?!2[146-9A-C]|3A|3D|40)[0-9A-F]{2})*$/.test(path),
  {
    ...onPlainPath,
    message: 'must use only letters, digits, "-._~", "/" and upper-case escapes of other bytes',
  },
);

/** End-to-end request headers the upstream receives unless forwarding.allowHeaders says otherwise. */
export const DEFAULT_ALLOW_HEADERS = [
  'accept',
  'accept-encoding',
  'accept-language',
  'cache-control',
  'content-type',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-unmodified-since',
  'pragma',
  'range',
  'user-agent',
] as const;

const filePath = z.string().min(1);

/**
 * TLS to an https:// upstream: a CA to trust instead of Node's bundled ones, the name to
 * check the certificate against (and send in SNI), a client certificate and key. The
 * upstream's certificate is always verified: there is no switch to turn that off (an
 * upstream with a self-signed certificate is trusted by naming it, or its CA, in caFile).
 */
const upstreamTlsSchema = z
  .strictObject({
    caFile: filePath.optional(),
    servername: hostname.optional(),
    certFile: filePath.optional(),
    keyFile: filePath.optional(),
  })
  .refine((tls) => (tls.certFile === undefined) === (tls.keyFile === undefined), {
    message: 'certFile and keyFile go together',
  });

export const upstreamSchema = z.strictObject({
  /** `builtin` runs the reference accounts service in process, on loopback. */
  url: secretUrl(z.union([z.literal('builtin'), z.url({ protocol: /^https?$/ })])),
  timeoutMs: durationMs.default(10_000),
  connectTimeoutMs: durationMs.default(2_000),
  maxSockets: int(z.number().int().positive()).default(256),
  /**
   * A chunked request body up to this size is read whole and sent with a Content-Length, for
   * upstreams that cannot read a chunked request (nginx buffers bodies alike; 16 KiB is its
   * client_body_buffer_size on 64-bit). Larger ones stream chunked; 0 streams every one.
   */
  bodyBufferBytes: int(
    z
      .number()
      .int()
      .min(0)
      .max(8 * 1024 * 1024),
  ).default(16 * 1024),
  /**
   * The forwarding engine: http-proxy-3 (the product's named engine) or undici (about half
   * the CPU per request). Both keep the same forwarding contract.
   */
  engine: z.enum(['http-proxy-3', 'undici']).default('http-proxy-3'),
  tls: upstreamTlsSchema.optional(),
});

/** An upstream's TLS settings apply to an https:// url only. */
const upstreamEntrySchema = upstreamSchema.refine(
  (upstream) => upstream.tls === undefined || upstream.url.startsWith('https:'),
  { path: ['tls'], message: 'only applies to an https:// url' },
);

/**
 * A rate-limit policy: `requests` per `periodSec` on average, up to `burst` at once (by
 * default `requests`). Bounds keep the µs math of the limiter exact.
 */
export const ratePolicySchema = z.strictObject({
  requests: int(z.number().int().min(1).max(1_000_000_000)),
  periodSec: int(z.number().int().min(1).max(31_536_000)),
  burst: int(z.number().int().min(1).max(1_000_000_000)).optional(),
  /**
   * On Redis: `lease` spends a share each process takes of the bucket (within the bound of
   * docs/security.md); `exact` asks Redis for every request. In process both are exact.
   */
  mode: z.enum(['lease', 'exact']).default('lease'),
  /** Decide and count (metric, access log), never refuse: for rolling a limit out. */
  shadow: bool().default(false),
});

export const routeSchema = z.strictObject({
  name: z.string().min(1),
  /** Raw request paths, matched exactly. A route has these, `prefixes`, or both. */
  paths: z.array(routePath).default([]),
  /**
   * Raw path prefixes, each ending in `/`: a request path under one is forwarded with its
   * rest appended to `upstreamPath` (exact paths win; among prefixes, the longest). No empty
   * segment: upstreams that merge slashes (nginx's merge_slashes, many frameworks) read
   * `/a//` as `/a/`, another route's path.
   */
  prefixes: z
    .array(
      routePath.refine((path) => path.endsWith('/'), {
        ...onPlainPath,
        message: 'must end with /',
      }),
    )
    .default([]),
  methods: z
    .array(z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']))
    .min(1)
    .default(['GET', 'HEAD']),
  upstream: z.string().min(1),
  /**
   * The path the upstream receives, whatever spelling of `paths` the client used; under a
   * prefix, this path, `/` and the rest.
   */
  upstreamPath: plainPath,
  auth: z
    .array(z.enum(['basic', 'bearer']))
    .min(1)
    .default(['basic', 'bearer']),
  /** Counted per credential on this route, beside `rateLimits.credential`. */
  rateLimit: ratePolicySchema.optional(),
  /** Every one of these scopes is required of an authenticated caller (403 forbidden). */
  scopes,
});

/**
 * A verified-credential cache. Basic holds up to 100,000 pairs by default (about 300 bytes each:
 * 30 MB when full): a population of that size under a Zipf load misses ~12% of requests at 60 s
 * instead of ~19% with 10,000, and each miss costs a store read and an HMAC.
 */
const cacheSchema = (maxEntries: number) =>
  z.strictObject({
    ttlSec: int(z.number().int().min(0)).default(60),
    maxEntries: int(z.number().int().positive()).default(maxEntries),
  });

/**
 * Verified records (credentials/verified-record.ts): on by default. The fleet key is the
 * store's own (made once, shared by every gateway on the same Redis) unless one is configured
 * here, inline or in a file: then a copy of Redis alone holds no key to test guesses with.
 */
const verifiedRecordsSchema = z
  .strictObject({
    enabled: bool().default(true),
    /** How long a record proves its pair (capped at the pair's expiry); hits renew it. */
    ttlSec: int(
      z
        .number()
        .int()
        .min(60)
        .max(30 * 86_400),
    ).default(6 * 3600),
    fleetKey: secretValue(
      z.string().refine((text) => decodeFleetKey(text) !== undefined, {
        message: 'must be at least 32 bytes in base64 (openssl rand -base64 32)',
      }),
    ).optional(),
    fleetKeyFile: filePath.optional(),
  })
  .refine((r) => r.fleetKey === undefined || r.fleetKeyFile === undefined, {
    message: 'give fleetKey or fleetKeyFile, not both',
  });

/** How a remote JWKS (`jwksUrl`) is fetched and kept; today's fixed values are the defaults. */
const jwksSchema = z.strictObject({
  /** A fetched key set is used this long before it is fetched again. */
  cacheMaxAgeMs: durationMs.default(600_000),
  /** At least this long between fetches for a `kid` the key set does not hold. */
  cooldownMs: durationMs.default(30_000),
  /** One fetch may take this long. */
  timeoutMs: durationMs.default(2_000),
  /** After a failed fetch, the last good key set is used and the next try waits this long, */
  failureBackoffMs: durationMs.default(1_000),
  /** doubling after each further failure up to this. */
  maxFailureBackoffMs: durationMs.default(60_000),
});

export const bearerIssuerSchema = z
  .strictObject({
    name: z.string().min(1),
    /** Mandatory: jose refuses nothing by algorithm unless told, so each source names its own. */
    algorithms: z
      .array(
        z.enum([
          'HS256',
          'HS384',
          'HS512',
          'RS256',
          'RS384',
          'RS512',
          'PS256',
          'PS384',
          'PS512',
          'ES256',
          'ES384',
          'ES512',
          'EdDSA',
          'Ed25519',
        ]),
      )
      .min(1),
    issuer: z.string().min(1).optional(),
    audience: z.string().min(1).optional(),
    secret: secretValue(z.string().min(32, 'must be at least 32 characters')).optional(),
    publicKey: z.string().min(1).optional(),
    publicKeyFile: z.string().min(1).optional(),
    jwksUrl: secretUrl(z.url({ protocol: /^https?$/ })).optional(),
    jwks: jwksSchema.optional(),
  })
  .superRefine((value, ctx) => {
    if (value.jwks !== undefined && value.jwksUrl === undefined) {
      ctx.addIssue({ code: 'custom', path: ['jwks'], message: 'only applies with jwksUrl' });
    }
    const sources = [value.secret, value.publicKey, value.publicKeyFile, value.jwksUrl].filter(
      (v) => v !== undefined,
    );
    if (sources.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: 'exactly one of secret, publicKey, publicKeyFile, jwksUrl is required',
      });
    }
    const hmac = value.algorithms.filter((a) => a.startsWith('HS'));
    if (value.secret !== undefined && hmac.length !== value.algorithms.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['algorithms'],
        message: 'a secret takes only HS* algorithms',
      });
    }
    if (value.secret === undefined && hmac.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['algorithms'],
        message: 'HS* algorithms need a secret',
      });
    }
  });

/** A URL the Redis client can use: redis: or rediss:, and a port from 0 to 65535 if any. */
function isRedisUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === 'redis:' || protocol === 'rediss:';
}

/** The characters a key prefix may hold. */
const KEY_PREFIX = /^[A-Za-z0-9:{}_-]*$/;

export const redisSchema = z.strictObject({
  url: secretUrl(z.string().refine(isRedisUrl, 'must be a redis:// or rediss:// URL')).default(
    'redis://127.0.0.1:6379',
  ),
  mode: z.enum(['standalone', 'sentinel', 'cluster']).default('standalone'),
  /** Sentinel: the master group name; sentinels/cluster nodes as host:port. */
  sentinelName: z.string().optional(),
  nodes: z.array(z.string().regex(/^[^:]+:\d+$/, 'must be host:port')).default([]),
  /**
   * What every key name starts with. No brace: the layout gives each key the hash tag of what
   * it belongs to (a subject, a username, a network), so that a Cluster spreads them; a brace
   * here would make one tag of the prefix and put every key in one slot again.
   */
  keyPrefix: z
    .string()
    .regex(KEY_PREFIX)
    .refine(
      (prefix) => !/[{}]/.test(prefix),
      'must hold no brace: each key carries its own hash tag; a prefix such as {ag}: of the single-slot layout goes in singleSlotPrefix',
    )
    .default('ag:'),
  /**
   * The prefix of the single-slot layout of earlier versions (`{ag}:` was the default
   * keyPrefix): pairs and users not found under keyPrefix are read there, and moved when
   * touched (`migrate` moves them all). `false` once nothing is left there.
   */
  singleSlotPrefix: z.union([z.literal(false), z.string().regex(KEY_PREFIX)]).default('{ag}:'),
  commandTimeoutMs: durationMs.default(300),
  /**
   * Once Redis has failed this many calls in a row, calls are answered at once by each path's
   * policy (no command sent) while one call at a time probes it: after openMs, then after
   * twice as long after each failed probe, up to maxOpenMs. On a Cluster, one per master.
   */
  breaker: z
    .strictObject({
      enabled: bool().default(true),
      failureThreshold: int(z.number().int().min(1).max(1000)).default(3),
      openMs: int(z.number().int().min(10).max(60_000)).default(200),
      maxOpenMs: int(z.number().int().min(10).max(600_000)).default(1000),
    })
    .refine((b) => b.maxOpenMs >= b.openMs, {
      path: ['maxOpenMs'],
      message: 'must be at least openMs',
    })
    .prefault({}),
  /** A CA to trust for rediss:// (and Sentinel or Cluster nodes, then over TLS) instead of Node's. */
  tls: z.strictObject({ caFile: filePath }).optional(),
});

/** The TLS settings apply to TLS connections only: a standalone URL must then say rediss://. */
export const redisConnectionSchema = redisSchema.refine(
  (redis) =>
    redis.tls === undefined || redis.mode !== 'standalone' || redis.url.startsWith('rediss:'),
  { path: ['tls'], message: 'needs a rediss:// url' },
);

const seedKeySchema = z.strictObject({
  key: keyId,
  // A hash is no secret to log in with, but it can be guessed at offline: never shown.
  secretHash: secretValue(formatted(BCRYPT_HASH)),
  subject,
  label: z.string().max(200).default(''),
  scopes,
});

const seedUserSchema = z.strictObject({
  username: formatted(USERNAME),
  passwordHash: secretValue(formatted(BCRYPT_HASH)),
  subject,
  scopes,
});

const accountSchema = z.looseObject({ id: int(z.number().int()) });

export const serverSchema = z.strictObject({
  host: hostname.default('127.0.0.1'),
  port: port.default(8080),
  headersTimeoutMs: durationMs.default(10_000),
  requestTimeoutMs: durationMs.default(30_000),
  keepAliveTimeoutMs: durationMs.default(5_000),
  maxHeaderCount: int(z.number().int().min(8).max(1000)).default(100),
  /** Peers (addresses or CIDR ranges) whose X-Forwarded-* values are kept and appended to. */
  trustedProxies: z
    .array(
      z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()], 'must be an IP address or CIDR range'),
    )
    .default([]),
  /**
   * How client addresses are counted by the lockout and the address rate limit: by the
   * network of this many leading bits. An IPv6 client holds a /64 at least (RFC 6177), so
   * counting single IPv6 addresses would give it 2^64 fresh counters. Shorter prefixes than
   * these bounds would put whole providers on one counter: one attacker could lock them out.
   */
  clientNetworks: z
    .strictObject({
      ipv4Prefix: int(z.number().int().min(16).max(32)).default(32),
      ipv6Prefix: int(z.number().int().min(32).max(128)).default(64),
    })
    .prefault({}),
  /** How long SIGTERM waits for in-flight requests, counted from the signal. */
  drainTimeoutMs: durationMs.default(10_000),
  /**
   * The least time SIGTERM keeps accepting connections (answering with `Connection: close`)
   * before it stops: the time a load balancer needs to see /readyz 503 and stop sending.
   */
  shutdownDelayMs: int(z.number().int().min(0)).default(0),
  /**
   * After the delay, the port keeps accepting until no client has been connected, nor
   * connected, for this long (at most until drainTimeoutMs - keepAliveTimeoutMs from the
   * signal): closing a port resets the connections still queued on it, and clients told to
   * close come back. 0: it closes right after the delay.
   */
  shutdownQuietMs: int(z.number().int().min(0)).default(500),
  /** Largest JSON body the gateway's own endpoints read. */
  maxBodyBytes: int(
    z
      .number()
      .int()
      .min(256)
      .max(1024 * 1024),
  ).default(4096),
  /**
   * Processes serving the API port: a primary forks this many workers (`auto`: one per
   * available core). 1 serves in one process, with no primary.
   */
  workers: int(
    z.custom<number | 'auto'>(
      (v) => v === 'auto' || (typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 256),
      // Not the abort z.custom makes by default: it would skip the cross-checks (onPlainPath).
      { message: 'must be a whole number from 1 to 256, or auto', abort: false },
    ),
  ).default(1),
  /**
   * The nice value (0–19) of libuv's thread pool, where bcrypt runs: higher gives the event
   * loop the CPU first when both want it. 0 leaves the pool as it is. Linux only.
   */
  threadPoolNice: int(z.number().int().min(0).max(19)).default(19),
  /**
   * HTTPS on the API port (TLS 1.2 at least), the certificate chain and key as PEM files.
   * Reloaded on SIGHUP and when the files change, if they pass the checks.
   */
  tls: z.strictObject({ certFile: filePath, keyFile: filePath }).optional(),
});

/** One lockout counter: failures allowed, then locks from `initialLockSec` doubling to a cap. */
const lockoutLimit = (threshold: number, maxLockSec: number) =>
  z
    .strictObject({
      /** Failures counted before the first lock. */
      threshold: int(z.number().int().positive()).default(threshold),
      /** The longest lock: each failure past the threshold doubles the lock up to this. */
      maxLockSec: int(z.number().int().positive()).default(maxLockSec),
    })
    .prefault({});

export const lockoutSchema = z.strictObject({
  enabled: bool().default(true),
  /** The first lock, once a counter reaches its threshold; doubled by each further failure. */
  initialLockSec: int(z.number().int().positive()).default(1),
  /** A counter is forgotten this long after its last failure (or after its lock ends). */
  windowSec: int(z.number().int().positive()).default(3600),
  /** Memory store only: counters kept at most (least recently used dropped). */
  maxTrackedCounters: int(z.number().int().positive()).default(100_000),
  /** Basic credentials: per client address, per (key, address), per key across all addresses. */
  basic: z
    .strictObject({
      address: lockoutLimit(50, 3600),
      keyAddress: lockoutLimit(10, 3600),
      key: lockoutLimit(1000, 300),
    })
    .prefault({}),
  /** `POST /auth/token`: per client address, per (username, address), per username. */
  token: z
    .strictObject({
      address: lockoutLimit(50, 3600),
      usernameAddress: lockoutLimit(5, 3600),
      username: lockoutLimit(200, 300),
    })
    .prefault({}),
});

export const adminSchema = z.strictObject({
  enabled: bool().default(true),
  host: hostname.default('127.0.0.1'),
  port: port.default(9090),
});

export const configSchema = z.strictObject({
  server: serverSchema.prefault({}),
  admin: adminSchema.prefault({}),
  upstreams: z
    .record(z.string().regex(/^[A-Za-z0-9_-]+$/), upstreamEntrySchema)
    .prefault({ accounts: { url: 'builtin' } }),
  routes: z
    .array(routeSchema)
    .min(1)
    .default([
      {
        name: 'accounts',
        paths: ['/account', '/accounts', '/accounts/'],
        prefixes: [],
        methods: ['GET', 'HEAD'],
        upstream: 'accounts',
        upstreamPath: '/accounts',
        auth: ['basic', 'bearer'],
        scopes: [],
      },
    ]),
  forwarding: z
    .strictObject({
      /** Send the client's Authorization header upstream (off: the gateway consumes it). */
      forwardAuthorization: bool().default(false),
      /** End-to-end request headers passed to the upstream; everything else is dropped. */
      allowHeaders: z.array(headerName).default([...DEFAULT_ALLOW_HEADERS]),
    })
    .prefault({}),
  auth: z
    .strictObject({
      realm: z
        .string()
        .regex(/^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/, 'must be printable ASCII without " or \\')
        .default('accounts-gateway'),
      basic: z
        .strictObject({
          cache: cacheSchema(100_000).prefault({}),
          /** bcrypt compares running at once (libuv runs them on its thread pool). */
          maxConcurrentHashes: int(z.number().int().positive()).default(4),
          /** compares waiting for a slot before new ones are refused with 503. */
          maxQueuedHashes: int(z.number().int().min(0)).default(64),
          /** Fleet-wide verified records: a checked strong secret proved by one HMAC after. */
          verifiedRecords: verifiedRecordsSchema.prefault({}),
        })
        .prefault({}),
      bearer: z
        .strictObject({
          maxTokenBytes: int(z.number().int().min(128)).default(8192),
          clockToleranceSec: int(z.number().int().min(0)).default(5),
          cache: cacheSchema(10_000).prefault({}),
          issuers: z.array(bearerIssuerSchema).default([]),
        })
        .prefault({}),
    })
    .prefault({}),
  credentials: z
    .strictObject({
      store: z.enum(['memory', 'redis']).default('memory'),
      redis: redisConnectionSchema.prefault({}),
      bcryptCost: int(z.number().int().min(BCRYPT_COST.min).max(BCRYPT_COST.max)).default(10),
      /** Memory store only: the pairs and users it starts with. */
      seed: z
        .strictObject({
          keys: z.array(seedKeySchema).default([]),
          users: z.array(seedUserSchema).default([]),
        })
        .prefault({}),
      /** Memory store only: make one pair at start and print it once (the zero-setup demo). */
      bootstrap: z
        .strictObject({
          enabled: bool().default(false),
          subject: subject.default('demo'),
          scopes,
          /** A web-app user of the subject, its password made at start and printed once too. */
          username: formatted(USERNAME).default('demo'),
        })
        .prefault({}),
    })
    .prefault({}),
  /** The tokens `POST /auth/token` issues (and the Bearer verifier accepts). */
  tokens: z
    .strictObject({
      issuer: z.string().min(1).default('accounts-gateway'),
      audience: z.string().min(1).default('accounts'),
      lifetimeSec: int(z.number().int().min(30).max(86_400)).default(900),
      algorithm: z.enum(['ES256', 'EdDSA']).default('ES256'),
      /** PKCS#8 PEM private key; without one a key is generated at start (development only). */
      signingKey: secretValue(z.string().min(1)).optional(),
      signingKeyFile: z.string().min(1).optional(),
      /** Public keys (SPKI PEM) of earlier signing keys, still published and accepted during rotation. */
      previousPublicKeys: z.array(z.string().min(1)).default([]),
    })
    .refine((t) => t.signingKey === undefined || t.signingKeyFile === undefined, {
      message: 'give signingKey or signingKeyFile, not both',
    })
    .prefault({}),
  /** Key-pair self-service (`/keys`). */
  keys: z
    .strictObject({
      maxActivePerSubject: int(z.number().int().min(1).max(1000)).default(10),
      /** Scopes a caller needs for GET/POST /keys and DELETE /keys/{key} (403 forbidden). */
      requiredScopes: scopes,
      /**
       * last_used_at is written at most once per pair per this many seconds per instance, in
       * batches (never a store write per request); 0 keeps no last use.
       */
      lastUsedIntervalSec: int(z.number().int().min(0).max(86_400)).default(60),
      /**
       * Days a revoked or expired pair is kept (listed, with its status) before the store
       * deletes it; 0 deletes it once it has ended. At most ten years, the longest lifetime.
       */
      retainEndedDays: int(z.number().int().min(0).max(3650)).default(30),
      /**
       * The usable pairs ending within 7 and 30 days (gateway_pairs_expiring) are counted this
       * often: a walk over the store, by one gateway of those on a Redis per interval; 0 counts
       * none.
       */
      expiringCountIntervalSec: int(z.number().int().min(0).max(86_400)).default(300),
    })
    .prefault({}),
  /**
   * Lockout after failed attempts (see src/protection/lockout.ts), shared by every instance
   * through Redis. Counters are kept per client address, per (key or username, address) and
   * per key or username across all addresses.
   */
  lockout: lockoutSchema.prefault({}),
  /** Replaced by `lockout`: named so that an old file fails with a pointer, not "unknown key". */
  login: z
    .unknown()
    .refine((v) => v === undefined, {
      message:
        'was replaced by lockout (lockout.token.* counts failed POST /auth/token attempts, in Redis); remove login',
    })
    .optional(),
  /** Rate limits; none unless a policy is set here or on a route. */
  rateLimits: z
    .strictObject({
      /** Per credential (the key for Basic, the subject for Bearer), every authenticated route. */
      credential: ratePolicySchema.optional(),
      /** Per subject across all its pairs and tokens: minting pairs does not multiply it. */
      subject: ratePolicySchema.optional(),
      /** Per client address, on the routes that take no credentials. */
      address: ratePolicySchema.optional(),
      /** The store does not answer: `open` lets requests through, `closed` answers 503. */
      onStoreError: z.enum(['open', 'closed']).default('open'),
      /** At most one warning per this many seconds while the store fails. */
      storeErrorLogIntervalSec: int(z.number().int().positive()).default(60),
      /** Buckets (memory store) or leases (Redis) kept in process; least recently used go first. */
      maxTrackedBuckets: int(z.number().int().positive()).default(100_000),
      /** Lease-mode limits on Redis (docs/security.md#rate-limits). */
      lease: z
        .strictObject({
          /**
           * A lease holds at most this long of its bucket's rate: over any interval a fleet of
           * P processes admits at most P × spanMs of the rate beyond the policy.
           */
          spanMs: int(z.number().int().min(1).max(1000)).default(25),
          /** Unspent requests of a lease lapse this long after it was taken. */
          lifeMs: int(z.number().int().min(10).max(60_000)).default(1000),
        })
        .prefault({}),
    })
    .prefault({}),
  /**
   * The check nginx `auth_request`, Caddy `forward_auth`, Traefik ForwardAuth and Envoy
   * `ext_authz` ask (docs/forward-auth.md). Off by default: it answers for other services,
   * so it is turned on where a proxy in `server.trustedProxies` will ask it.
   */
  forwardAuth: z
    .strictObject({
      enabled: bool().default(false),
      /** The check's path; Envoy calls it followed by the original path. */
      path: plainPath
        .refine((path) => path.length > 1 && !path.endsWith('/'), {
          ...onPlainPath,
          message: 'must not end with /',
        })
        .default('/auth/check'),
      /** `Cache-Control: private, max-age` on an allow answer (nginx proxy_cache); 0: no-store. */
      cacheMaxAgeSec: int(z.number().int().min(0).max(3600)).default(0),
    })
    .prefault({}),
  /**
   * The key holder's web application (docs/portal.md): pages where a web-app user signs in and
   * manages its own pairs, served on the API port under `basePath`.
   */
  portal: z
    .strictObject({
      enabled: bool().default(true),
      /**
       * Every page (the key holder's, docs/portal.md) is under this path; no route may use it
       * or a path under it (load-config.ts). Configured, so not in routing/own-paths.ts.
       */
      basePath: plainPath
        .refine((path) => path.length > 1 && path.endsWith('/'), {
          ...onPlainPath,
          message: 'must end with / (and not be / alone)',
        })
        .default('/portal/'),
      /** A session not seen for this long ends (OWASP: 15-30 minutes for most applications). */
      idleTimeoutSec: int(z.number().int().min(60).max(86_400)).default(1800),
      /** A session ends this long after its sign-in, however active. */
      absoluteTimeoutSec: int(z.number().int().min(300).max(604_800)).default(43_200),
      /**
       * The session cookie's `Secure` attribute and `__Host-` name: `auto` when the API port
       * speaks TLS (`server.tls`); `always` behind a proxy that terminates TLS for it.
       */
      secureCookie: z.enum(['auto', 'always']).default('auto'),
    })
    .prefault({}),
  /**
   * The audit trail of key events (docs/operations.md, Audit trail): every pair and user
   * change leaves an event in a bounded stream, the fleet's and its subject's.
   */
  audit: z
    .strictObject({
      /** Events the fleet's stream keeps at least (trimmed on write, approximately). */
      maxEvents: int(z.number().int().min(100).max(10_000_000)).default(100_000),
      /** Events each subject's stream keeps at least (what GET /keys/events pages through). */
      maxEventsPerSubject: int(z.number().int().min(10).max(100_000)).default(1000),
      /** Days an event is kept: older ones are trimmed on write and never read. */
      retainDays: int(z.number().int().min(1).max(3650)).default(90),
    })
    .prefault({}),
  referenceUpstream: z
    .strictObject({
      /** Accounts per subject, served by the built-in upstream. */
      accounts: z.record(subject, z.array(accountSchema)).default({}),
    })
    .prefault({}),
  /** W3C trace context and OTLP span export (docs/operations.md, Tracing). */
  tracing: z
    .strictObject({
      /** Continue a valid incoming traceparent; false: every request starts a trace of its own. */
      propagate: bool().default(true),
      /** The share of the traces the gateway starts that are sampled; an incoming flag is kept. */
      sampleRatio: z
        .preprocess(
          (v) => (typeof v === 'string' && /^\d+(?:\.\d+)?$/.test(v) ? Number(v) : v),
          z.number().min(0).max(1),
        )
        .default(1),
      /** `service.name` of the exported spans. */
      serviceName: z.string().min(1).max(256).default('accounts-gateway'),
      /** Unset: no span is made and the OpenTelemetry SDK is never loaded. */
      otlp: z
        .strictObject({
          /** The collector's OTLP/HTTP traces URL, `/v1/traces` included. */
          endpoint: secretUrl(
            z
              .string()
              .refine(
                (v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol),
                'must be an http:// or https:// URL',
              ),
          ),
          /** Sent with every export (a collector's API key): kept out of every log line. */
          headers: z.record(z.string(), secretValue(z.string())).default({}),
          timeoutMs: durationMs.default(10_000),
          /** Spans wait at most this long in the batch before an export (or 512 of them). */
          batchDelayMs: durationMs.default(5000),
        })
        .optional(),
    })
    .prefault({}),
  logging: z
    .strictObject({
      level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      requests: bool().default(true),
      /** The access line's path keeps the query: off, since queries can carry tokens. */
      query: bool().default(false),
    })
    .prefault({}),
});

export type GatewayConfig = z.output<typeof configSchema>;
export type RouteConfig = GatewayConfig['routes'][number];
export type UpstreamConfig = GatewayConfig['upstreams'][string];
export type BearerIssuerConfig = GatewayConfig['auth']['bearer']['issuers'][number];
export type RedisConfig = GatewayConfig['credentials']['redis'];
export type TokensConfig = GatewayConfig['tokens'];
export type RateLimitsConfig = GatewayConfig['rateLimits'];
export type RatePolicyConfig = z.output<typeof ratePolicySchema>;
export type LockoutConfig = GatewayConfig['lockout'];
export type LockoutLimitConfig = LockoutConfig['basic']['address'];
