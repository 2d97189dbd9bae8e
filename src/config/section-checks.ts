import type { ParsedTree } from './parsed-tree.js';

/**
 * The cross-checks within the bearer, credentials and server sections, and between the two
 * listeners: problems no single setting has. Each reads the settings the schema accepted and
 * skips the others, which the schema has reported.
 */

/** A problem a cross-check found, and whose it is: the file's, or a flag's or variable's. */
export interface CrossCheckProblem {
  readonly of: 'file' | 'options';
  readonly problem: string;
}

/** Where the API and admin addresses come from: the flag or variable that set them, if any. */
export interface ListenOrigins {
  readonly server: string | undefined;
  readonly admin: string | undefined;
}

export function issuerNameProblems(tree: ParsedTree): string[] {
  const problems: string[] = [];
  const issuerNames = new Set<string>();
  for (const i of tree.indexes(['auth', 'bearer', 'issuers'])) {
    const name = tree.text(['auth', 'bearer', 'issuers', i, 'name']);
    if (name === undefined) continue;
    if (issuerNames.has(name))
      problems.push(`auth.bearer.issuers[${i}].name: duplicate name ${name}`);
    issuerNames.add(name);
  }
  return problems;
}

export function redisTopologyProblems(tree: ParsedTree): string[] {
  const problems: string[] = [];
  const mode = tree.text(['credentials', 'redis', 'mode']);
  const nodes = tree.setting(['credentials', 'redis', 'nodes']);
  const singleSlotPrefix = tree.setting(['credentials', 'redis', 'singleSlotPrefix']);
  if (mode !== undefined && mode !== 'standalone' && Array.isArray(nodes) && nodes.length === 0) {
    problems.push(`credentials.redis.nodes: ${mode} mode needs at least one host:port`);
  }
  // The single-slot layout is read and moved by scripts over several of its keys at once: on
  // a Cluster they share a slot only through the prefix's hash tag, which it always had there.
  if (
    mode === 'cluster' &&
    typeof singleSlotPrefix === 'string' &&
    !/\{[^}]+\}/.test(singleSlotPrefix)
  ) {
    problems.push(
      'credentials.redis.singleSlotPrefix: cluster mode: the single-slot layout had a hash tag such as {ag}: (or false)',
    );
  }
  return problems;
}

export function serverProblems(tree: ParsedTree): string[] {
  const problems: string[] = [];
  const headersTimeoutMs = tree.number(['server', 'headersTimeoutMs']);
  const requestTimeoutMs = tree.number(['server', 'requestTimeoutMs']);
  if (
    headersTimeoutMs !== undefined &&
    requestTimeoutMs !== undefined &&
    headersTimeoutMs > requestTimeoutMs
  ) {
    problems.push('server.headersTimeoutMs: must not exceed server.requestTimeoutMs');
  }
  // Pairs, users and revocations of the memory store live in one process: workers would each
  // hold their own copy, and a pair revoked through one would still work on the others.
  const workers = tree.setting(['server', 'workers']);
  if (
    tree.setting(['credentials', 'store']) === 'memory' &&
    workers !== undefined &&
    workers !== 1
  ) {
    problems.push(
      'server.workers: the memory store keeps its state in one process; more than one worker needs credentials.store: redis',
    );
  }
  return problems;
}

/**
 * The API and admin listeners on one address. When a flag or variable set either address,
 * the clash is that option's problem, not the file's.
 */
export function listenerProblems(tree: ParsedTree, origins: ListenOrigins): CrossCheckProblem[] {
  const port = (section: string) => tree.number([section, 'port']);
  const host = (section: string) => tree.text([section, 'host']);
  const adminPort = port('admin');
  if (
    tree.setting(['admin', 'enabled']) !== true ||
    adminPort === undefined ||
    adminPort === 0 ||
    adminPort !== port('server') ||
    host('admin') === undefined ||
    host('admin') !== host('server')
  )
    return [];
  if (origins.server === undefined && origins.admin === undefined)
    return [{ of: 'file', problem: 'admin.port: must differ from server.port' }];
  return [
    {
      of: 'options',
      problem: `${origins.admin ?? 'admin.port'}: must differ from ${origins.server ?? 'server.port'}`,
    },
  ];
}
