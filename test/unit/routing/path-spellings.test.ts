import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findSlashTwins } from '../../../src/routing/find-slash-twins.js';
import { createRouteTable, type RouteTableEntries } from '../../../src/routing/route-table.js';

// The audit's table: a prefix asking for no scope, a longer one asking for admin.
const ENTRIES: RouteTableEntries<string> = {
  exact: new Map([
    ['/accounts', 'listing'],
    ['/accounts/', 'listing'],
    // The admin prefix's twin, on its route: without it findSlashTwins reports the table.
    ['/accounts/admin', 'admin'],
  ]),
  parameterized: [{ prefix: '/keys/', param: /^ak_[0-9A-Za-z]{4}$/, entry: 'key' }],
  prefixes: [
    { prefix: '/accounts/', entry: 'accounts' },
    { prefix: '/accounts/admin/', entry: 'admin' },
  ],
};
const table = createRouteTable(ENTRIES);

/**
 * What an upstream may make of a raw path: Go, Spring, Flask and Django decode escapes of
 * unreserved bytes (RFC 3986 §6.2.2.2), some decode twice (`%2561`), Tomcat and Spring strip
 * `;params`, nginx's merge_slashes collapses `//`, Express serves `/p/` as `/p` and reads
 * paths without case (as ASP.NET Core and IIS do), and Rails drops a `.format` suffix.
 */
function upstreamView(path: string): string {
  let decoded = path;
  for (let round = 0; round < 2; round++)
    decoded = decoded.replace(
      /%(2[5DE]|3[0-9B]|[46][1-9A-F]|[57][0-9AEF]|5F)/gi,
      (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)),
    );
  // A Java upstream decodes UTF-8 and compares with equalsIgnoreCase (each character upper-,
  // then lower-cased: `ı` is `i`, `ſ` is `s`); others normalize to NFKC first (`ａ` is `a`).
  decoded = decoded.replace(/(?:%[89A-F][0-9A-F])+/gi, (row) => {
    try {
      return [...decodeURIComponent(row).normalize('NFKC')]
        .map((char) => char.toUpperCase().toLowerCase())
        .join('');
    } catch {
      return row;
    }
  });
  return (
    decoded
      .toLowerCase()
      // An escape left undecoded (a byte of no valid UTF-8) names the same byte in either
      // case (RFC 3986 §6.2.2.1): the route it reaches is the one of its upper-case form.
      .replace(/%[0-9a-f]{2}/g, (escape) => escape.toUpperCase())
      .replace(/;[^/]*/g, '')
      .replace(/\/{2,}/g, '/')
      .replace(/([^/])\.[^/.]*$/, '$1')
      .replace(/(.)\/$/, '$1')
  );
}

function entryOf(target: string): string | undefined {
  const result = table.match(target);
  return result.kind === 'match' ? result.entry : undefined;
}

