import { spawn, type ChildProcess } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import bcrypt from 'bcrypt';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { Redis } from 'ioredis';
import { createRedisStore, redisKeys } from '../../src/credentials/redis-store.js';
import { redisConfig } from '../integration/in-process-gateway.js';
import { CLI } from '../support/gateway-process.js';
import { TEST_BCRYPT_COST } from '../support/seed-redis.js';

// Helpers shared by the credential-lifecycle e2e files (issue 3): a signing key the test
// also holds, a small HTTP client that can pick its source address (the login throttle
// counts per client address), the CLI run to completion with stdin, and store access.

const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface SigningKey {
  /** PKCS#8 PEM, as `tokens.signingKey` takes it. */
  readonly pem: string;
  readonly privateKey: KeyObject;
  readonly publicJwk: JWK;
  /** RFC 7638 thumbprint of the public key: the kid the gateway publishes. */
  readonly kid: string;
}

export async function generateSigningKey(): Promise<SigningKey> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicJwk = await exportJWK(createPublicKey(privateKey));
  return { pem, privateKey, publicJwk, kid: await calculateJwkThumbprint(publicJwk) };
}

export interface GatewayYamlOptions {
  redisUrl: string;
  keyPrefix: string;
  upstreamUrl: string;
  signingKeyPem: string;
  /** Further top-level YAML, e.g. `login: {...}` or `keys: {...}`. */
  extra?: string;
  cacheTtlSec?: number;
  maxActivePerSubject?: number;
  maxBodyBytes?: number;
  lifetimeSec?: number;
}

/** A gateway with the Redis store, the test's signing key, bcrypt cost 4 and the admin port on 0. */
export function gatewayYaml(options: GatewayYamlOptions): string {
  return `
server: { maxBodyBytes: ${options.maxBodyBytes ?? 4096} }
admin: { port: 0 }
upstreams:
  accounts: { url: "${options.upstreamUrl}" }
credentials:
  store: redis
  bcryptCost: ${TEST_BCRYPT_COST}
  redis: { url: "${options.redisUrl}", keyPrefix: "${options.keyPrefix}" }
auth:
  basic:
    cache: { ttlSec: ${options.cacheTtlSec ?? 60} }
keys: { maxActivePerSubject: ${options.maxActivePerSubject ?? 10} }
tokens:
  lifetimeSec: ${options.lifetimeSec ?? 900}
  signingKey: ${JSON.stringify(options.signingKeyPem)}
logging: { level: info, requests: false }
${options.extra ?? ''}
`;
}

export interface HttpAnswer {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Record<string, string | string[]>;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The local address to connect from (any of 127.0.0.0/8 on Linux). */
  from?: string;
}

/** One request on a fresh connection, from the chosen source address. */
export function send(
  baseUrl: string,
  path: string,
  options: RequestOptions = {},
): Promise<HttpAnswer> {
  const url = new URL(path, baseUrl);
  const headers: Record<string, string> = { connection: 'close', ...options.headers };
  if (options.body !== undefined && headers['content-length'] === undefined)
    headers['content-length'] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: options.method ?? 'GET',
        headers,
        // A fresh connection each time, never one an earlier answer left open.
        agent: false,
        ...(options.from === undefined ? {} : { localAddress: options.from }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const answer: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(res.headers))
            if (value !== undefined) answer[name] = value;
          resolve({ status: res.statusCode ?? 0, headers: answer, text, json: parseJson(text) });
        });
      },
    );
    // A gateway may answer (413) and close before the whole body is taken: keep the answer.
    req.on('error', reject);
    req.end(options.body);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The body of an error envelope without its request_id, to compare two answers. */
export function withoutRequestId(body: unknown): unknown {
  if (body === null || typeof body !== 'object') return body;
  const rest: Record<string, unknown> = { ...(body as Record<string, unknown>) };
  delete rest.request_id;
  return rest;
}

/** The headers that must match between two answers that may not differ (ids and dates aside). */
export function comparableHeaders(headers: Record<string, string | string[]>): unknown {
  const rest = { ...headers };
  delete rest['x-request-id'];
  delete rest.date;
  return rest;
}

