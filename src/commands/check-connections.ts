import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { GatewayConfig } from '../config/config-schema.js';
import { redisAddress, RedisUnavailableError } from '../backends/redis/client.js';
import { GatewayError } from '../errors/gateway-error.js';
import {
  readUpstreamTls,
  TlsFileError,
  type UpstreamTlsFiles,
  type UpstreamTlsOptions,
} from '../tls/upstream-tls.js';
import { openStore } from './admin-commands.js';

/** What one dependency said: a line for the operator, and whether it answered. */
export interface ConnectionCheck {
  readonly answered: boolean;
  readonly line: string;
}

/**
 * `check --connect`: tries the credential store (Redis) and every upstream at once, and says
 * what answered, one line each. An upstream answers with any HTTP response to `GET /` on its
 * origin (a 404 is an answer: the gateway could reach it).
 */
export async function checkConnections(config: GatewayConfig): Promise<ConnectionCheck[]> {
  return Promise.all([
    tryStore(config),
    ...Object.entries(config.upstreams).map(([name, upstream]) =>
      upstream.url === 'builtin'
        ? Promise.resolve(answered(`upstream ${name}: builtin, runs inside the gateway`))
        : tryUpstream(name, new URL(upstream.url), upstream, upstream.tls),
    ),
  ]);
}

const answered = (text: string): ConnectionCheck => ({ answered: true, line: `ok    ${text}` });
const silent = (text: string): ConnectionCheck => ({ answered: false, line: `FAIL  ${text}` });

async function tryStore(config: GatewayConfig): Promise<ConnectionCheck> {
  if (config.credentials.store !== 'redis')
    return answered('credentials: memory store, inside the gateway');
  const address = redisAddress(config.credentials.redis);
  const store = openStore(config);
  const started = performance.now();
  try {
    await store.ping();
    return answered(`Redis ${address}: answered PING in ${elapsedMs(started)} ms`);
  } catch (error) {
    const cause = error instanceof GatewayError ? error.cause : error;
    const why = cause instanceof RedisUnavailableError ? cause.why : String(cause);
    return silent(`Redis ${address}: ${why}`);
  } finally {
    await store.close();
  }
}

async function tryUpstream(
  name: string,
  url: URL,
  limits: { connectTimeoutMs: number; timeoutMs: number },
  tlsFiles: UpstreamTlsFiles | undefined,
): Promise<ConnectionCheck> {
  // The origin only: a URL's user and password are not for a terminal.
  const origin = url.origin;
  // The same CA, name and client certificate as the gateway's own connections.
  let tls: UpstreamTlsOptions = {};
  try {
    if (tlsFiles !== undefined) tls = await readUpstreamTls(tlsFiles);
  } catch (error) {
    const why = error instanceof TlsFileError ? `tls.${error.message}` : String(error);
    return silent(`upstream ${name} ${origin}: ${why}`);
  }
  const started = performance.now();
  return new Promise((resolve) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req: ClientRequest = send(`${origin}/`, {
      ...tls,
      method: 'GET',
      agent: false,
      headers: { 'user-agent': 'accounts-gateway check --connect' },
    });
    let timer = setTimeout(
      () => req.destroy(new Error(`not connected within ${limits.connectTimeoutMs} ms`)),
      limits.connectTimeoutMs,
    );
    req.once('socket', (socket) => {
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        timer = setTimeout(
          () => req.destroy(new Error(`no answer within ${limits.timeoutMs} ms`)),
          limits.timeoutMs,
        );
      });
    });
    req.once('response', (res) => {
      clearTimeout(timer);
      res.destroy();
      resolve(
        answered(
          `upstream ${name} ${origin}: answered HTTP ${res.statusCode ?? 0} in ${elapsedMs(started)} ms`,
        ),
      );
    });
    req.once('error', (error) => {
      clearTimeout(timer);
      resolve(silent(`upstream ${name} ${origin}: ${failureReason(name, error)}`));
    });
    req.end();
  });
}

/** OpenSSL's codes for a certificate that chains to no CA the client trusts. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
]);

/**
 * One line (OpenSSL's messages end in a newline). For a certificate chaining to no trusted
 * CA, Node hints "try running Node.js with --use-system-ca": the gateway trusts what its
 * configuration names, so the line names that setting instead.
 */
function failureReason(name: string, error: NodeJS.ErrnoException): string {
  const line = error.message.replace(/\s+/g, ' ').trim();
  if (error.code === undefined || !UNTRUSTED.has(error.code)) return line;
  const words = line.replace(/;? ?if the root CA is installed locally,.*$/, '');
  return `${words} (name the CA it chains to in upstreams.${name}.tls.caFile)`;
}

function elapsedMs(started: number): number {
  return Math.round(performance.now() - started);
}
