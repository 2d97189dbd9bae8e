import { stringify } from 'yaml';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  loadConfigFile,
  parseConfig,
  RESERVED_PATHS,
  SLASH_TWIN_HINT,
} from '../../../src/config/load-config.js';
import { given } from '../../support/config-override.js';

const SECRET = 'an-hmac-secret-of-at-least-32-characters';
const PLAIN_PATH =
  'must be a plain absolute path (no dot segment, %2e, encoded / or \\, control character, ? or #)';

/** The problems a config produces; fails the test when it parses. */
function problemsOf(
  yaml: string,
  env: Record<string, string> = {},
  overrides: Parameters<typeof parseConfig>[3] = {},
): readonly string[] {
  try {
    parseConfig(yaml, 'test.yaml', env, overrides);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

function isDeepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true;
  return Object.isFrozen(value) && Object.values(value).every(isDeepFrozen);
}

describe('parseConfig: scopes', () => {
  const withRouteScopes = (scopes: unknown): string =>
    stringify({
      routes: [
        {
          name: 'r',
          paths: ['/r'],
          upstream: 'accounts',
          upstreamPath: '/r',
          scopes,
        },
      ],
    });

  it('takes route scopes and keys.requiredScopes made of RFC 6749 scope tokens', () => {
    const config = parseConfig(
      `${withRouteScopes(['accounts:read', 'x!#[]~'])}\nkeys:\n  requiredScopes: [keys]\n`,
      'scopes.yaml',
    );
    expect(config.routes[0]?.scopes).toEqual(['accounts:read', 'x!#[]~']);
    expect(config.keys.requiredScopes).toEqual(['keys']);
  });

  it('refuses a scope with a space, a quote or a backslash, an empty one and a repeated one, naming the path', () => {
    for (const scopes of [['a b'], ['a"'], ['a\\b'], [''], ['a', 'a']])
      expect(() => parseConfig(withRouteScopes(scopes), 'scopes.yaml')).toThrow(
        /routes\[0\]\.scopes/,
      );
  });
});

describe('parseConfig: defaults', () => {
  it('turns an empty document into the documented defaults', () => {
    const config = parseConfig('', 'test.yaml');
    expect(config.server).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      maxHeaderCount: 100,
      trustedProxies: [],
      clientNetworks: { ipv4Prefix: 32, ipv6Prefix: 64 },
      drainTimeoutMs: 10_000,
      threadPoolNice: 19,
    });
    expect(config.admin).toEqual({ enabled: true, host: '127.0.0.1', port: 9090 });
    expect(config.upstreams).toEqual({
      accounts: {
        url: 'builtin',
        timeoutMs: 10_000,
        connectTimeoutMs: 2_000,
        maxSockets: 256,
        bodyBufferBytes: 16384,
        engine: 'http-proxy-3',
      },
    });
    expect(config.routes).toEqual([
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
    ]);
    expect(config.keys.requiredScopes).toEqual([]);
    expect(config.forwarding.forwardAuthorization).toBe(false);
    expect(config.forwarding.allowHeaders).not.toContain('authorization');
    expect(config.auth.realm).toBe('accounts-gateway');
    expect(config.auth.bearer.issuers).toEqual([]);
    expect(config.credentials.store).toBe('memory');
    expect(config.credentials.redis.url).toBe('redis://127.0.0.1:6379');
  });

  it('treats a document of only comments like an empty one', () => {
    expect(parseConfig('# nothing here\n', 'test.yaml')).toEqual(parseConfig('', 'test.yaml'));
  });

  it('returns a deeply frozen config', () => {
    const config = parseConfig('', 'test.yaml');
    expect(isDeepFrozen(config)).toBe(true);
    expect(() => {
      (config.server as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it('accepts a full explicit configuration', () => {
    const config = parseConfig(
      `
server:
  host: 0.0.0.0
  port: 8081
  trustedProxies: [10.0.0.1, "::1"]
upstreams:
  backend:
    url: http://127.0.0.1:9000
    timeoutMs: 500
routes:
  - name: listing
    paths: [/accounts]
    upstream: backend
    upstreamPath: /v1/accounts
    auth: [basic]
auth:
  bearer:
    issuers:
      - name: local
        algorithms: [HS256]
        secret: ${SECRET}
        issuer: https://issuer.example
        audience: gateway
`,
      'test.yaml',
    );
    expect(config.upstreams).toEqual({
      backend: {
        url: 'http://127.0.0.1:9000',
        timeoutMs: 500,
        connectTimeoutMs: 2_000,
        maxSockets: 256,
        bodyBufferBytes: 16384,
        engine: 'http-proxy-3',
      },
    });
    expect(config.routes).toEqual([
      {
        name: 'listing',
        paths: ['/accounts'],
        prefixes: [],
        methods: ['GET', 'HEAD'],
        upstream: 'backend',
        upstreamPath: '/v1/accounts',
        auth: ['basic'],
        scopes: [],
      },
    ]);
    expect(config.auth.bearer.issuers).toEqual([
      {
        name: 'local',
        algorithms: ['HS256'],
        secret: SECRET,
        issuer: 'https://issuer.example',
        audience: 'gateway',
      },
    ]);
    expect(config.server.trustedProxies).toEqual(['10.0.0.1', '::1']);
  });
});

describe('parseConfig: problems', () => {
  it('rejects an unknown top-level key, naming it', () => {
    expect(problemsOf('bogus: 1\n')).toEqual(['(root): unknown key bogus']);
  });

  it('rejects the old login section, naming lockout as its replacement', () => {
    expect(problemsOf('login:\n  maxFailures: 10\n')).toEqual([
      'login: was replaced by lockout (lockout.token.* counts failed POST /auth/token attempts, in Redis); remove login',
    ]);
  });

  it('turns lockout on by default, with key- and username-wide thresholds far above the per-address ones', () => {
    const { lockout } = parseConfig('', 'test.yaml');
    expect(lockout.enabled).toBe(true);
    expect(lockout.basic.key.threshold).toBeGreaterThanOrEqual(
      10 * lockout.basic.keyAddress.threshold,
    );
    expect(lockout.token.username.threshold).toBeGreaterThanOrEqual(
      10 * lockout.token.usernameAddress.threshold,
    );
  });

  it('rejects a lockout threshold that is not a positive integer, with its path', () => {
    expect(problemsOf('lockout:\n  basic:\n    key:\n      threshold: 0\n')[0]).toMatch(
      /^lockout\.basic\.key\.threshold: /,
    );
  });

  it('takes trusted proxies as addresses and CIDR ranges, and client networks by prefix', () => {
    const { server } = parseConfig(
      'server:\n  trustedProxies: [10.0.0.0/8, "fd00::/8", 192.0.2.7]\n' +
        '  clientNetworks: { ipv4Prefix: 24, ipv6Prefix: 48 }\n',
      'test.yaml',
    );
    expect(server.trustedProxies).toEqual(['10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    expect(server.clientNetworks).toEqual({ ipv4Prefix: 24, ipv6Prefix: 48 });
  });

  it('rejects a trusted proxy that is no address or range, and client network prefixes out of range', () => {
    expect(problemsOf('server:\n  trustedProxies: [proxy.internal, 10.0.0.0/33]\n')).toEqual([
      'server.trustedProxies[0]: must be an IP address or CIDR range',
      'server.trustedProxies[1]: must be an IP address or CIDR range',
    ]);
    const prefixes = problemsOf('server:\n  clientNetworks: { ipv4Prefix: 8, ipv6Prefix: 129 }\n');
    expect(prefixes).toHaveLength(2);
    expect(prefixes[0]).toMatch(/^server\.clientNetworks\.ipv4Prefix: /);
    expect(prefixes[1]).toMatch(/^server\.clientNetworks\.ipv6Prefix: /);
  });

  it('rejects an unknown nested key with its YAML path and the known key it most likely meant', () => {
    expect(problemsOf('server:\n  prot: 8080\n')).toEqual([
      'server: unknown key prot (did you mean `port`?)',
    ]);
  });

  it('suggests the closest known key at the same path, at any depth, in lists and whatever the case', () => {
    expect(
      problemsOf(`
upstreams:
  accounts:
    url: builtin
    timeout: 500
routes:
  - name: accounts
    paths: [/accounts]
    upstream: accounts
    upstreampath: /accounts
lockout:
  basic:
    key:
      treshold: 5
auth:
  basic:
    cache:
      ttlsec: 5
`),
    ).toEqual([
      'upstreams.accounts: unknown key timeout (did you mean `timeoutMs`?)',
      'routes[0].upstreamPath: required',
      'routes[0]: unknown key upstreampath (did you mean `upstreamPath`?)',
      'auth.basic.cache: unknown key ttlsec (did you mean `ttlSec`?)',
      'lockout.basic.key: unknown key treshold (did you mean `threshold`?)',
    ]);
  });

  it('suggests nothing for an unknown key that is close to no known key', () => {
    expect(problemsOf('forwarding:\n  stripEverything: true\n')).toEqual([
      'forwarding: unknown key stripEverything',
    ]);
  });

  it('reports a setting whose variable is not set once, not again as the empty value', () => {
    expect(problemsOf('server:\n  port: ${NOPE}\n')).toEqual([
      'server.port: environment variable NOPE is not set',
    ]);
  });

  it('says a bound in words, keeping messages the schema wrote itself', () => {
    expect(
      problemsOf(
        'tokens:\n  lifetimeSec: 5\nserver:\n  maxHeaderCount: 5000\nroutes: []\n' +
          'auth:\n  bearer:\n    issuers:\n      - { name: x, algorithms: [HS256], secret: short }\n',
      ),
    ).toEqual([
      'server.maxHeaderCount: must be at most 1000',
      'routes: must have at least 1 entries',
      'auth.bearer.issuers[0].secret: must be at least 32 characters',
      'tokens.lifetimeSec: must be at least 30',
    ]);
  });

  it('says a key written with nothing after it has no value, and what it expects', () => {
    expect(problemsOf('server:\n  port:\n  host: 127.0.0.1\n')).toEqual([
      'server.port: has no value (expected number)',
    ]);
  });

  it('leaves the schema library\'s "Invalid input:" out of a wrong type', () => {
    expect(problemsOf('server:\n  port: [8080]\n')).toEqual([
      'server.port: expected number, received array',
    ]);
  });

  it('says "required" for a key the schema needs and the file leaves out', () => {
    expect(
      problemsOf(`
upstreams:
  backend:
    timeoutMs: 500
routes:
  - paths: [/accounts]
    upstream: backend
auth:
  bearer:
    issuers:
      - secret: ${SECRET}
`),
    ).toEqual([
      'upstreams.backend.url: required',
      'routes[0].name: required',
      'routes[0].upstreamPath: required',
      'auth.bearer.issuers[0].name: required',
      'auth.bearer.issuers[0].algorithms: required',
    ]);
  });

  it('rejects unknown keys inside list items with the item index in the path', () => {
    expect(
      problemsOf(`
routes:
  - name: accounts
    paths: [/accounts]
    upstream: accounts
    upstreamPath: /accounts
    extra: true
    other: 1
`),
    ).toEqual(['routes[0]: unknown keys extra, other']);
  });

  it('reports every problem at once, each with its path', () => {
    const problems = problemsOf(`
server:
  port: 70000
  host: ""
  typo: 1
admin:
  enabled: maybe
credentials:
  store: postgres
logging:
  level: loud
`);
    expect(problems).toHaveLength(6);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^server\.port: /),
        expect.stringMatching(/^server\.host: /),
        'server: unknown key typo',
        expect.stringMatching(/^admin\.enabled: /),
        expect.stringMatching(/^credentials\.store: /),
        expect.stringMatching(/^logging\.level: /),
      ]),
    );
  });

  it('lists every problem in the error message and names the source', () => {
    let caught: unknown;
    try {
      parseConfig('server:\n  port: -1\nbogus: 1\n', 'conf/gateway.yaml');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.message).toMatch(/^invalid configuration in conf\/gateway\.yaml:\n {2}- /);
    for (const problem of error.problems) expect(error.message).toContain(`  - ${problem}`);
    expect(error.problems).toHaveLength(2);
  });

  it('reports a YAML syntax error with its line, column and the problem, on one line', () => {
    expect(problemsOf('server: [\n')).toEqual([
      'YAML line 2, column 1: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ]);
    expect(problemsOf('server:\n\tport: 1\n')).toEqual([
      'YAML line 2, column 1: Tabs are not allowed as indentation',
    ]);
  });

  it('reports a duplicated YAML key with the line and column of the second one', () => {
    expect(problemsOf('server:\n  port: 1\n  port: 2\n')).toEqual([
      'YAML line 3, column 3: Map keys must be unique',
    ]);
  });

  it('rejects a document that is not a mapping', () => {
    expect(problemsOf('- a\n- b\n')).toEqual([expect.stringMatching(/^\(root\): /)]);
  });

  it('rejects a route path that is not a plain absolute path', () => {
    expect(
      problemsOf(`
routes:
  - name: accounts
    paths: [/accounts, "/a/b?x", "relative"]
    upstream: accounts
    upstreamPath: /accounts
`),
    ).toEqual([`routes[0].paths[1]: ${PLAIN_PATH}`, `routes[0].paths[2]: ${PLAIN_PATH}`]);
  });

  // The route table matches configured paths without checking them (its fast path), and the
  // upstream would resolve a dot segment in upstreamPath into another path.
  it.each([
    ['a ".." segment', '/x/../y'],
    ['a trailing ".." segment', '/accounts/..'],
    ['a "." segment', '/accounts/./list'],
    ['"%2e%2e"', '/accounts/%2e%2e/admin'],
    ['".%2E"', '/accounts/.%2E/admin'],
    ['an encoded "/"', '/accounts%2Fadmin'],
    ['an encoded "\\"', '/accounts%5cadmin'],
    ['a raw backslash', '/accounts\\admin'],
    ['an encoded NUL', '/accounts%00'],
    ['an encoded LF', '/accounts%0a'],
    ['a raw tab', '/accounts\tx'],
    ['a "?"', '/accounts?x=1'],
    ['a "#"', '/accounts#top'],
    ['a malformed escape', '/accounts%zz'],
  ])('refuses %s in routes[].paths and upstreamPath', (_label, path) => {
    expect(
      problemsOf(`
routes:
  - name: accounts
    paths: [/accounts, ${JSON.stringify(path)}]
    upstream: accounts
    upstreamPath: ${JSON.stringify(path)}
`),
    ).toEqual([`routes[0].paths[1]: ${PLAIN_PATH}`, `routes[0].upstreamPath: ${PLAIN_PATH}`]);
  });

  it('accepts dots inside a segment and harmless escapes in configured paths', () => {
    const config = parseConfig(
      `
routes:
  - name: accounts
    paths: [/accounts/.well-known, /v1.2/accounts..., /caf%C3%A9]
    upstream: accounts
    upstreamPath: /api/v1.2/acc%C3%BCnts
`,
      'test.yaml',
    );
    expect(config.routes[0]?.paths).toEqual([
      '/accounts/.well-known',
      '/v1.2/accounts...',
      '/caf%C3%A9',
    ]);
    expect(config.routes[0]?.upstreamPath).toBe('/api/v1.2/acc%C3%BCnts');
  });

  it('rejects an upstream URL that is not http or https', () => {
    expect(problemsOf('upstreams:\n  accounts:\n    url: ftp://x/\n')).toEqual([
      expect.stringMatching(/^upstreams\.accounts\.url: /),
    ]);
  });
});

describe('parseConfig: environment substitution', () => {
  it('substitutes ${VAR} from the environment', () => {
    const config = parseConfig('server:\n  host: ${HOST}\n', 'test.yaml', { HOST: '0.0.0.0' });
    expect(config.server.host).toBe('0.0.0.0');
  });

  it('turns a whole-scalar reference to a number into a number', () => {
    expect(
      parseConfig('server:\n  port: ${PORT}\n', 'test.yaml', { PORT: '9000' }).server.port,
    ).toBe(9000);
  });

  it('uses the default of ${VAR:-default} when the variable is unset, as a number', () => {
    expect(parseConfig('server:\n  port: ${PORT:-8080}\n', 'test.yaml').server.port).toBe(8080);
  });

  it('uses the default when the variable is set but empty', () => {
    expect(
      parseConfig('server:\n  port: ${PORT:-8081}\n', 'test.yaml', { PORT: '' }).server.port,
    ).toBe(8081);
  });

  it('prefers the variable over the default', () => {
    expect(
      parseConfig('server:\n  port: ${PORT:-8080}\n', 'test.yaml', { PORT: '7000' }).server.port,
    ).toBe(7000);
  });

  it('keeps a digits-only variable a string where the setting is a string', () => {
    const yaml = 'auth:\n  realm: ${REALM}\ntokens:\n  issuer: ${ISS}\n';
    const config = parseConfig(yaml, 'test.yaml', { REALM: '12345', ISS: '678' });
    expect([config.auth.realm, config.tokens.issuer]).toEqual(['12345', '678']);
  });

  it('reads server.maxBodyBytes from a variable, as the example file does', () => {
    expect(
      parseConfig('server:\n  maxBodyBytes: ${MAX_BODY}\n', 'test.yaml', { MAX_BODY: '8192' })
        .server.maxBodyBytes,
    ).toBe(8192);
  });

  it('reads a reference-upstream account id from a variable', () => {
    const config = parseConfig(
      'referenceUpstream:\n  accounts:\n    demo:\n      - { id: "${ACCOUNT_ID}", name: x }\n',
      'test.yaml',
      { ACCOUNT_ID: '42' },
    );
    expect(config.referenceUpstream.accounts.demo).toEqual([{ id: 42, name: 'x' }]);
  });

  it('turns a whole-scalar reference to true/false into a boolean', () => {
    expect(parseConfig('admin:\n  enabled: ${ADMIN:-false}\n', 'test.yaml').admin.enabled).toBe(
      false,
    );
    expect(
      parseConfig('admin:\n  enabled: ${ADMIN}\n', 'test.yaml', { ADMIN: 'true' }).admin.enabled,
    ).toBe(true);
  });

  it('substitutes inside a longer string and keeps it a string', () => {
    const config = parseConfig(
      'upstreams:\n  accounts:\n    url: http://${UP_HOST}:${UP_PORT:-9000}/base\n',
      'test.yaml',
      { UP_HOST: 'backend' },
    );
    expect(config.upstreams.accounts?.url).toBe('http://backend:9000/base');
  });

  it('substitutes inside lists', () => {
    const config = parseConfig('server:\n  trustedProxies: ["${PROXY}"]\n', 'test.yaml', {
      PROXY: '10.1.2.3',
    });
    expect(config.server.trustedProxies).toEqual(['10.1.2.3']);
  });

  it('never lets a variable’s value change the document’s shape', () => {
    const config = parseConfig('tokens:\n  issuer: ${ISSUER}\n', 'test.yaml', {
      ISSUER: 'evil\nlifetimeSec: 30\nbogus: 2',
    });
    expect(config.tokens.issuer).toBe('evil\nlifetimeSec: 30\nbogus: 2');
    expect(config.tokens.lifetimeSec).toBe(900);
  });

  it('names the YAML path of a missing variable', () => {
    // The empty value left behind may fail the schema too; the variable is named first.
    expect(problemsOf('server:\n  host: ${GW_HOST}\n')[0]).toBe(
      'server.host: environment variable GW_HOST is not set',
    );
  });

  it('names list indexes in the path of a missing variable and reports all of them', () => {
    expect(
      problemsOf(`
upstreams:
  accounts:
    url: \${UPSTREAM}
routes:
  - name: accounts
    paths: [/accounts]
    upstream: accounts
    upstreamPath: \${UPSTREAM_PATH}
`),
    ).toEqual(
      expect.arrayContaining([
        'upstreams.accounts.url: environment variable UPSTREAM is not set',
        'routes[0].upstreamPath: environment variable UPSTREAM_PATH is not set',
      ]),
    );
  });

  it('does not substitute into keys and leaves text without a reference alone', () => {
    const config = parseConfig('auth:\n  realm: "cost $5 {x}"\n', 'test.yaml');
    expect(config.auth.realm).toBe('cost $5 {x}');
  });
});

describe('parseConfig: overrides', () => {
  it('overrides host and port with listen HOST:PORT', () => {
    const config = parseConfig(
      'server:\n  port: 1234\n',
      'test.yaml',
      {},
      { listen: given('--listen', '0.0.0.0:9000') },
    );
    expect([config.server.host, config.server.port]).toEqual(['0.0.0.0', 9000]);
  });

  it('overrides only the port with listen PORT', () => {
    const config = parseConfig(
      'server:\n  host: 10.0.0.1\n',
      'test.yaml',
      {},
      { listen: given('--listen', '9001') },
    );
    expect([config.server.host, config.server.port]).toEqual(['10.0.0.1', 9001]);
  });

  it('accepts a bracketed IPv6 host in listen', () => {
    const config = parseConfig('', 'test.yaml', {}, { listen: given('--listen', '[::1]:9002') });
    expect([config.server.host, config.server.port]).toEqual(['::1', 9002]);
  });

  it('reports a listen value that is not PORT or HOST:PORT, naming the flag or variable it came from', () => {
    const rule =
      'must be PORT or HOST:PORT (IPv6 in brackets: [::1]:8080), the port from 0 to 65535';
    expect(problemsOf('', {}, { listen: given('--listen', 'localhost') })).toEqual([
      `--listen: ${rule}`,
    ]);
    expect(problemsOf('', {}, { listen: given('GATEWAY_LISTEN', 'abc') })).toEqual([
      `GATEWAY_LISTEN: ${rule}`,
    ]);
    expect(problemsOf('', {}, { listen: given('--listen', '[]:8080') })).toEqual([
      `--listen: ${rule}`,
    ]);
  });

  it('reports a listen port out of range as the flag’s problem, not as server.port of the file', () => {
    expect(problemsOf('', {}, { listen: given('--listen', '99999') })).toEqual([
      expect.stringMatching(/^--listen: must be PORT or HOST:PORT/),
    ]);
  });

  it('names only the flag in the message when the flag is the one problem', () => {
    expect(() =>
      parseConfig('', 'config/gateway.yaml', {}, { listen: given('--listen', 'abc') }),
    ).toThrow(
      /^--listen: must be PORT or HOST:PORT \(IPv6 in brackets: \[::1\]:8080\), the port from 0 to 65535$/,
    );
  });

  it('reports bad flags and the file’s own problems apart, each under its own heading', () => {
    let caught: unknown;
    try {
      parseConfig(
        'server:\n  prot: 1\n',
        'conf/gateway.yaml',
        {},
        {
          listen: given('--listen', 'abc'),
          redisUrl: given('GATEWAY_REDIS_URL', 'http://cache:6379'),
        },
      );
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).message).toBe(
      [
        'invalid command-line options or environment variables:',
        '  - --listen: must be PORT or HOST:PORT (IPv6 in brackets: [::1]:8080), the port from 0 to 65535',
        '  - GATEWAY_REDIS_URL: must be a redis:// or rediss:// URL',
        'invalid configuration in conf/gateway.yaml:',
        '  - server: unknown key prot (did you mean `port`?)',
      ].join('\n'),
    );
  });

  it('moves the admin port with adminListen, PORT or HOST:PORT, IPv6 in brackets', () => {
    const file = 'admin:\n  host: 10.0.0.3\n  port: 9999\n';
    const port = parseConfig(
      file,
      'test.yaml',
      {},
      { adminListen: given('--admin-listen', '9191') },
    );
    expect(port.admin).toEqual({ enabled: true, host: '10.0.0.3', port: 9191 });
    const hostPort = parseConfig(
      file,
      'test.yaml',
      {},
      {
        adminListen: given('GATEWAY_ADMIN_LISTEN', '[::1]:9192'),
      },
    );
    expect(hostPort.admin).toEqual({ enabled: true, host: '::1', port: 9192 });
  });

  it('turns the admin port on when the file turned it off and adminListen gives it an address', () => {
    const config = parseConfig(
      'admin:\n  enabled: false\n',
      'test.yaml',
      {},
      {
        adminListen: given('--admin-listen', '127.0.0.1:9193'),
      },
    );
    expect(config.admin).toEqual({ enabled: true, host: '127.0.0.1', port: 9193 });
  });

  it('reports a bad adminListen naming it, and an admin port equal to the API port naming the flags that set them', () => {
    expect(problemsOf('', {}, { adminListen: given('GATEWAY_ADMIN_LISTEN', 'admin') })).toEqual([
      expect.stringMatching(/^GATEWAY_ADMIN_LISTEN: must be PORT or HOST:PORT/),
    ]);
    expect(
      problemsOf(
        '',
        {},
        { listen: given('--listen', '8181'), adminListen: given('--admin-listen', '8181') },
      ),
    ).toEqual(['--admin-listen: must differ from --listen']);
    expect(
      problemsOf('admin:\n  port: 8182\n', {}, { listen: given('GATEWAY_LISTEN', '8182') }),
    ).toEqual(['admin.port: must differ from GATEWAY_LISTEN']);
    expect(problemsOf('server:\n  port: 8183\nadmin:\n  port: 8183\n')).toEqual([
      'admin.port: must differ from server.port',
    ]);
  });

  it('refuses a listen address whose host is an unbracketed IPv6 address or no host at all', () => {
    for (const value of ['::1', '::', 'a b:80', 'host_name:80', '[not-ipv6]:80'])
      expect(problemsOf('', {}, { listen: given('--listen', value) }), value).toEqual([
        expect.stringMatching(/^--listen: must be PORT or HOST:PORT/),
      ]);
    const named = parseConfig('', 'test.yaml', {}, { listen: given('--listen', 'localhost:8080') });
    expect([named.server.host, named.server.port]).toEqual(['localhost', 8080]);
  });

  it('refuses a host in the file that is neither a host name nor an IP address', () => {
    expect(problemsOf('server:\n  host: "a b"\nadmin:\n  host: ""\n')).toEqual([
      'server.host: must be a host name or an IP address',
      'admin.host: must be a host name or an IP address',
    ]);
  });

  it('refuses a Redis URL the client could not open, from the file or a flag', () => {
    expect(
      problemsOf('credentials:\n  store: redis\n  redis:\n    url: redis://127.0.0.1:99999\n'),
    ).toEqual(['credentials.redis.url: must be a redis:// or rediss:// URL']);
    expect(
      problemsOf('', {}, { redisUrl: given('--redis-url', 'redis://127.0.0.1:notaport') }),
    ).toEqual(['--redis-url: must be a redis:// or rediss:// URL']);
    const config = parseConfig(
      '',
      'test.yaml',
      {},
      { redisUrl: given('--redis-url', 'rediss://:pw@redis.internal:6380/2') },
    );
    expect(config.credentials.redis.url).toBe('rediss://:pw@redis.internal:6380/2');
  });

  it('leaves a section the file does not write as a mapping for the schema to report', () => {
    expect(problemsOf('server: 8080\n', {}, { listen: given('--listen', '9000') })).toEqual([
      expect.stringMatching(/^server: /),
    ]);
  });

  it('switches the store to redis and sets its URL with redisUrl', () => {
    const config = parseConfig(
      'credentials:\n  store: memory\n',
      'test.yaml',
      {},
      { redisUrl: given('--redis-url', 'redis://10.0.0.2:6380/1') },
    );
    expect([config.credentials.store, config.credentials.redis.url]).toEqual([
      'redis',
      'redis://10.0.0.2:6380/1',
    ]);
  });

  it('reports a bad redisUrl or upstreamUrl naming the flag or variable, not the file’s key', () => {
    expect(problemsOf('', {}, { redisUrl: given('GATEWAY_REDIS_URL', 'http://x') })).toEqual([
      'GATEWAY_REDIS_URL: must be a redis:// or rediss:// URL',
    ]);
    expect(problemsOf('', {}, { upstreamUrl: given('--upstream-url', 'ftp://x/') })).toEqual([
      '--upstream-url: must be an http:// or https:// URL, or builtin',
    ]);
  });

  it('replaces the accounts upstream URL with upstreamUrl, keeping its other settings', () => {
    const config = parseConfig(
      'upstreams:\n  accounts:\n    url: builtin\n    timeoutMs: 700\n',
      'test.yaml',
      {},
      { upstreamUrl: given('--upstream-url', 'http://127.0.0.1:7000') },
    );
    expect(config.upstreams.accounts).toEqual({
      url: 'http://127.0.0.1:7000',
      timeoutMs: 700,
      connectTimeoutMs: 2_000,
      maxSockets: 256,
      bodyBufferBytes: 16384,
      engine: 'http-proxy-3',
    });
  });

  it('sets the upstream URL on an empty config through the default accounts upstream', () => {
    const config = parseConfig(
      '',
      'test.yaml',
      {},
      { upstreamUrl: given('--upstream-url', 'http://127.0.0.1:7000') },
    );
    expect(config.upstreams.accounts?.url).toBe('http://127.0.0.1:7000');
    expect(config.routes[0]?.upstream).toBe('accounts');
  });

  it('replaces the only upstream when it is not named accounts', () => {
    const config = parseConfig(
      `
upstreams:
  backend:
    url: http://127.0.0.1:1
routes:
  - name: r
    paths: [/accounts]
    upstream: backend
    upstreamPath: /accounts
`,
      'test.yaml',
      {},
      { upstreamUrl: given('--upstream-url', 'http://127.0.0.1:2') },
    );
    expect(config.upstreams.backend?.url).toBe('http://127.0.0.1:2');
  });

  it('reports an upstreamUrl override that cannot tell which upstream to replace', () => {
    expect(
      problemsOf(
        `
upstreams:
  a:
    url: http://127.0.0.1:1
  b:
    url: http://127.0.0.1:2
routes:
  - name: r
    paths: [/accounts]
    upstream: a
    upstreamPath: /accounts
`,
        {},
        { upstreamUrl: given('--upstream-url', 'http://127.0.0.1:3') },
      ),
    ).toEqual(['--upstream-url: several upstreams are configured and none is named "accounts"']);
  });

  it('applies overrides after environment substitution', () => {
    const config = parseConfig(
      'server:\n  port: ${PORT:-1000}\n',
      'test.yaml',
      { PORT: '2000' },
      { listen: given('--listen', '3000') },
    );
    expect(config.server.port).toBe(3000);
  });
});

describe('parseConfig: cross checks', () => {
  const route = (name: string, paths: string, upstream = 'accounts'): string => `
  - name: ${name}
    paths: ${paths}
    upstream: ${upstream}
    upstreamPath: /accounts`;

  it('reports a route that names an unknown upstream', () => {
    expect(problemsOf(`routes:${route('r', '[/accounts]', 'nope')}\n`)).toEqual([
      'routes[0].upstream: no upstream named nope',
    ]);
  });

  it('reports a path claimed by two routes', () => {
    expect(
      problemsOf(`routes:${route('a', '[/accounts, /x]')}${route('b', '[/y, /accounts]')}\n`),
    ).toEqual(['routes[1].paths[1]: /accounts is already a path of route a']);
  });

  it('reports duplicate route names', () => {
    expect(problemsOf(`routes:${route('a', '[/x]')}${route('a', '[/y]')}\n`)).toEqual([
      'routes[1].name: duplicate route name a',
    ]);
  });

  it.each([...RESERVED_PATHS])('reports a route that shadows the reserved path %s', (path) => {
    expect(problemsOf(`routes:${route('a', `[/accounts, "${path}"]`)}\n`)).toEqual([
      `routes[0].paths[1]: ${path} is served by the gateway itself`,
    ]);
  });

  const prefixRoute = (name: string, prefixes: string): string => `
  - name: ${name}
    prefixes: ${prefixes}
    upstream: accounts
    upstreamPath: /accounts`;

  it('accepts a route with prefixes and no paths, beside the exact listing route', () => {
    const config = parseConfig(
      `routes:${route('listing', '[/accounts, /accounts/]')}${prefixRoute('items', '[/accounts/, /v1/accounts/]')}\n`,
      'test.yaml',
    );
    expect(config.routes[0]?.prefixes).toEqual([]);
    expect(config.routes[1]?.paths).toEqual([]);
    expect(config.routes[1]?.prefixes).toEqual(['/accounts/', '/v1/accounts/']);
  });

  it('reports a prefix that does not end with /, or that a request path would be refused for', () => {
    expect(problemsOf(`routes:${prefixRoute('a', '[/accounts, /a/../b/, "/a%2fb/"]')}\n`)).toEqual([
      'routes[0].prefixes[0]: must end with /',
      `routes[0].prefixes[1]: ${PLAIN_PATH}`,
      `routes[0].prefixes[2]: ${PLAIN_PATH}`,
    ]);
  });

  it('reports a prefix whose twin without "/" falls under a weaker prefix route, until it is named', () => {
    const admin = (paths: string) => `
  - name: admin
    paths: ${paths}
    prefixes: [/accounts/admin/]
    scopes: [admin]
    upstream: accounts
    upstreamPath: /accounts/admin`;
    expect(problemsOf(`routes:${prefixRoute('items', '[/accounts/]')}${admin('[]')}\n`)).toEqual([
      `routes: /accounts/admin falls under another route than /accounts/admin/; ${SLASH_TWIN_HINT}`,
    ]);
    const fixed = parseConfig(
      `routes:${prefixRoute('items', '[/accounts/]')}${admin('[/accounts/admin]')}\n`,
      'test.yaml',
    );
    expect(fixed.routes[1]?.paths).toEqual(['/accounts/admin']);
  });

  it.each(['//', '/a//b/', '/a:b/', '/a%3Ab/', '/a@b/', "/a'b/", '/a;b/', '/a%61/', '/a%c3%a9/'])(
    'reports the prefix %s, which a client may spell another way',
    (prefix) => {
      expect(problemsOf(`routes:${prefixRoute('a', `["${prefix}"]`)}\n`)).toEqual([
        expect.stringMatching(/^routes\[0\]\.prefixes\[0\]: must /),
      ]);
    },
  );

  it('reports a prefix claimed by two routes', () => {
    expect(problemsOf(`routes:${prefixRoute('a', '[/x/]')}${prefixRoute('b', '[/x/]')}\n`)).toEqual(
      ['routes[1].prefixes[0]: /x/ is already a prefix of route a'],
    );
  });

  it.each(['/', '/keys/', '/keys/x/', '/auth/', '/.well-known/'])(
    'reports the prefix %s, which covers paths the gateway serves itself',
    (prefix) => {
      expect(problemsOf(`routes:${prefixRoute('a', `["${prefix}"]`)}\n`)).toEqual([
        `routes[0].prefixes[0]: ${prefix} covers paths the gateway serves itself`,
      ]);
    },
  );

  it('reports a route with neither paths nor prefixes, once', () => {
    expect(problemsOf(`routes:${prefixRoute('a', '[]')}\n`)).toEqual([
      'routes[0].paths: a route needs paths, prefixes or both',
    ]);
    expect(problemsOf(`routes:${prefixRoute('a', '/x/')}\n`)).toEqual([
      'routes[0].prefixes: expected array, received string',
    ]);
  });

  it('reports headersTimeoutMs above requestTimeoutMs', () => {
    expect(problemsOf('server:\n  headersTimeoutMs: 5000\n  requestTimeoutMs: 4000\n')).toEqual([
      'server.headersTimeoutMs: must not exceed server.requestTimeoutMs',
    ]);
  });

  it('accepts headersTimeoutMs equal to requestTimeoutMs', () => {
    const config = parseConfig(
      'server:\n  headersTimeoutMs: 4000\n  requestTimeoutMs: 4000\n',
      'test.yaml',
    );
    expect(config.server.headersTimeoutMs).toBe(4000);
  });

  it('reports an admin listener on the same address as the server', () => {
    expect(problemsOf('server:\n  port: 8000\nadmin:\n  port: 8000\n')).toEqual([
      'admin.port: must differ from server.port',
    ]);
  });

  it('reports schema problems and cross-check problems of one file together', () => {
    expect(
      problemsOf(
        `server:\n  port: 70000\nroutes:${route('a', '[/x]')}${route('a', '[/y]', 'nope')}\n`,
      ),
    ).toEqual([
      expect.stringMatching(/^server\.port: /),
      'routes[1].name: duplicate route name a',
      'routes[1].upstream: no upstream named nope',
    ]);
  });

  it('still cross-checks the valid routes when another route fails the schema', () => {
    expect(
      problemsOf(
        `routes:${route('a', '[/x, /keys]')}${route('b', '[/../y, /x]', 'nope')}\n    methods: [TRACE]\n`,
      ),
    ).toEqual([
      `routes[1].paths[0]: ${PLAIN_PATH}`,
      expect.stringMatching(/^routes\[1\]\.methods\[0\]: /),
      'routes[0].paths[1]: /keys is served by the gateway itself',
      'routes[1].upstream: no upstream named nope',
      'routes[1].paths[1]: /x is already a path of route a',
    ]);
  });

  it('cross-checks settings whose section holds another invalid setting', () => {
    expect(
      problemsOf(
        'server:\n  headersTimeoutMs: 5000\n  requestTimeoutMs: 4000\n  maxHeaderCount: 1\n' +
          'admin:\n  port: 8080\n  host: ""\n' +
          'credentials:\n  store: nowhere\n  redis: { mode: cluster, singleSlotPrefix: "ag:", commandTimeoutMs: 0 }\n' +
          "auth:\n  realm: '\"'\n  bearer:\n    issuers:\n" +
          `      - { name: a, algorithms: [HS256], secret: ${SECRET} }\n` +
          '      - { name: a, algorithms: [HS256] }\n',
      ),
    ).toEqual([
      expect.stringMatching(/^server\.maxHeaderCount: /),
      expect.stringMatching(/^admin\.host: /),
      expect.stringMatching(/^auth\.realm: /),
      'auth.bearer.issuers[1]: exactly one of secret, publicKey, publicKeyFile, jwksUrl is required',
      'auth.bearer.issuers[1].algorithms: HS* algorithms need a secret',
      expect.stringMatching(/^credentials\.store: /),
      expect.stringMatching(/^credentials\.redis\.commandTimeoutMs: /),
      'auth.bearer.issuers[1].name: duplicate name a',
      'credentials.redis.nodes: cluster mode needs at least one host:port',
      'credentials.redis.singleSlotPrefix: cluster mode: the single-slot layout had a hash tag such as {ag}: (or false)',
      'server.headersTimeoutMs: must not exceed server.requestTimeoutMs',
    ]);
  });

  it('cross-checks beside a refused path or worker count, whose rules stop at their first problem', () => {
    expect(
      problemsOf(
        `server:\n  workers: 0\nroutes:${route('a', '[/x]')}${route('a', '[/../y, /keys]')}\n`,
      ),
    ).toEqual([
      'server.workers: must be a whole number from 1 to 256, or auto',
      `routes[1].paths[0]: ${PLAIN_PATH}`,
      'routes[1].name: duplicate route name a',
      'routes[1].paths[1]: /keys is served by the gateway itself',
    ]);
  });

  it('does not cross-check a section that is not a mapping', () => {
    expect(problemsOf(`upstreams: 5\nroutes:${route('a', '[/x]', 'nope')}\n`)).toEqual([
      expect.stringMatching(/^upstreams: /),
    ]);
  });

  it('reports several cross-check problems at once', () => {
    expect(
      problemsOf(
        `server:\n  headersTimeoutMs: 9000\n  requestTimeoutMs: 10\nroutes:${route('a', '[/keys]', 'nope')}\n`,
      ),
    ).toEqual([
      'routes[0].upstream: no upstream named nope',
      'routes[0].paths[0]: /keys is served by the gateway itself',
      'server.headersTimeoutMs: must not exceed server.requestTimeoutMs',
    ]);
  });
});

describe('parseConfig: bearer issuers', () => {
  const issuers = (body: string): string => `auth:\n  bearer:\n    issuers:\n${body}`;

  it('requires an algorithm allow-list', () => {
    expect(problemsOf(issuers(`      - name: a\n        secret: ${SECRET}\n`))).toEqual([
      expect.stringMatching(/^auth\.bearer\.issuers\[0\]\.algorithms: /),
    ]);
  });

  it('refuses an empty algorithm allow-list', () => {
    expect(
      problemsOf(issuers(`      - name: a\n        algorithms: []\n        secret: ${SECRET}\n`)),
    ).toEqual([expect.stringMatching(/^auth\.bearer\.issuers\[0\]\.algorithms: /)]);
  });

  it('refuses the "none" algorithm', () => {
    expect(
      problemsOf(
        issuers(`      - name: a\n        algorithms: [none]\n        secret: ${SECRET}\n`),
      ),
    ).toEqual([expect.stringMatching(/^auth\.bearer\.issuers\[0\]\.algorithms\[0\]: /)]);
  });

  it('refuses asymmetric algorithms with a secret', () => {
    expect(
      problemsOf(
        issuers(`      - name: a\n        algorithms: [HS256, RS256]\n        secret: ${SECRET}\n`),
      ),
    ).toEqual(['auth.bearer.issuers[0].algorithms: a secret takes only HS* algorithms']);
  });

  it('refuses HS* algorithms without a secret', () => {
    expect(
      problemsOf(
        issuers(
          '      - name: a\n        algorithms: [HS256]\n        jwksUrl: https://idp.example/jwks\n',
        ),
      ),
    ).toEqual(['auth.bearer.issuers[0].algorithms: HS* algorithms need a secret']);
  });

  it('requires a key source', () => {
    expect(problemsOf(issuers('      - name: a\n        algorithms: [RS256]\n'))).toEqual([
      'auth.bearer.issuers[0]: exactly one of secret, publicKey, publicKeyFile, jwksUrl is required',
    ]);
  });

  it('refuses two key sources', () => {
    expect(
      problemsOf(
        issuers(
          '      - name: a\n        algorithms: [RS256]\n        publicKey: x\n        jwksUrl: https://idp.example/jwks\n',
        ),
      ),
    ).toEqual([
      'auth.bearer.issuers[0]: exactly one of secret, publicKey, publicKeyFile, jwksUrl is required',
    ]);
  });

  it('refuses a secret shorter than 32 characters', () => {
    expect(
      problemsOf(issuers('      - name: a\n        algorithms: [HS256]\n        secret: short\n')),
    ).toEqual(['auth.bearer.issuers[0].secret: must be at least 32 characters']);
  });

  it('refuses a JWKS URL that is not http(s)', () => {
    expect(
      problemsOf(
        issuers(
          '      - name: a\n        algorithms: [ES256]\n        jwksUrl: file:///etc/jwks\n',
        ),
      ),
    ).toEqual([expect.stringMatching(/^auth\.bearer\.issuers\[0\]\.jwksUrl: /)]);
  });

  it('reports duplicate issuer names', () => {
    expect(
      problemsOf(
        issuers(
          `      - name: a\n        algorithms: [HS256]\n        secret: ${SECRET}\n` +
            '      - name: a\n        algorithms: [ES256]\n        jwksUrl: https://idp.example/jwks\n',
        ),
      ),
    ).toEqual(['auth.bearer.issuers[1].name: duplicate name a']);
  });

  it('accepts one issuer per key source kind', () => {
    const config = parseConfig(
      issuers(
        `      - name: hs\n        algorithms: [HS256, HS512]\n        secret: ${SECRET}\n` +
          '      - name: pem\n        algorithms: [ES256]\n        publicKey: "-----BEGIN PUBLIC KEY-----"\n' +
          '      - name: file\n        algorithms: [RS256]\n        publicKeyFile: /etc/key.pem\n' +
          '      - name: jwks\n        algorithms: [RS256, ES256]\n        jwksUrl: https://idp.example/jwks\n',
      ),
      'test.yaml',
    );
    expect(config.auth.bearer.issuers.map((i) => i.name)).toEqual(['hs', 'pem', 'file', 'jwks']);
  });
});

describe('loadConfigFile', () => {
  it('reads, substitutes and validates a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-config-'));
    try {
      const file = join(dir, 'gateway.yaml');
      writeFileSync(file, 'server:\n  port: ${PORT:-1}\n');
      expect(loadConfigFile(file, { PORT: '4321' }).server.port).toBe(4321);
      expect(loadConfigFile(file, {}, { listen: given('--listen', '5555') }).server.port).toBe(
        5555,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a file that cannot be read, naming the file', () => {
    const file = join(tmpdir(), 'gw-config-does-not-exist', 'gateway.yaml');
    expect(() => loadConfigFile(file, {})).toThrow(
      new ConfigError(file, ['cannot read the file (ENOENT)']),
    );
    try {
      loadConfigFile(file, {});
    } catch (error) {
      expect((error as ConfigError).problems).toEqual(['cannot read the file (ENOENT)']);
    }
  });
});

describe('parseConfig Redis topology checks', () => {
  it('asks for nodes in sentinel or cluster mode, and a hash tag in a single-slot prefix on a Cluster', () => {
    expect(() =>
      parseConfig(
        'credentials:\n  redis: { mode: cluster, singleSlotPrefix: "ag:" }\n',
        'test.yaml',
      ),
    ).toThrow(
      /credentials\.redis\.nodes: cluster mode needs at least one host:port[\s\S]*credentials\.redis\.singleSlotPrefix: cluster mode: the single-slot layout had a hash tag/,
    );
    expect(
      parseConfig(
        'credentials:\n  redis: { mode: cluster, nodes: [r:6379], singleSlotPrefix: false }\n',
        'test.yaml',
      ).credentials.redis,
    ).toMatchObject({ keyPrefix: 'ag:', singleSlotPrefix: false });
  });

  it('refuses a brace in keyPrefix, naming singleSlotPrefix, where the {ag}: of earlier versions goes', () => {
    expect(() =>
      parseConfig('credentials:\n  redis: { keyPrefix: "{ag}:" }\n', 'test.yaml'),
    ).toThrow(
      'credentials.redis.keyPrefix: must hold no brace: each key carries its own hash tag; a prefix such as {ag}: of the single-slot layout goes in singleSlotPrefix',
    );
    expect(parseConfig('{}', 'test.yaml').credentials.redis).toMatchObject({
      keyPrefix: 'ag:',
      singleSlotPrefix: '{ag}:',
    });
  });
});

describe('auth.bearer.issuers[].jwks', () => {
  const issuer = (lines: string) => `auth:
  bearer:
    issuers:
      - name: idp
${lines}`;

  it('fills the remote key set settings it is not given with today’s defaults', () => {
    const config = parseConfig(
      issuer(
        '        algorithms: [ES256]\n        jwksUrl: https://idp.example/jwks.json\n        jwks: { cooldownMs: 5000 }\n',
      ),
      'test.yaml',
    );
    expect(config.auth.bearer.issuers[0]?.jwks).toEqual({
      cacheMaxAgeMs: 600_000,
      cooldownMs: 5_000,
      timeoutMs: 2_000,
      failureBackoffMs: 1_000,
      maxFailureBackoffMs: 60_000,
    });
  });

  it('refuses jwks settings on an issuer without jwksUrl', () => {
    expect(
      problemsOf(
        issuer(
          `        algorithms: [HS256]\n        secret: ${'s'.repeat(32)}\n        jwks: { cooldownMs: 5000 }\n`,
        ),
      ),
    ).toEqual(['auth.bearer.issuers[0].jwks: only applies with jwksUrl']);
  });
});
