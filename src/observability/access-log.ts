import { pino, type Logger } from 'pino';
import type { Identity } from '../identity/identity.js';
import type { ErrorCode } from '../errors/error-codes.js';
import type { UpstreamErrorKind } from '../errors/upstream-error-kind.js';

export interface AccessEntry {
  readonly requestId: string;
  readonly method: string;
  /** The request target as received (req.url); the line keeps its query only when asked. */
  readonly target: string;
  readonly route: string;
  readonly status: number;
  readonly durationMs: number;
  /** The address the lockout and address limits count (X-Forwarded-For per trustedProxies). */
  readonly clientAddress: string;
  readonly userAgent: string | undefined;
  /** Bytes read from the client's connection for this request: request line, headers, body. */
  readonly bytesIn: number;
  /** Bytes written to the client's connection for this response: status line, headers, body. */
  readonly bytesOut: number;
  /** The upstream's status, when its response head was passed on. */
  readonly upstreamStatus: number | undefined;
  /** From handing the request to the upstream to the end of its response (or its failure). */
  readonly upstreamMs: number | undefined;
  readonly upstreamError: UpstreamErrorKind | undefined;
  readonly authMethod: Identity['method'] | undefined;
  readonly subject: string | undefined;
  readonly key: string | undefined;
  /** Why the credentials presented were refused (the denial's reason). */
  readonly authFailure: string | undefined;
  readonly errorCode: ErrorCode | undefined;
  /** The shadow rate limit (its policy name) that would have refused this request. */
  readonly rateLimitShadow: string | undefined;
  /** The W3C trace id (32 lowercase hex digits: written as it is). */
  readonly traceId: string | undefined;
  readonly aborted: boolean;
}

export interface AccessLogOptions {
  /** `logging.query`: keep the query in `path` (off by default: queries can carry tokens). */
  readonly query: boolean;
}

/** Writes the request's line; with a cause, the warning that replaces it for a failure. */
export type AccessLog = (entry: AccessEntry, cause?: string) => void;

/** Client input is cut to these many UTF-16 units before it is written. */
export const MAX_PATH_CHARS = 1024;
export const MAX_USER_AGENT_CHARS = 256;
const MAX_ADDRESS_CHARS = 64;
/** A cause is the gateway's words about a foreign error: bounded all the same. */
const MAX_CAUSE_CHARS = 2048;

type Writable = { write(line: string): unknown };

/** DEL and the C1 controls: JSON.stringify leaves them raw (RFC 8259 §7 only requires C0). */
const C1_CONTROLS = /[\u007f-\u009f]/g;
const escapeControl = (c: string): string => `\\u00${c.charCodeAt(0).toString(16)}`;

/**
 * `value`, cut to `maxChars`, as a JSON string. Plain printable ASCII without `"` or `\` (the
 * common path and user agent) is quoted as it is; anything else goes through JSON.stringify,
 * which escapes C0 controls, quotes and backslashes and writes a lone surrogate (one left by
 * the cut, too) as a \u escape, so the line stays one line of valid JSON (RFC 8259 §7); DEL
 * and C1 controls (a Latin-1 user agent's bytes 0x80-0x9F) are escaped here, since a terminal
 * or a log viewer may act on them.
 */
export function jsonString(value: string, maxChars: number): string {
  const text = value.length > maxChars ? value.slice(0, maxChars) : value;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c)
      return JSON.stringify(text).replace(C1_CONTROLS, escapeControl);
  }
  return `"${text}"`;
}

/** The path the line shows: the query left out unless `logging.query` keeps it. */
export function logPath(target: string, query: boolean): string {
  if (query) return target;
  const mark = target.indexOf('?');
  return mark === -1 ? target : target.slice(0, mark);
}

const roundMs = (ms: number): number => Math.round(ms * 100) / 100;

/**
 * The one-line-per-request log, in the shape pino writes (level, ISO time, bindings, msg)
 * and into the same batched destination, but serialized by this function: pino's generic
 * path (field walk, redaction wrapper) costs several microseconds on every request. The
 * fields the client wrote (path, user agent) are escaped and bounded here; no header but the
 * user agent is written, so no Authorization or cookie, and no query unless configured.
 * `failures`: the `request failed` warnings instead (the same fields and a cause), written the
 * same way so that their path and user agent are escaped alike. Undefined when the level is off.
 */
