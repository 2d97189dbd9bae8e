import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../../src/config/load-config.js';
import { ERROR_CATALOGUE } from '../../../src/errors/error-codes.js';
import { codeBlocks, readDoc, section } from '../../support/markdown.js';

// The forward-auth configs of docs/forward-auth.md are the files in config/forward-auth/
// (nginx's, its cached variant and Caddy's run in the e2e tests; Traefik and Envoy are not run
// there): the doc shows each file without its comments, and both name the check path and identity
// headers the gateway uses.

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

const DOC = readDoc('docs/forward-auth.md');
const SECTION = section(DOC, '## Forward auth: nginx, Caddy, Traefik, Envoy');

/** The first fenced block of the doc's forward-auth section whose body starts with `start`. */
function docBlock(lang: string, start = ''): string {
  const block = codeBlocks(SECTION, lang).find((body) => body.startsWith(start));
  if (block === undefined) throw new Error(`no ${lang} block in the doc's section`);
  return block;
}

/** Lines that are neither empty nor comments, trimmed. */
function meaningful(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

const IDENTITY_HEADERS = ['x-auth-subject', 'x-auth-method', 'x-auth-key', 'x-auth-scopes'];
const DEFAULT_PATH = parseConfig('', 'test.yaml').forwardAuth.path;

describe('the forward-auth configs of docs/forward-auth.md', () => {
  it('shows a gateway config that loads, with the check on', () => {
    expect(
      parseConfig(docBlock('yaml', 'server:'), 'docs/forward-auth.md').forwardAuth.enabled,
    ).toBe(true);
  });

  it.each([
    ['nginx', 'nginx.conf', 'map '],
    ['nginx', 'nginx-cache.conf', 'proxy_cache_path '],
    ['caddyfile', 'Caddyfile', ''],
  ])('shows only lines of config/forward-auth (%s, %s)', (lang, file, start) => {
    const lines = new Set(meaningful(read(`config/forward-auth/${file}`)));
    expect(meaningful(docBlock(lang, start)).filter((line) => !lines.has(line))).toEqual([]);
  });

  it('tells where `caddy run` saves the config it loaded, and how to skip that', () => {
    const caddy = SECTION.slice(SECTION.indexOf('### Caddy'), SECTION.indexOf('### Traefik'));
    for (const told of ['~/.config/caddy/autosave.json', 'persist_config off'])
      expect(caddy).toContain(told);
  });

  it("has nginx answer each code the gateway names in X-Auth-Error with the gateway's message", () => {
    const file = read('config/forward-auth/nginx.conf');
    const mapBody = (name: string) =>
      meaningful(new RegExp(`map \\$[a-z_]+ \\$${name} \\{\\n([^}]*)\\}`).exec(file)?.[1] ?? '');
    const codes = mapBody('auth_error_code').map((line) => line.split(' '));
    // Each listed code passes as itself; anything else (no answer) is the store's 503.
    expect(
      codes.filter(([code, as = '']) => code !== 'default' && code !== as.slice(0, -1)),
    ).toEqual([]);
    expect(codes.at(-1)).toEqual(['default', 'credential_store_unavailable;']);
    const messages = Object.fromEntries(
      mapBody('auth_error_message').map((line) => {
        const [code = '', ...rest] = line.split(' ');
        return [code, JSON.parse(rest.join(' ').slice(0, -1)) as string];
      }),
    );
    const listed = [
      ...codes.slice(0, -1).map(([code = '']) => code),
      'credential_store_unavailable',
    ];
    expect(Object.keys(messages).sort()).toEqual(listed.sort());
    for (const code of listed)
      expect(messages[code]).toBe(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].message);
  });

  it('has an nginx cache config that is nginx.conf with the cache lines added', () => {
    const cached = meaningful(read('config/forward-auth/nginx-cache.conf'));
    const isCache = (line: string) => line.startsWith('proxy_cache');
    expect(cached.filter((line) => !isCache(line))).toEqual(
      meaningful(read('config/forward-auth/nginx.conf')),
    );
    expect(cached.filter(isCache).map((line) => line.split(' ')[0])).toEqual([
      'proxy_cache_path',
      'proxy_cache',
      'proxy_cache_key',
    ]);
  });

  it('shows the Traefik file, which asks the check path and copies every identity header', () => {
    const file = parse(read('config/forward-auth/traefik.yml')) as {
      http: { middlewares: Record<string, { forwardAuth: Record<string, unknown> }> };
    };
    const shown = parse(docBlock('yaml', 'http:')) as unknown;
    expect(shown).toEqual(file);
    const forwardAuth = file.http.middlewares['accounts-gateway']?.forwardAuth;
    expect(new URL(String(forwardAuth?.address)).pathname).toBe(DEFAULT_PATH);
    expect((forwardAuth?.authResponseHeaders as string[]).map((h) => h.toLowerCase())).toEqual(
      IDENTITY_HEADERS,
    );
  });

  it('has Traefik delete every underscore spelling of the identity headers before the check', () => {
    const file = parse(read('config/forward-auth/traefik.yml')) as {
      http: {
        middlewares: Record<string, { headers?: { customRequestHeaders: Record<string, string> } }>;
        routers: Record<string, { middlewares: string[] }>;
      };
    };
    const strip = file.http.middlewares['strip-identity-spellings']?.headers?.customRequestHeaders;
    const spellings = IDENTITY_HEADERS.flatMap((name) => {
      const [first = '', ...rest] = name.split('-');
      // Every choice of `-` or `_` at each separator but the all-`-` one.
      return rest
        .reduce<string[]>(
          (acc, part) => acc.flatMap((s) => [`${s}-${part}`, `${s}_${part}`]),
          [first],
        )
        .filter((spelling) => spelling !== name);
    });
    expect(
      Object.keys(strip ?? {})
        .map((h) => h.toLowerCase())
        .sort(),
    ).toEqual(spellings.sort());
    expect(Object.values(strip ?? {}).every((value) => value === '')).toBe(true);
    expect(file.http.routers['accounts']?.middlewares).toEqual([
      'strip-identity-spellings',
      'accounts-gateway',
    ]);
  });

  it('has Envoy drop every header whose name holds "_" (X_Auth_Subject)', () => {
    expect(read('config/forward-auth/envoy.yaml')).toMatch(
      /common_http_protocol_options:\n\s+headers_with_underscores_action: DROP_HEADER\n/,
    );
  });

  it('shows the ext_authz filter of the Envoy file, which asks under the check path', () => {
    const file = read('config/forward-auth/envoy.yaml');
    const filters = (
      parse(file) as {
        static_resources: {
          listeners: {
            filter_chains: { filters: { typed_config: { http_filters: unknown[] } }[] }[];
          }[];
        };
      }
    ).static_resources.listeners[0]?.filter_chains[0]?.filters[0]?.typed_config.http_filters;
    const extAuthz = filters?.[0] as { typed_config: { http_service: { path_prefix: string } } };
    const shown = parse(docBlock('yaml', '- name: envoy')) as unknown;
    expect(shown).toEqual([extAuthz]);
    expect(extAuthz.typed_config.http_service.path_prefix).toBe(DEFAULT_PATH);
  });
});
