import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, parseConfig, SLASH_TWIN_HINT } from '../../../src/config/load-config.js';

function problemsOf(config: unknown): readonly string[] {
  try {
    parseConfig(stringify(config), 'test.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

const route = (name: string, paths: string[], prefixes: string[] = []) => ({
  name,
  paths,
  prefixes,
  upstream: 'accounts',
  upstreamPath: '/accounts',
});

describe('forwardAuth config', () => {
  it('is off by default, at /auth/check, with no caching', () => {
    expect(parseConfig('', 'test.yaml').forwardAuth).toEqual({
      enabled: false,
      path: '/auth/check',
      cacheMaxAgeSec: 0,
    });
  });

  it('refuses a path ending in /, a path a request would be refused for, and a long cache', () => {
    expect(problemsOf({ forwardAuth: { path: '/check/' } })).toEqual([
      'forwardAuth.path: must not end with /',
    ]);
    expect(problemsOf({ forwardAuth: { path: '/a/../check', cacheMaxAgeSec: 3601 } })).toEqual([
      'forwardAuth.path: must be a plain absolute path (no dot segment, %2e, encoded / or \\, control character, ? or #)',
      'forwardAuth.cacheMaxAgeSec: must be at most 3600',
    ]);
  });

  it('reports routes whose paths or prefixes take the check path or a path under it', () => {
    expect(
      problemsOf({
        forwardAuth: { enabled: true, path: '/check' },
        routes: [
          route('listing', ['/accounts']),
          route('same', ['/check']),
          route('under', [], ['/check/v1/']),
          route('over', [], ['/']),
        ],
      }),
    ).toEqual([
      // `/` covers the gateway's own paths as well.
      'routes[3].prefixes[0]: / covers paths the gateway serves itself',
      // and each route's trailing-slash twin.
      `routes: /accounts/ falls under another route than /accounts; ${SLASH_TWIN_HINT}`,
      `routes: /check/ falls under another route than /check; ${SLASH_TWIN_HINT}`,
      `routes: /check/v1 falls under another route than /check/v1/; ${SLASH_TWIN_HINT}`,
      'forwardAuth.path: /check (or a path under it) is also taken by route same',
      'forwardAuth.path: /check (or a path under it) is also taken by route under',
      'forwardAuth.path: /check (or a path under it) is also taken by route over',
    ]);
  });

  it("reports a check path on the gateway's own endpoints, only while it is enabled", () => {
    expect(problemsOf({ forwardAuth: { enabled: true, path: '/auth/token' } })).toEqual([
      'forwardAuth.path: /auth/token covers paths the gateway serves itself',
    ]);
    expect(problemsOf({ forwardAuth: { enabled: true, path: '/keys/check' } })).toEqual([
      'forwardAuth.path: /keys/check covers paths the gateway serves itself',
    ]);
    expect(
      parseConfig(stringify({ forwardAuth: { path: '/keys' } }), 'test.yaml').forwardAuth.path,
    ).toBe('/keys');
  });
});
