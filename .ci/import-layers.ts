// Which folder of src/ may import which: the architecture as a lint rule, so a wrong arrow
// fails `npm run check`. Read it bottom-up: a folder imports only folders listed for it
// (and itself); gateway/ composes everything below it; only the CLI (main.ts) reaches the commands.
// A folder of NESTED_ROOMS is a room per subfolder (`backends/redis`), each with its own entry.
import { dirname, relative, resolve, sep } from 'node:path';
import type { Rule } from 'eslint';

/** Folder of src/ -> the folders of src/ it may import. */
export const LAYERS: Readonly<Record<string, readonly string[]>> = {
  // Foundations: import nothing of ours.
  errors: [],
  identity: [],
  routing: [],
  concurrency: [],
  // TLS material from files: checked, then swapped in (the listener) or handed on (upstreams).
  tls: [],
  // W3C trace context (pure) and the OTLP span export (the SDK, loaded only when configured).
  tracing: [],
  // Configuration and what every layer above may use.
  config: ['identity', 'routing'],
  observability: ['errors', 'identity'],
  // Domain: credentials and their checks, as contracts (no store in them).
  credentials: ['config', 'errors', 'identity'],
  protection: ['config', 'errors', 'identity'],
  // The stores behind those contracts: backend.ts names what a backend gives; each subfolder
  // implements it. Only the composition root and the CLI's commands reach them.
  backends: ['config', 'credentials', 'protection'],
  'backends/memory': ['backends', 'config', 'credentials', 'errors', 'protection'],
  'backends/redis': [
    'backends',
    'concurrency',
    'config',
    'credentials',
    'errors',
    'identity',
    'protection',
  ],
  auth: ['concurrency', 'config', 'credentials', 'errors', 'identity', 'protection'],
  tokens: ['auth', 'config', 'errors', 'identity'],
  // The public API's schemas (zod): the endpoints validate bodies with them, and the OpenAPI
  // document is built from them.
  openapi: ['credentials', 'errors', 'identity', 'routing'],
  // Edges: forwarding, the request pipeline, the gateway's own endpoints.
  proxy: ['errors', 'identity'],
  http: [
    'auth',
    'errors',
    'identity',
    'observability',
    'protection',
    'proxy',
    'routing',
    'tracing',
  ],
  endpoints: [
    'auth',
    'credentials',
    'errors',
    'http',
    'identity',
    'openapi',
    'protection',
    'tokens',
  ],
  // The key holder's pages: sessions, CSRF and HTML over the rules of the keys endpoints.
  portal: ['credentials', 'endpoints', 'errors', 'http', 'identity'],
  admin: ['errors', 'http', 'observability', 'routing'],
  'reference-upstream': ['http'],
  // The lifecycle of `serve`, one process or the primary of workers (forks, replaces, the
  // admin port of the set): signals, SIGHUP, start failures, the drain, the signing key the
  // processes share. What serves comes in from the CLI, as an interface (gateway/ builds on
  // the drain, so it sits below).
  lifecycle: ['admin', 'config', 'http', 'observability', 'tls', 'tokens'],
  // The composition root: named builders, the only place that picks production
  // implementations. Only the CLI, its commands and the workers reach it.
  gateway: [
    'admin',
    'auth',
    'backends',
    'backends/memory',
    'backends/redis',
    'concurrency',
    'config',
    'credentials',
    'endpoints',
    'errors',
    'http',
    'identity',
    'lifecycle',
    'observability',
    'openapi',
    'portal',
    'protection',
    'proxy',
    'reference-upstream',
    'routing',
    'tls',
    'tokens',
    'tracing',
  ],
  // A worker of serve --workers: a gateway from the composition root, told by its primary
  // (lifecycle/) over IPC.
  workers: ['config', 'gateway', 'lifecycle', 'observability'],
  // The CLI's commands, each declaring its options: they call the composition root (gateway/)
  // and name its failures; serve picks what serves (one gateway, or the primary of workers)
  // and hands it to the lifecycle.
  commands: [
    'auth',
    'backends/redis',
    'config',
    'credentials',
    'errors',
    'gateway',
    'http',
    'identity',
    'lifecycle',
    'observability',
    'openapi',
    'protection',
    'tls',
    'tokens',
    'workers',
  ],
};

