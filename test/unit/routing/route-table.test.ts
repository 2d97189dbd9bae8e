import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createRouteTable,
  originFormOf,
  type RouteTable,
} from '../../../src/routing/route-table.js';

const LISTING_PATHS = ['/account', '/accounts', '/accounts/'] as const;
const KEY_PARAM = /^ak_[0-9A-Za-z]{24}$/;
const KEY = 'ak_0123456789abcdefABCDEFgh';

function listingTable(): RouteTable<string> {
  return createRouteTable({
    exact: new Map([
      ['/account', 'accounts'],
      ['/accounts', 'accounts'],
      ['/accounts/', 'accounts'],
      ['/keys', 'keys'],
    ]),
    parameterized: [{ prefix: '/keys/', param: KEY_PARAM, entry: 'key' }],
  });
}

describe('createRouteTable: exact paths', () => {
  const table = listingTable();

  it.each(LISTING_PATHS)('matches %s with an empty query', (path) => {
    expect(table.match(path)).toEqual({
      kind: 'match',
      entry: 'accounts',
      param: undefined,
      query: '',
    });
  });

  it('answers an exact path without a query with the same match every time, allocating none', () => {
    expect(table.match('/accounts')).toBe(table.match('/accounts'));
    expect(table.match('/accounts?a=1')).not.toBe(table.match('/accounts?a=1'));
  });

  it('keeps the raw query byte for byte, odd characters included', () => {
    const query = `?a=1&b='"<>&c=%zz%00%0a&d=../..&e=\\&f=%2e&g=é&&=`;
    expect(table.match(`/accounts${query}`)).toEqual({
      kind: 'match',
      entry: 'accounts',
      param: undefined,
      query,
    });
  });

  it('keeps a lone "?" as the query', () => {
    expect(table.match('/account?')).toEqual({
      kind: 'match',
      entry: 'accounts',
      param: undefined,
      query: '?',
    });
  });

  it('keeps a second "?" inside the query', () => {
    expect(table.match('/accounts/?a?b')).toEqual({
      kind: 'match',
      entry: 'accounts',
      param: undefined,
      query: '?a?b',
    });
  });

  it.each([
    '/Accounts',
    '/ACCOUNT',
    '/account/',
    '/accountsx',
    '/accounts/x',
    '/accounts%20',
    '/',
    '/admin',
    '/keys/',
    '/keys/ak_short',
    `/keys/${KEY}/extra`,
    `/keys/${KEY}x`,
    `/keys/x${KEY}`,
  ])('returns not_found for %s', (target) => {
    expect(table.match(target)).toEqual({ kind: 'not_found' });
  });

  it.each([
    '/accounts#x',
    '/accounts?x=1#frag',
    '/accounts?#',
    '/accounts/../accounts',
    '/accounts/./',
    '/accounts/%2e%2e/admin',
    '/accounts/%2E',
    '/accounts%2f',
    '/accounts%5C',
    '/accounts\\',
    '/accounts%00',
    '/accounts%0a',
    '/accounts%0D',
    '',
    '/accounts%',
    '/accounts%4',
    '/accounts%xy',
    `/keys/${KEY}/..`,
    `/keys/%2e%2e`,
    '/accounts//',
    '//accounts',
    '/accounts;x',
    '/%61ccounts',
  ])('returns invalid_path for %j', (target) => {
    expect(table.match(target)).toEqual({ kind: 'invalid_path' });
  });
});

describe('createRouteTable: parameterized entries', () => {
  const table = listingTable();

  it('matches prefix + a segment accepted by the param pattern and returns the segment', () => {
    expect(table.match(`/keys/${KEY}`)).toEqual({
      kind: 'match',
      entry: 'key',
      param: KEY,
      query: '',
    });
  });

  it('returns the raw query of a parameterized match', () => {
    expect(table.match(`/keys/${KEY}?force=1&x='<>'`)).toEqual({
      kind: 'match',
      entry: 'key',
      param: KEY,
      query: "?force=1&x='<>'",
    });
  });

  it('uses the first parameterized entry whose prefix and pattern both match', () => {
    const t = createRouteTable<string>({
      exact: new Map(),
      parameterized: [
        { prefix: '/items/', param: /^\d+$/, entry: 'numeric' },
        { prefix: '/items/', param: /^[a-z]+$/, entry: 'alpha' },
      ],
    });
    expect(t.match('/items/42')).toEqual({
      kind: 'match',
      entry: 'numeric',
      param: '42',
      query: '',
    });
    expect(t.match('/items/abc')).toEqual({
      kind: 'match',
      entry: 'alpha',
      param: 'abc',
      query: '',
    });
    expect(t.match('/items/ABC')).toEqual({ kind: 'not_found' });
  });

  it('matches a segment followed by a fixed suffix, apart from the segment alone', () => {
    const t = createRouteTable<string>({
      exact: new Map(),
      parameterized: [
        { prefix: '/keys/', param: KEY_PARAM, entry: 'key' },
        { prefix: '/keys/', param: KEY_PARAM, suffix: '/roll', entry: 'roll' },
      ],
    });
    expect(t.match(`/keys/${KEY}/roll?x=1`)).toEqual({
      kind: 'match',
      entry: 'roll',
      param: KEY,
      query: '?x=1',
    });
    expect(t.match(`/keys/${KEY}`)).toMatchObject({ entry: 'key', param: KEY });
    for (const path of [
      '/keys/roll',
      `/keys/${KEY}/roll/`,
      `/keys/${KEY}/rolls`,
      `/keys/${KEY}/x/roll`,
      `/keys/${KEY}/revoke`,
    ])
      expect(t.match(path), path).toEqual({ kind: 'not_found' });
    // An empty segment is refused before any entry is read.
    expect(t.match('/keys//roll')).toEqual({ kind: 'invalid_path' });
    // Other spellings of the suffix match nothing.
    expect(t.match(`/keys/${KEY}/ROLL`)).toEqual({ kind: 'not_found' });
    expect(t.match(`/keys/${KEY}/roll.json`)).toEqual({ kind: 'not_found' });
  });

  it('does not see changes made to the entries map after creation', () => {
    const exact = new Map([['/a', 'a']]);
    const t = createRouteTable({ exact });
    exact.set('/b', 'b');
    expect(t.match('/b')).toEqual({ kind: 'not_found' });
  });
});

