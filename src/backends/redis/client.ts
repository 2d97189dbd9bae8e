import { readFileSync } from 'node:fs';
import { Cluster, Redis } from 'ioredis';
import type { RedisConfig } from '../../config/config-schema.js';
import type { StoreHealth } from '../../credentials/credential-store.js';

/** A client of any mode: standalone and Sentinel are a Redis, a Cluster its own kind. */
export type RedisClient = Redis | Cluster;

/** The client `config` names: standalone, Sentinel or Cluster, each failing fast. */
export function createRedisClient(config: RedisConfig): RedisClient {
  const options = {
    // Fail fast during an outage: a command waits at most commandTimeoutMs, is retried
    // once, and the client keeps reconnecting in the background. ioredis arms this timer
    // when a command is sent or queued on a Redis connection (standalone, Sentinel, and
    // each Cluster node), so it also frees the command, not only the caller.
    commandTimeout: config.commandTimeoutMs,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times: number) => Math.min(50 * times, 1_000),
  };
  // A private CA for rediss://: ioredis hands `tls` to tls.connect, verification on.
  const tls = config.tls === undefined ? undefined : { ca: readFileSync(config.tls.caFile) };
  const nodes = config.nodes.map((node) => {
    const [host = '127.0.0.1', port = '6379'] = node.split(':');
    return { host, port: Number(port) };
  });
  // The Cluster client has an offline queue of its own, with no timer: the runner never
  // hands it a command before it is ready (see run-script.ts).
  if (config.mode === 'cluster')
    return new Cluster(nodes, { redisOptions: tls === undefined ? options : { ...options, tls } });
  if (config.mode === 'sentinel') {
    return new Redis({
      ...options,
      sentinels: nodes,
      name: config.sentinelName ?? 'mymaster',
      // The sentinels and the master they name, both over TLS with the same CA.
      ...(tls === undefined ? {} : { tls, sentinelTLS: tls, enableTLSForSentinelMode: true }),
    });
  }
  // Laid over what the rediss:// URL sets (`tls: {}`).
  return new Redis(config.url, tls === undefined ? options : { ...options, tls });
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
  const { address, log } = options;
  const now = options.now ?? Date.now;
  let state: 'connecting' | 'ready' | 'down' = 'connecting';
  let everReady = false;
  let closed = false;
  let downSince = 0;
  let lastError: Error | undefined;
  const listeners: ((ready: boolean) => void)[] = [];

  let settle: () => void = () => undefined;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  setTimeout(settle, options.settleWithinMs).unref();

  const problem = (error: Error | undefined): ConnectionProblem =>
    error === undefined
      ? { reason: 'closed', detail: 'connection closed by the server' }
      : { reason: classifyRedisError(error), detail: scrub(detailOf(error), options.secrets) };

  const goDown = (message: string): void => {
    state = 'down';
    downSince = now();
    const { reason, detail } = problem(lastError);
    log?.warn({ store: 'redis', address, reason, cause: detail }, message);
    settle();
    for (const listener of listeners) listener(false);
  };

  client.on('error', (error) => {
    if (closed) return;
    lastError = error;
    // Some clients (Sentinel) keep retrying without a 'close': the first error says it all.
    if (state === 'connecting') goDown('redis unreachable');
  });
  const onClose = (): void => {
    if (closed) return;
    if (state === 'connecting') goDown('redis unreachable');
    else if (state === 'ready') goDown('redis connection lost');
  };
  client.on('close', onClose);
  client.on('end', onClose);
  client.on('ready', () => {
    if (closed || state === 'ready') return;
    state = 'ready';
    lastError = undefined;
    if (everReady)
      log?.info(
        { store: 'redis', address, down_ms: now() - downSince },
        'redis connection regained',
      );
    else log?.info({ store: 'redis', address }, 'redis connected');
    everReady = true;
    settle();
    for (const listener of listeners) listener(true);
  });

  return {
    ready: () => state === 'ready',
    onChange: (listener) => {
      listeners.push(listener);
    },
    settled,
    describe(error) {
      let why: string;
      const own = (): string =>
        scrub(detailOf(error instanceof Error ? error : new Error(String(error))), options.secrets);
      if (state === 'ready') why = own();
      // Nothing failed yet, nothing answered either (a peer that accepts and stays silent).
      else if (state === 'connecting') why = `not connected, no answer yet (${own()})`;
      else {
        const { reason, detail } = problem(lastError);
        why = `unreachable, ${FAILURE_TEXT[reason]} (${detail})`;
      }
      return new RedisUnavailableError(address, why, error);
    },
    closing() {
      closed = true;
      settle();
    },
  };
}

/** An error's own words; a Cluster's names its last node's error too. */
function detailOf(error: Error): string {
  const inner = (error as { lastNodeError?: unknown }).lastNodeError;
  return inner instanceof Error && !error.message.includes(inner.message)
    ? `${error.message} ${inner.message}`
    : error.message;
}