describe('path spellings an upstream treats alike', () => {
  it.each([
    '/accounts//admin/x',
    '/accounts/%61dmin/x',
    '/accounts/%2561dmin/x',
    '/accounts/admin;/x',
    '/accounts/admin;jsessionid=1/x',
    '/accounts/admin%3b/x',
    '/accounts/admin%3B/x',
    '/accounts/adm%69n/x',
    '/accounts/ADMIN/x',
    '/accounts/Admin/x',
  ])('refuses %s, which reaches /accounts/admin/x upstream, with invalid_path', (target) => {
    expect(upstreamView(target)).toBe('/accounts/admin/x');
    expect(table.match(target)).toEqual({ kind: 'invalid_path' });
  });

  it.each(['/accounts/Admin', '/accounts/ADMIN/'])(
    'refuses %s, which a case-insensitive upstream serves as the admin route, with invalid_path',
    (target) => {
      expect(table.match(target)).toEqual({ kind: 'invalid_path' });
    },
  );

  it.each([
    '/accounts/adm%C4%B1n/x',
    '/accounts/adm%C4%B1n',
    '/accounts/ADM%C4%B0N/',
    '/accounts/%EF%BD%81dmin/x',
    '/accounts/%EF%BC%A1DMIN/x',
    '/accounts/adm%C4%B1n.json',
  ])(
    'refuses %s, which an upstream folding Unicode (Java equalsIgnoreCase, NFKC) serves as the admin route, with invalid_path',
    (target) => {
      expect(table.match(target)).toEqual({ kind: 'invalid_path' });
    },
  );

  it.each([
    // ſ (long s) and K (Kelvin sign) in a stricter /files/desk/ beside a loose /files/.
    '/files/de%C5%BFk/x',
    '/files/des%E2%84%AA/x',
    '/files/DE%C5%BFK',
  ])('refuses %s, a Unicode twin of a stricter route, with invalid_path', (target) => {
    const files = createRouteTable({
      exact: new Map([['/files/desk', 'desk']]),
      prefixes: [
        { prefix: '/files/', entry: 'files' },
        { prefix: '/files/desk/', entry: 'desk' },
      ],
    });
    expect(files.match(target)).toEqual({ kind: 'invalid_path' });
    expect(upstreamView(target)).toMatch(/^\/files\/desk\b/);
  });

  it.each([
    '/accounts/%EF%BC%8Fadmin/x',
    '/accounts/%EF%BC%8E%EF%BC%8E/admin',
    '/accounts/x%EF%BC%9Fy',
  ])(
    'refuses %s, whose NFKC reading is a boundary, a dot segment or a query, with invalid_path',
    (target) => {
      expect(table.match(target)).toEqual({ kind: 'invalid_path' });
    },
  );

  it('routes Unicode that reads as no stricter path as it is', () => {
    expect(entryOf('/accounts/caf%C3%A9')).toBe('accounts');
    expect(entryOf('/accounts/%C4%B1')).toBe('accounts');
    expect(entryOf('/accounts/admin/%C4%B1')).toBe('admin');
    expect(entryOf('/accounts/%C4%B1dmin/x')).toBe('accounts');
  });

  it.each(['/accounts/admin.json', '/accounts/admin.', '/accounts/ADMIN.json'])(
    'refuses %s, which Rails and old Spring MVC serve as /accounts/admin, with invalid_path',
    (target) => {
      expect(table.match(target)).toEqual({ kind: 'invalid_path' });
    },
  );

  it('routes what no stricter route claims in any case or with any suffix as it is', () => {
    expect(entryOf('/accounts/Report.CSV')).toBe('accounts');
    expect(entryOf('/accounts/x/ADMIN')).toBe('accounts');
    expect(entryOf('/accounts/admin/Report.json')).toBe('admin');
    expect(entryOf('/keys/ak_0aZ9')).toBe('key');
  });

  it('routes /accounts/admin and /accounts/admin/x to the admin route', () => {
    expect(entryOf('/accounts/admin')).toBe('admin');
    expect(entryOf('/accounts/admin/')).toBe('admin');
    expect(entryOf('/accounts/admin/x')).toBe('admin');
    expect(entryOf('/accounts/other')).toBe('accounts');
  });

  it('reports the table without the twin: /accounts/admin would fall under /accounts/', () => {
    const exact = new Map(ENTRIES.exact);
    exact.delete('/accounts/admin');
    expect(findSlashTwins({ ...ENTRIES, exact })).toEqual([
      { path: '/accounts/admin/', twin: '/accounts/admin' },
    ]);
    expect(findSlashTwins(ENTRIES)).toEqual([]);
  });

  it('reports an exact path whose trailing-slash twin another route takes', () => {
    expect(
      findSlashTwins({
        exact: new Map([
          ['/a/b', 'strict'],
          ['/c', 'c'],
          ['/c/', 'c'],
          ['/', 'root'],
        ]),
        prefixes: [{ prefix: '/a/', entry: 'loose' }],
      }),
    ).toEqual([{ path: '/a/b', twin: '/a/b/' }]);
  });

  // Segments near the table's paths, and the ways a client may spell each differently.
  const segment = fc.constantFrom('accounts', 'admin', 'x', 'keys', 'ak_0aZ9', 'a-b.c_d~e', '');
  const canonical = fc
    .array(segment, { minLength: 1, maxLength: 5 })
    .map((segments) => `/${segments.filter((s) => s !== '').join('/')}`);
  const respell = fc.constantFrom(
    (s: string, i: number) => `${s.slice(0, i)}/${s.slice(i)}`,
    (s: string, i: number) => `${s.slice(0, i)};${s.slice(i)}`,
    (s: string, i: number) => `${s.slice(0, i)}%3B${s.slice(i)}`,
    (s: string, i: number) => `${s.slice(0, i)};v=1${s.slice(i)}`,
    (s: string, i: number) => encodeAt(s, i, false),
    (s: string, i: number) => encodeAt(s, i, true),
    (s: string, i: number) => encodeAt(s, i, false).replace('%', '%25'),
    (s: string) => (s.endsWith('/') ? s.slice(0, -1) : `${s}/`),
    (s: string, i: number) => `${s.slice(0, i)}${s.charAt(i).toUpperCase()}${s.slice(i + 1)}`,
    (s: string) => `${s}.json`,
    // A letter spelled as Unicode that folds to it: ı for i, ſ for s, K for k, fullwidth.
    (s: string, i: number) => {
      const char = s.charAt(i).toLowerCase();
      const twin =
        { i: '%C4%B1', s: '%C5%BF', k: '%E2%84%AA' }[char] ??
        (/[a-z]/.test(char)
          ? encodeURIComponent(String.fromCharCode(char.charCodeAt(0) + 0xfee0))
          : undefined);
      return twin === undefined ? s : `${s.slice(0, i)}${twin}${s.slice(i + 1)}`;
    },
  );

  it('sends no spelling of a path to another route than the path itself (or refuses it)', () => {
    fc.assert(
      fc.property(
        canonical,
        fc.array(fc.tuple(respell, fc.nat()), { minLength: 1, maxLength: 3 }),
        fc.constantFrom('', '?q=;//%61'),
        (path, edits, query) => {
          let variant = path;
          for (const [edit, at] of edits) variant = edit(variant, 1 + (at % variant.length));
          const result = table.match(variant + query);
          // Refused, or no route at all: nothing reaches an upstream.
          if (result.kind !== 'match') return;
          const view = upstreamView(variant);
          // The upstream serves `view` and `view/` alike: the route must be one of theirs.
          const twin = view === '/' ? view : `${view}/`;
          const expected = entryOf(view) ?? entryOf(twin);
          expect(result.entry).toBe(expected);
        },
      ),
      { numRuns: 5000 },
    );
  });
});

/** `s` with its character at `i` percent-encoded (when it is not `/`). */
function encodeAt(s: string, i: number, lowerCase: boolean): string {
  const char = s.charAt(i);
  if (char === '' || char === '/') return s;
  const hex = char.charCodeAt(0).toString(16).padStart(2, '0');
  return `${s.slice(0, i)}%${lowerCase ? hex : hex.toUpperCase()}${s.slice(i + 1)}`;
}