describe('createRouteTable: properties', () => {
  const exactPaths = new Set(['/account', '/accounts', '/accounts/', '/keys']);
  const table = listingTable();

  // Pieces close to the table's paths, so near misses are generated often.
  const piece = fc.constantFrom(
    '/',
    'account',
    'accounts',
    's',
    '.',
    '..',
    '%2e',
    '%2E',
    '%2f',
    '%5c',
    '%00',
    '%0a',
    '%41',
    '%',
    '?',
    '#',
    '\\',
    ';',
    'keys',
    'ak_',
    KEY,
    'A',
    'http://x',
    '*',
    ' ',
  );
  const nearMiss = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(''));
  const anyTarget = fc.oneof(
    nearMiss,
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.webPath(),
    fc.webUrl({ withQueryParameters: true, withFragments: true }),
  );

  it('never matches a target whose path is outside the table', () => {
    fc.assert(
      fc.property(anyTarget, (target) => {
        const result = table.match(target);
        if (result.kind !== 'match') return;
        // Absolute-form is routed by its path and query, like origin-form.
        const origin = originFormOf(target) ?? '';
        const q = origin.indexOf('?');
        const path = q === -1 ? origin : origin.slice(0, q);
        expect(target.includes('#')).toBe(false);
        expect(result.query).toBe(q === -1 ? '' : origin.slice(q));
        if (result.entry === 'key') {
          expect(path).toBe(`/keys/${result.param ?? ''}`);
          expect(result.param).toMatch(KEY_PARAM);
        } else {
          expect(exactPaths.has(path)).toBe(true);
          expect(result.param).toBeUndefined();
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('matches every table path followed by any query without "#", keeping the query', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...exactPaths),
        fc.string({ unit: 'binary', maxLength: 60 }).filter((s) => !s.includes('#')),
        (path, rest) => {
          expect(table.match(`${path}?${rest}`)).toEqual({
            kind: 'match',
            entry: path === '/keys' ? 'keys' : 'accounts',
            param: undefined,
            query: `?${rest}`,
          });
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('refuses every target with a ".." segment under a listed path', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...LISTING_PATHS),
        fc.constantFrom('/', '?', '#'),
        fc.string({ maxLength: 30 }),
        (path, separator, rest) => {
          const base = path.endsWith('/') ? `${path}..` : `${path}/..`;
          expect(table.match(`${base}${separator}${rest}`)).toEqual({ kind: 'invalid_path' });
        },
      ),
    );
  });
});

describe('absolute-form and asterisk-form targets', () => {
  const table = createRouteTable({ exact: new Map([['/accounts', 'accounts']]) });

  it.each([
    ['http://other.example/accounts?x=1', '?x=1'],
    ['HTTPS://other.example:8443/accounts', ''],
    ['http://user@other.example/accounts?', '?'],
  ])('routes %s by its path and query, like origin-form', (target, query) => {
    expect(table.match(target)).toEqual({
      kind: 'match',
      entry: 'accounts',
      param: undefined,
      query,
    });
  });

  it.each([
    ['http://other.example/admin', 'not_found'],
    ['http://other.example', 'not_found'],
    ['http://other.example?x=1', 'not_found'],
    ['http://other.example/accounts/../admin', 'invalid_path'],
    ['http://other.example/accounts#top', 'invalid_path'],
    ['http://other.example#top', 'invalid_path'],
    ['ftp://other.example/accounts', 'invalid_path'],
    ['other.example:443', 'invalid_path'],
    ['accounts', 'invalid_path'],
    ['*', 'not_found'],
  ])('answers %s with %s, under the same path rules', (target, kind) => {
    expect(table.match(target)).toEqual({ kind });
  });

  it('answers any absolute-form target exactly as its origin-form path and query', () => {
    const full = createRouteTable({
      exact: new Map([
        ['/accounts', 'accounts'],
        ['/keys', 'keys'],
      ]),
      parameterized: [{ prefix: '/keys/', param: /^[A-Za-z0-9_-]{3,64}$/, entry: 'key' }],
    });
    fc.assert(
      fc.property(
        fc.constantFrom('http', 'https', 'HTTP'),
        fc.webAuthority({ withUserInfo: true, withPort: true }),
        fc.oneof(fc.webPath(), fc.constantFrom('/accounts', '/keys', '/keys/ak_x1')),
        fc.option(fc.webQueryParameters(), { nil: undefined }),
        (scheme, authority, path, query) => {
          const origin = `${path === '' ? '/' : path}${query === undefined ? '' : `?${query}`}`;
          const absolute = `${scheme}://${authority}${path}${query === undefined ? '' : `?${query}`}`;
          expect(full.match(absolute)).toEqual(full.match(origin));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('leaves origin-form as it is', () => {
    expect([originFormOf('/accounts?x'), originFormOf('http://h'), originFormOf('h')]).toEqual([
      '/accounts?x',
      '/',
      undefined,
    ]);
  });
});

describe('createRouteTable: prefix entries', () => {
  function prefixTable(): RouteTable<string> {
    return createRouteTable({
      exact: new Map([
        ['/accounts', 'listing'],
        ['/accounts/', 'listing'],
        ['/accounts/special', 'special'],
      ]),
      prefixes: [
        { prefix: '/accounts/', entry: 'items' },
        { prefix: '/accounts/1/notes/', entry: 'notes' },
      ],
    });
  }
  const table = prefixTable();

  it('matches a path under the prefix and returns the rest and the raw query', () => {
    expect(table.match('/accounts/1/orders?x=%zz')).toEqual({
      kind: 'match',
      entry: 'items',
      param: '1/orders',
      query: '?x=%zz',
    });
  });

  it('lets an exact path win over a prefix it lies under', () => {
    expect(table.match('/accounts/')).toMatchObject({ entry: 'listing', param: undefined });
    expect(table.match('/accounts/special')).toMatchObject({ entry: 'special' });
    expect(table.match('/accounts/special/x')).toMatchObject({ entry: 'items' });
  });

  it('picks the longest matching prefix, whatever the order given', () => {
    expect(table.match('/accounts/1/notes/7')).toMatchObject({ entry: 'notes', param: '7' });
    expect(table.match('/accounts/1/notesx')).toMatchObject({ entry: 'items', param: '1/notesx' });
  });

  it.each(['/account/1', '/Accounts/1', '//accounts/1', '/accountsx/1', '/accounts%2f1'])(
    'does not match %s, which is not under the prefix byte for byte',
    (target) => {
      expect(table.match(target).kind).not.toBe('match');
    },
  );

  it.each([
    '/accounts/..',
    '/accounts/1/../../admin',
    '/accounts/./1',
    '/accounts/%2e%2e/admin',
    '/accounts/%2E/1',
    '/accounts/1%2fadmin',
    '/accounts/1%5Cadmin',
    '/accounts/1\\admin',
    '/accounts/1%00',
    '/accounts/1%0a',
    '/accounts/1%7F',
    '/accounts/1%',
    '/accounts/1#x',
    'http://h/accounts/../admin',
  ])('refuses %j under a prefix as invalid_path', (target) => {
    expect(table.match(target)).toEqual({ kind: 'invalid_path' });
  });

  it('only ever matches a clean rest that, appended to the prefix, is the path sent', () => {
    const piece = fc.constantFrom(
      '/',
      'accounts',
      '1',
      'notes',
      '.',
      '..',
      '%2e',
      '%2E',
      '%2f',
      '%2F',
      '%5c',
      '%5C',
      '%00',
      '%1f',
      '%7f',
      '%41',
      '%',
      '?',
      '#',
      '\\',
      ';',
      'http://x',
    );
    const target = fc.oneof(
      fc.array(piece, { maxLength: 10 }).map((parts) => `/accounts/${parts.join('')}`),
      fc.array(piece, { maxLength: 10 }).map((parts) => parts.join('')),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => `/accounts/${s}`),
    );
    fc.assert(
      fc.property(target, (raw) => {
        const result = table.match(raw);
        if (result.kind !== 'match' || result.param === undefined) return;
        const prefix = result.entry === 'notes' ? '/accounts/1/notes/' : '/accounts/';
        const origin = originFormOf(raw) ?? '';
        const q = origin.indexOf('?');
        expect(q === -1 ? origin : origin.slice(0, q)).toBe(prefix + result.param);
        // What the upstream receives under the prefix: whole, clean segments only.
        for (const segment of result.param.split('/')) {
          expect(['.', '..']).not.toContain(segment);
          expect(segment).not.toMatch(/%(2e|2f|5c|[01][0-9a-f]|7f)|\\/i);
        }
        expect(raw.includes('#')).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });
});
