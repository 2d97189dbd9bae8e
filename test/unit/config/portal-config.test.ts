import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../../src/config/load-config.js';
import { configProblems } from '../../support/config-problems.js';

const route = (name: string, paths: string[], prefixes: string[] = []) => ({
  name,
  paths,
  prefixes,
  upstream: 'accounts',
  upstreamPath: '/accounts',
});

describe('portal config', () => {
  it('is on by default under /portal/, sessions idle 30 min and at most 12 h, cookie Secure with TLS', () => {
    expect(parseConfig('', 'test.yaml').portal).toEqual({
      enabled: true,
      basePath: '/portal/',
      idleTimeoutSec: 1800,
      absoluteTimeoutSec: 43_200,
      secureCookie: 'auto',
    });
  });

  it('refuses a base path without its trailing /, or one a request would be refused for', () => {
    expect(configProblems(stringify({ portal: { basePath: '/portal' } }))).toEqual([
      'portal.basePath: must end with / (and not be / alone)',
    ]);
    expect(configProblems(stringify({ portal: { basePath: '/' } }))).toEqual([
      'portal.basePath: must end with / (and not be / alone)',
    ]);
    expect(configProblems(stringify({ portal: { basePath: '/a/../p/' } }))[0]).toMatch(
      /^portal\.basePath: must be a plain absolute path/,
    );
  });

  it('reports routes, a check path and own endpoints that overlap the base path, only while it is on', () => {
    const config = {
      portal: { basePath: '/self/' },
      forwardAuth: { enabled: true, path: '/self/check' },
      routes: [
        route('listing', ['/accounts', '/accounts/']),
        route('page', ['/self/page']),
        route('under', [], ['/self/v1/']),
        route('over', [], ['/s/']),
      ],
    };
    expect(configProblems(stringify(config))).toEqual([
      'portal.basePath: /self/ (or a path under it) is also taken by route page',
      'portal.basePath: /self/ (or a path under it) is also taken by route under',
      'portal.basePath: /self/ overlaps forwardAuth.path /self/check',
    ]);
    expect(configProblems(stringify({ portal: { basePath: '/keys/' } }))).toEqual([
      'portal.basePath: /keys/ covers paths the gateway serves itself',
    ]);
    expect(
      parseConfig(
        stringify({ ...config, portal: { enabled: false, basePath: '/self/' } }),
        'test.yaml',
      ).portal.enabled,
    ).toBe(false);
  });
});