export function createAccessLog(
  logger: Logger,
  options: AccessLogOptions,
  failures = false,
): AccessLog | undefined {
  const level = failures ? 'warn' : 'info';
  if (!logger.isLevelEnabled(level)) return undefined;
  const msg = failures ? 'request failed' : 'request';
  const stream = (logger as unknown as Record<symbol, Writable | undefined>)[
    pino.symbols.streamSym
  ];
  if (stream === undefined)
    return (entry, cause) => logger[level]({ ...toLogFields(entry, options), cause }, msg);
  const head = `{"level":${failures ? 40 : 30},"time":"`;
  const tail = `,"msg":"${msg}"}\n`;
  const bindings = Object.entries(logger.bindings())
    .map(([name, value]) => `,${JSON.stringify(name)}:${JSON.stringify(value)}`)
    .join('');
  // toISOString() costs about as much as the rest of the line: reuse it within a millisecond.
  let lastMs = 0;
  let lastIso = '';
  return (entry, cause) => {
    const nowMs = Date.now();
    if (nowMs !== lastMs) {
      lastMs = nowMs;
      lastIso = new Date(nowMs).toISOString();
    }
    // Field by field, no intermediate object: the same fields and order as toLogFields().
    let line = `${head}${lastIso}"${bindings},"request_id":${JSON.stringify(entry.requestId)}`;
    line += `,"method":${JSON.stringify(entry.method)}`;
    line += `,"path":${jsonString(logPath(entry.target, options.query), MAX_PATH_CHARS)}`;
    line += `,"route":${JSON.stringify(entry.route)}`;
    line += `,"status":${entry.status},"duration_ms":${roundMs(entry.durationMs)}`;
    line += `,"client_address":${jsonString(entry.clientAddress, MAX_ADDRESS_CHARS)}`;
    if (entry.userAgent !== undefined)
      line += `,"user_agent":${jsonString(entry.userAgent, MAX_USER_AGENT_CHARS)}`;
    line += `,"bytes_in":${entry.bytesIn},"bytes_out":${entry.bytesOut}`;
    if (entry.upstreamStatus !== undefined) line += `,"upstream_status":${entry.upstreamStatus}`;
    if (entry.upstreamMs !== undefined) line += `,"upstream_ms":${roundMs(entry.upstreamMs)}`;
    if (entry.upstreamError !== undefined) line += `,"upstream_error":"${entry.upstreamError}"`;
    if (entry.authMethod !== undefined) line += `,"auth_method":"${entry.authMethod}"`;
    if (entry.subject !== undefined) line += `,"subject":${JSON.stringify(entry.subject)}`;
    if (entry.key !== undefined) line += `,"key":${JSON.stringify(entry.key)}`;
    if (entry.authFailure !== undefined) line += `,"auth_failure":"${entry.authFailure}"`;
    if (entry.errorCode !== undefined) line += `,"error_code":"${entry.errorCode}"`;
    if (entry.rateLimitShadow !== undefined)
      line += `,"rate_limit_shadow":"${entry.rateLimitShadow}"`;
    if (entry.traceId !== undefined) line += `,"trace_id":"${entry.traceId}"`;
    if (entry.aborted) line += ',"aborted":true';
    if (cause !== undefined) line += `,"cause":${jsonString(cause, MAX_CAUSE_CHARS)}`;
    stream.write(line + tail);
  };
}

/** The same fields as an object, for pino's own path (the 5xx warning, a logger without stream). */
export function toLogFields(
  entry: AccessEntry,
  options: AccessLogOptions,
): Record<string, string | number | boolean | undefined> {
  const cut = (value: string, maxChars: number): string =>
    value.length > maxChars ? value.slice(0, maxChars) : value;
  return {
    request_id: entry.requestId,
    method: entry.method,
    path: cut(logPath(entry.target, options.query), MAX_PATH_CHARS),
    route: entry.route,
    status: entry.status,
    duration_ms: roundMs(entry.durationMs),
    client_address: cut(entry.clientAddress, MAX_ADDRESS_CHARS),
    user_agent:
      entry.userAgent === undefined ? undefined : cut(entry.userAgent, MAX_USER_AGENT_CHARS),
    bytes_in: entry.bytesIn,
    bytes_out: entry.bytesOut,
    upstream_status: entry.upstreamStatus,
    upstream_ms: entry.upstreamMs === undefined ? undefined : roundMs(entry.upstreamMs),
    upstream_error: entry.upstreamError,
    auth_method: entry.authMethod,
    subject: entry.subject,
    key: entry.key,
    auth_failure: entry.authFailure,
    error_code: entry.errorCode,
    rate_limit_shadow: entry.rateLimitShadow,
    trace_id: entry.traceId,
    aborted: entry.aborted ? true : undefined,
  };
}