/**
 * The root files: the CLI (main.ts) and its entry (cli.ts), which checks the Node version
 * before it loads main.ts.
 */
const ROOT_FILES: Readonly<Record<string, readonly string[] | 'any'>> = {
  'cli.ts': [],
  'main.ts': 'any',
};

/** A library that belongs to one room: nobody else imports it. */
export const PACKAGES: Readonly<Record<string, readonly string[]>> = {
  ioredis: ['backends/redis'],
  bcrypt: ['credentials'],
  jose: ['auth', 'tokens', 'endpoints'],
  'http-proxy-3': ['proxy'],
  undici: ['proxy'],
  pino: ['observability'],
  'prom-client': ['observability'],
  zod: ['config', 'openapi'],
  'zod-openapi': ['openapi'],
  yaml: ['config'],
  yargs: ['<root>', 'commands'],
  '@opentelemetry/api': ['tracing'],
  '@opentelemetry/sdk-trace': ['tracing'],
  '@opentelemetry/exporter-trace-otlp-http': ['tracing'],
  '@opentelemetry/resources': ['tracing'],
};

/** Folders of src/ whose subfolders are rooms of their own (`backends/redis`, `backends/memory`). */
export const NESTED_ROOMS: readonly string[] = ['backends'];

/**
 * The room of src/ a path lies in: its folder, or `<folder>/<subfolder>` in a nested room;
 * `<root>` for src/ itself, undefined outside src/.
 */
function folderOf(srcRoot: string, path: string): string | undefined {
  const rel = relative(srcRoot, path);
  if (rel.startsWith('..') || rel === '') return undefined;
  const parts = rel.split(sep);
  if (parts.length === 1) return '<root>';
  const [top = '', sub] = parts;
  return NESTED_ROOMS.includes(top) && parts.length > 2 ? `${top}/${sub}` : top;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** Why `specifier`, imported from `file`, crosses a layer the wrong way; undefined if it may. */
export function checkImport(srcRoot: string, file: string, specifier: string): string | undefined {
  const from = folderOf(srcRoot, file);
  if (from === undefined) return undefined;
  if (!specifier.startsWith('.')) {
    if (specifier.startsWith('node:')) return undefined;
    const name = packageName(specifier);
    const owners = PACKAGES[name];
    if (owners === undefined || owners.includes(from)) return undefined;
    return `${name} belongs to ${owners.join(', ')}: ${from} reaches it through them`;
  }
  const target = resolve(dirname(file), specifier);
  const to = folderOf(srcRoot, target);
  if (to === undefined) return `${from} imports from outside src/`;
  if (to === from) return undefined;
  if (from === '<root>') {
    const allowed = ROOT_FILES[relative(srcRoot, file)] ?? [];
    if (allowed === 'any' || allowed.includes(to)) return undefined;
    return `${relative(srcRoot, file)} may not import ${to}/`;
  }
  const allowed = LAYERS[from];
  if (allowed === undefined) return `src/${from}/ has no entry in .ci/import-layers.ts: add it`;
  if (allowed.includes(to)) return undefined;
  const what = to === '<root>' ? relative(srcRoot, target).replace(/\.js$/, '.ts') : `${to}/`;
  return `${from}/ may not import ${what} (allowed: ${allowed.join(', ') || 'nothing of ours'})`;
}

/** The ESLint rule: reports every import, re-export and dynamic import that checkImport refuses. */
export function importLayersRule(srcRoot: string): Rule.RuleModule {
  return {
    meta: { type: 'problem', schema: [], docs: { description: 'import directions of src/' } },
    create(context) {
      const check = (node: Rule.Node, source: unknown): void => {
        if (typeof source !== 'string') return;
        const message = checkImport(srcRoot, context.filename, source);
        if (message !== undefined) context.report({ node, message });
      };
      return {
        ImportDeclaration: (node) => check(node, node.source.value),
        ExportNamedDeclaration: (node) => check(node, node.source?.value),
        ExportAllDeclaration: (node) => check(node, node.source.value),
        ImportExpression: (node) =>
          check(node, node.source.type === 'Literal' ? node.source.value : undefined),
      };
    },
  };
}
