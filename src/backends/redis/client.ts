import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { Cluster, Redis } from 'ioredis';
import type { RedisConfig } from '../../config/config-schema.js';
import type { StoreHealth } from '../../credentials/credential-store.js';
import { guardSocketErrors } from './socket-errors.js';

/** A client of any mode: standalone and Sentinel are a Redis, a Cluster its own kind. */
export type RedisClient = Redis | Cluster;

/** A seed node: a Sentinel's sentinel or a Cluster's node, as `credentials.redis.nodes` lists it. */
interface RedisNode {
  readonly host: string;
  readonly port: number;
}

function seedNodes(config: RedisConfig): RedisNode[] {
  return config.nodes.map((node) => {
    const [host = '127.0.0.1', port = '6379'] = node.split(':');
    return { host, port: Number(port) };
  });
}

/**
 * A private CA for rediss://: ioredis hands `tls` to tls.connect, verification on. A file
 * that cannot be read is named by its setting: one-off commands (keys, users) have no other
 * check before they connect.
 */
function tlsOptions(config: RedisConfig): ConnectionOptions | undefined {
  if (config.tls === undefined) return undefined;
  const file = config.tls.caFile;
  try {
    return { ca: readFileSync(file) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new Error(`credentials.redis.tls.caFile: cannot read ${resolve(file)} (${code})`, {
      cause: error,
    });
  }
}

const CONNECT_TIMEOUT_MS = 2_000;

/**
 * The commands issued while one turn of the event loop handles its I/O go out in one write
 * (ioredis defers them to setImmediate): the process-cache misses of the requests one turn
 * parsed cost one write and one read, not one each, and on a loopback those system calls are
 * most of a miss's cost. Not on a Cluster: there ioredis groups a pipeline by the first
 * argument, which for EVALSHA is the script's hash, not a key (redis/ioredis#2109).
 */
const ONE_WRITE_PER_TURN = { enableAutoPipelining: true } as const;

/** The client `config` names: standalone, Sentinel or Cluster, each failing fast. */
export function createRedisClient(config: RedisConfig): RedisClient {
  guardSocketErrors();
  const options = {
    // Fail fast during an outage: a command waits at most commandTimeoutMs, is retried
    // once, and the client keeps reconnecting in the background. ioredis arms this timer
    // when a command is sent or queued on a Redis connection (standalone, Sentinel, and
    // each Cluster node), so it also frees the command, not only the caller.
    commandTimeout: config.commandTimeoutMs,
    maxRetriesPerRequest: 1,
    connectTimeout: CONNECT_TIMEOUT_MS,
    retryStrategy: (times: number) => Math.min(50 * times, 1_000),
  };
  const tls = tlsOptions(config);
  const nodes = seedNodes(config);
  const auth = nodeCredentials(config);
  // The Cluster client has an offline queue of its own, with no timer: the runner never
  // hands it a command before it is ready (see run-script.ts). It reaches each node at the
  // address CLUSTER SLOTS gives (with tls-cluster, the TLS port): no servername is needed,
  // tls.connect checks an IP address against the certificate's IP names (RFC 6125 §6.2.1).
  if (config.mode === 'cluster')
    return new Cluster(nodes, {
      redisOptions: { ...options, ...auth, ...(tls === undefined ? {} : { tls }) },
    });
  if (config.mode === 'sentinel') {
    return new Redis({
      ...options,
      ...ONE_WRITE_PER_TURN,
      // The master and replicas the sentinels name; the sentinels themselves are asked unauthenticated.
      ...auth,
      sentinels: nodes,
      name: config.sentinelName ?? 'mymaster',
      // The sentinels and the master they name, both over TLS with the same CA.
      ...(tls === undefined ? {} : { tls, sentinelTLS: tls, enableTLSForSentinelMode: true }),
    });
  }
  const standalone = { ...options, ...ONE_WRITE_PER_TURN };
  // Laid over what the rediss:// URL sets (`tls: {}`).
  return new Redis(config.url, tls === undefined ? standalone : { ...standalone, tls });
}

/**
 * The user and password of `url`, for the data nodes of a Cluster or Sentinel configuration
 * (whose `url` names no server): one place for the secret in every mode, scrubbed from logs
 * like the standalone URL's (redisSecrets). Empty when the URL carries none.
 */
function nodeCredentials(config: RedisConfig): { username?: string; password?: string } {
  const { username, password } = new URL(config.url);
  return {
    ...(username === '' ? {} : { username: safeDecode(username) }),
    ...(password === '' ? {} : { password: safeDecode(password) }),
  };
}

/**
 * Why the seed nodes of a Cluster or Sentinel configuration cannot be used, found by one
 * TLS handshake with each (with a CA file) and, for a Cluster's nodes, one PING with the
 * URL's credentials; undefined when every probe succeeds (and for a standalone client, which
 * reports its socket's and its AUTH's own errors). ioredis's Cluster and Sentinel clients
 * reach their nodes first through connections whose errors they ignore (the Cluster's slot
 * refresher, the Sentinel connector's probe) and report only "Connection is closed.": a CA
 * that does not match, or a Cluster's wrong password, would read as a closed connection.
 */
export function seedDiagnosis(config: RedisConfig): (() => Promise<Error | undefined>) | undefined {
  const tls = tlsOptions(config);
  if (config.mode === 'standalone' || (tls === undefined && config.mode !== 'cluster'))
    return undefined;
  const nodes = seedNodes(config);
  const auth = nodeCredentials(config);
  const probe = async (node: RedisNode): Promise<Error | undefined> =>
    (tls === undefined ? undefined : await tlsHandshakeError(node, tls)) ??
    (config.mode === 'cluster'
      ? await pingError(node, { ...auth, ...(tls && { tls }) })
      : undefined);
  return async () => {
    const errors = await Promise.all(nodes.map(probe));
    return errors.find((error) => error !== undefined);
  };
}

/** The first error of one connection to `node` that says PING (its AUTH's, if it is refused). */
async function pingError(
  node: RedisNode,
  options: { username?: string; password?: string; tls?: ConnectionOptions },
): Promise<Error | undefined> {
  const redis = new Redis({
    ...options,
    host: node.host,
    port: node.port,
    lazyConnect: true,
    enableOfflineQueue: false,
    enableReadyCheck: false,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: CONNECT_TIMEOUT_MS,
  });
  let first: Error | undefined;
  redis.on('error', (error: Error) => {
    first ??= error;
  });
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (error) {
    return first ?? (error instanceof Error ? error : new Error(String(error)));
  } finally {
    redis.disconnect();
  }
}

/** The error a TLS handshake with `node` ends in; undefined once it completes, or takes too long. */
function tlsHandshakeError(node: RedisNode, tls: ConnectionOptions): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ ...tls, host: node.host, port: node.port });
    const done = (error?: Error): void => {
      socket.destroy();
      resolve(error);
    };
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => done());
    socket.once('secureConnect', () => done());
    // `on`: a refused certificate and the server's alert can both arrive (see socket-errors.ts).
    socket.on('error', done);
  });
}