export function basicAuth(key: string, secret: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}` };
}

export function bearerAuth(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

export const JSON_TYPE = { 'content-type': 'application/json' };

/** Exchanges a password for a token; fails the test unless the gateway answers 200. */
export async function issueToken(
  baseUrl: string,
  username: string,
  password: string,
  from?: string,
): Promise<string> {
  const res = await send(baseUrl, '/auth/token', {
    method: 'POST',
    headers: JSON_TYPE,
    body: JSON.stringify({ username, password }),
    ...(from === undefined ? {} : { from }),
  });
  if (res.status !== 200) throw new Error(`token exchange answered ${res.status}: ${res.text}`);
  const { data } = res.json as { data: [{ access_token: string }] };
  return data[0].access_token;
}

/**
 * Writes (or overwrites) a web-app user as the README tells another service to (HSET), with
 * a cost-4 bcrypt hash: tests also use it to move a user to another subject.
 */
export async function putUser(
  redisUrl: string,
  keyPrefix: string,
  user: { username: string; subject: string; password: string },
): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    await redis.hset(redisKeys(keyPrefix).user(user.username), {
      password_hash: await bcrypt.hash(user.password, TEST_BCRYPT_COST),
      subject: user.subject,
      created_at: new Date().toISOString(),
    });
  } finally {
    redis.disconnect();
  }
}

export async function removeUser(
  redisUrl: string,
  keyPrefix: string,
  username: string,
): Promise<boolean> {
  const store = createRedisStore(redisConfig(redisUrl, keyPrefix));
  try {
    return await store.removeUser(username);
  } finally {
    await store.close();
  }
}

/**
 * Revokes a pair as the README/store comment tells another service to: HSET status revoked,
 * SREM from the active set (one MULTI), then PUBLISH "key:<key>" on `<prefix>revocations`.
 */
export async function revokeAsAnotherService(
  redisUrl: string,
  keyPrefix: string,
  key: string,
  subject: string,
): Promise<void> {
  const k = redisKeys(keyPrefix);
  const redis = new Redis(redisUrl);
  try {
    await redis
      .multi()
      .hset(k.key(key), { status: 'revoked', revoked_at: new Date().toISOString() })
      .srem(k.subjectActive(subject), key)
      .publish(k.channel, `key:${key}`)
      .exec();
  } finally {
    redis.disconnect();
  }
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Children of runCli still running; killAll() in teardown so none outlives a failure. */
const commands = new Set<ChildProcess>();

/** Runs the built CLI to completion; `stdin` is piped (so it is not a TTY) and then closed. */
export function runCli(
  args: string[],
  options: { stdin?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: REPO,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: cliEnv(options.env ?? {}),
    });
    commands.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // The CLI may exit (a usage error) before it reads stdin.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
    child.once('error', reject);
    child.once('close', (code) => {
      commands.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The test runner's environment without GATEWAY_* settings, plus the given ones. */
function cliEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('GATEWAY_')) env[name] = value;
  return { ...env, ...extra };
}

export function killCliChildren(): void {
  for (const child of commands) child.kill('SIGKILL');
  commands.clear();
}

export interface ContinueExchange {
  /** Everything received before the body was sent. */
  readonly beforeBody: string;
  /** Everything received in all. */
  readonly raw: string;
  readonly status: number;
  readonly body: string;
}

/**
 * Sends the head of a request that carries `Expect: 100-continue`, waits for the interim
 * `100 Continue` (and for nothing else), then sends the body and reads the final response
 * until the server closes (the head should say `Connection: close`).
 */
export function continueExchange(
  port: number,
  head: string,
  body: string,
  from?: string,
): Promise<ContinueExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      port,
      host: '127.0.0.1',
      ...(from === undefined ? {} : { localAddress: from }),
    });
    let received = '';
    let beforeBody: string | undefined;
    socket.setTimeout(10_000, () => {
      socket.destroy();
      reject(new Error(`no complete exchange within 10 s:\n${received}`));
    });
    socket.once('connect', () => socket.write(head, 'latin1'));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (beforeBody === undefined && received.includes('\r\n\r\n')) {
        beforeBody = received;
        socket.write(body, 'latin1');
      }
    });
    socket.once('error', reject);
    socket.once('close', () => {
      const final = received.slice((beforeBody ?? '').length);
      const headEnd = final.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(final)?.[1] ?? 0);
      resolve({
        beforeBody: beforeBody ?? '',
        raw: received,
        status,
        body: Buffer.from(final.slice(headEnd + 4), 'latin1').toString('utf8'),
      });
    });
  });
}

export function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? NaN)
    : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

/**
 * Sends `bytes` on a fresh connection and resolves with everything received once the server
 * ends the connection, or after `giveUpMs` with `closedByServer: false`.
 */
export function sendUntilClosed(
  port: number,
  bytes: string,
  giveUpMs = 2_000,
): Promise<{ raw: string; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ raw, closedByServer: false });
    }, giveUpMs);
    socket.once('connect', () => socket.write(bytes, 'latin1'));
    socket.on('data', (chunk: Buffer) => (raw += chunk.toString('latin1')));
    socket.once('error', () => undefined);
    socket.once('end', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ raw, closedByServer: true });
    });
  });
}