/** Why Redis cannot be reached, in the terms an operator acts on. */
export type RedisFailure =
  'refused' | 'timeout' | 'auth' | 'tls' | 'dns' | 'reset' | 'closed' | 'protocol' | 'other';

const FAILURE_TEXT: Record<RedisFailure, string> = {
  refused: 'connection refused',
  timeout: 'no answer in time',
  auth: 'authentication failed',
  tls: 'TLS failed',
  dns: 'host name not found',
  reset: 'connection reset',
  closed: 'connection closed',
  protocol: 'not a Redis server',
  other: 'error',
};

export interface ConnectionProblem {
  readonly reason: RedisFailure;
  /** The error's own words, without any secret of the configuration. */
  readonly detail: string;
}

/**
 * Where the store connects, for logs and messages, never with a password: a Redis URL may
 * carry one (`redis://:pw@host`), and its query may too, so only scheme, host, port and
 * database are kept. Sentinel and Cluster name their seed nodes.
 */
export function redisAddress(config: RedisConfig): string {
  const nodes = config.nodes.join(',');
  if (config.mode === 'sentinel')
    return `sentinels ${nodes} (master ${config.sentinelName ?? 'mymaster'})`;
  if (config.mode === 'cluster') return `cluster ${nodes}`;
  const url = new URL(config.url);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** The configuration's secret as it could appear in a text: the URL's password, as written and decoded. */
export function redisSecrets(config: RedisConfig): string[] {
  const { password } = new URL(config.url);
  return password === '' ? [] : [...new Set([password, safeDecode(password)])];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function scrub(text: string, secrets: readonly string[]): string {
  // One line: OpenSSL's messages end in a newline, and a log field or a check line must not.
  let out = text.replace(/\s+/g, ' ').trim();
  for (const secret of secrets) out = out.split(secret).join('***');
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

/**
 * What went wrong, from an ioredis or socket error. A Cluster reports its last node's error
 * inside its own (`lastNodeError`).
 */
export function classifyRedisError(error: unknown): RedisFailure {
  if (!(error instanceof Error)) return 'other';
  const inner = (error as { lastNodeError?: unknown }).lastNodeError;
  if (inner instanceof Error) return classifyRedisError(inner);
  const text = `${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`;
  if (/ECONNREFUSED/.test(text)) return 'refused';
  if (/ETIMEDOUT|timed out|no answer within/i.test(text)) return 'timeout';
  if (/WRONGPASS|NOAUTH|NOPERM|invalid password|invalid username-password/i.test(text))
    return 'auth';
  if (/ERR_TLS|ERR_SSL|EPROTO|CERT_|self[- ]signed|certificate|\bSSL\b|\bTLS\b/i.test(text))
    return 'tls';
  if (/ENOTFOUND|EAI_AGAIN/.test(text)) return 'dns';
  if (/ECONNRESET|EPIPE/.test(text)) return 'reset';
  if (/Connection is closed/i.test(text)) return 'closed';
  if (/Unknown RESP type|Protocol error/i.test(text)) return 'protocol';
  return 'other';
}

/** Where the connection's states are logged: pino's logger fits (backends/ cannot import it). */
export interface StoreLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** The events of an ioredis client (standalone, Sentinel or Cluster) that tell its state. */
export interface ConnectionEvents {
  on(event: 'ready' | 'close' | 'end', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * Why a store operation failed, naming Redis and its address, never a secret: the cause of
 * the 503's `request failed` warning and what `check --connect` prints.
 */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailable';
  constructor(
    readonly address: string,
    /** `unreachable, connection refused (…)` while the connection is down; else the error's words. */
    readonly why: string,
    cause: unknown,
  ) {
    super(`Redis ${address}: ${why}`, { cause });
  }
}

export interface RedisConnection extends StoreHealth {
  /** The cause to give a failed operation (while the connection is down, the connection's). */
  describe(error: unknown): RedisUnavailableError;
  /** The store closes on purpose: nothing more is logged or reported. */
  closing(): void;
}

export interface WatchOptions {
  readonly address: string;
  readonly secrets: readonly string[];
  readonly log?: StoreLog | undefined;
  /** `settled` resolves by then at the latest, whatever the client still tries. */
  readonly settleWithinMs: number;
  readonly now?: () => number;
  /**
   * Asked when the client goes down saying no more than that its connection closed: the
   * cause it finds, if any, is logged and described instead (see seedDiagnosis).
   */
  readonly diagnose?: (() => Promise<Error | undefined>) | undefined;
}

/**
 * Follows one client's connection, logging each change of state once (not each retry):
 * `redis connected` (info) the first time it is ready, `redis unreachable` (warn) when the
 * first attempt fails, `redis connection lost` (warn) and `redis connection regained` (info)
 * after. Every line names the address; a failure also its reason and the error's words.
 */
export function watchRedisConnection(
  client: ConnectionEvents,
  options: WatchOptions,
): RedisConnection {
  const status: ConnectionStatus = {
    state: 'connecting',
    everReady: false,
    closed: false,
    downSince: 0,
  };
  const cause = causeOfFailure(options.secrets);
  const listeners: ((ready: boolean) => void)[] = [];
  const { settled, settle } = settleWithin(options.settleWithinMs);
  const { goDown, goReady } = transitions(status, options, { cause, listeners, settle });

  client.on('error', (error) => {
    if (status.closed) return;
    cause.failed(error);
    // Some clients (Sentinel) keep retrying without a 'close': the first error says it all.
    if (status.state === 'connecting') goDown('redis unreachable');
  });
  const onClose = (): void => {
    if (status.closed) return;
    if (status.state === 'connecting') goDown('redis unreachable');
    else if (status.state === 'ready') goDown('redis connection lost');
  };
  client.on('close', onClose);
  client.on('end', onClose);
  client.on('ready', () => {
    if (status.closed || status.state === 'ready') return;
    goReady();
  });

  return {
    ready: () => status.state === 'ready',
    onChange: (listener) => {
      listeners.push(listener);
    },
    settled,
    describe: (error) =>
      new RedisUnavailableError(
        options.address,
        whyFailed(status.state, error, cause, options.secrets),
        error,
      ),
    closing() {
      status.closed = true;
      settle();
    },
  };
}

/** Where a watched connection stands. */
interface ConnectionStatus {
  state: ConnectionState;
  everReady: boolean;
  /** The store closes on purpose: nothing more is logged or reported. */
  closed: boolean;
  downSince: number;
}

/** Going down and coming back: the state, its one log line, `settle` and the listeners. */
function transitions(
  status: ConnectionStatus,
  options: WatchOptions,
  parts: {
    readonly cause: CauseOfFailure;
    readonly listeners: readonly ((ready: boolean) => void)[];
    readonly settle: () => void;
  },
): { goDown: (message: string) => void; goReady: () => void } {
  const { address, log } = options;
  const { cause, listeners, settle } = parts;
  const now = options.now ?? Date.now;
  const report = (message: string): void => {
    if (status.closed) return;
    const { reason, detail } = cause.problem();
    log?.warn({ store: 'redis', address, reason, cause: detail }, message);
    settle();
  };
  const goDown = (message: string): void => {
    status.state = 'down';
    status.downSince = now();
    const { diagnose } = options;
    const diagnosing = diagnose !== undefined && cause.saysOnlyClosed();
    if (!diagnosing) report(message);
    for (const listener of listeners) listener(false);
    if (!diagnosing) return;
    // The line waits for the diagnosis (a handshake, bounded by the connect timeout) so
    // that it names the cause; `settled` is still bounded by settleWithinMs.
    void diagnose().then(
      (found) => {
        if (status.state === 'down') cause.diagnosed(found);
        report(message);
      },
      () => report(message),
    );
  };
  const goReady = (): void => {
    status.state = 'ready';
    cause.cleared();
    if (status.everReady)
      log?.info(
        { store: 'redis', address, down_ms: now() - status.downSince },
        'redis connection regained',
      );
    else log?.info({ store: 'redis', address }, 'redis connected');
    status.everReady = true;
    settle();
    for (const listener of listeners) listener(true);
  };
  return { goDown, goReady };
}

type ConnectionState = 'connecting' | 'ready' | 'down';

/** A promise that resolves at `settle()`, or after `withinMs` at the latest. */
function settleWithin(withinMs: number): { settled: Promise<void>; settle: () => void } {
  let settle: () => void = () => undefined;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  setTimeout(settle, withinMs).unref();
  return { settled, settle: () => settle() };
}

/** Why the connection is down: the client's last error, or what `diagnose` found instead. */
interface CauseOfFailure {
  failed(error: Error): void;
  /** What `diagnose` found while the client said only "closed": kept until it is ready again. */
  diagnosed(found: Error | undefined): void;
  /** Ready again: nothing is wrong. */
  cleared(): void;
  /** The client said no more than that its connection closed (or nothing yet). */
  saysOnlyClosed(): boolean;
  problem(): ConnectionProblem;
}

function causeOfFailure(secrets: readonly string[]): CauseOfFailure {
  let lastError: Error | undefined;
  let diagnosed: Error | undefined;
  const saysOnlyClosed = (error: Error | undefined): boolean =>
    error === undefined || classifyRedisError(error) === 'closed';
  return {
    failed: (error) => {
      lastError = error;
    },
    diagnosed: (found) => {
      diagnosed = found;
    },
    cleared: () => {
      lastError = undefined;
      diagnosed = undefined;
    },
    saysOnlyClosed: () => saysOnlyClosed(lastError),
    problem: () => {
      const error = saysOnlyClosed(lastError) ? (diagnosed ?? lastError) : lastError;
      return error === undefined
        ? { reason: 'closed', detail: 'connection closed by the server' }
        : { reason: classifyRedisError(error), detail: scrub(detailOf(error), secrets) };
    },
  };
}

/** Why an operation failed, as RedisUnavailableError says it: the connection's, while down. */
function whyFailed(
  state: ConnectionState,
  error: unknown,
  cause: CauseOfFailure,
  secrets: readonly string[],
): string {
  const own = (): string =>
    scrub(detailOf(error instanceof Error ? error : new Error(String(error))), secrets);
  if (state === 'ready') return own();
  // Nothing failed yet, nothing answered either (a peer that accepts and stays silent).
  if (state === 'connecting') return `not connected, no answer yet (${own()})`;
  const { reason, detail } = cause.problem();
  return `unreachable, ${FAILURE_TEXT[reason]} (${detail})`;
}

/** An error's own words; a Cluster's names its last node's error too. */
function detailOf(error: Error): string {
  const inner = (error as { lastNodeError?: unknown }).lastNodeError;
  return inner instanceof Error && !error.message.includes(inner.message)
    ? `${error.message} ${inner.message}`
    : error.message;
}
