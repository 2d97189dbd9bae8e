import { pino, type Logger } from 'pino';
import type { Identity } from '../identity/identity.js';
import type { ErrorCode } from '../errors/error-codes.js';

export interface AccessEntry {
  readonly requestId: string;
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly durationMs: number;
  readonly authMethod: Identity['method'] | undefined;
  readonly subject: string | undefined;
  readonly key: string | undefined;
  readonly errorCode: ErrorCode | undefined;
  readonly aborted: boolean;
  readonly traceId: string | undefined;
}

export type AccessLog = (entry: AccessEntry) => void;

type Writable = { write(line: string): unknown };

/**
 * The one-line-per-request log, in the shape pino writes (level, ISO time, bindings, msg)
 * and into the same batched destination, but serialized by this function: pino's generic
 * path (field walk, redaction wrapper) costs several microseconds on every request, and
 * these lines carry only fields the gateway produced itself (never a header or a secret).
 * Undefined when info lines are off.
 */
export function createAccessLog(logger: Logger): AccessLog | undefined {
  if (!logger.isLevelEnabled('info')) return undefined;
  const stream = (logger as unknown as Record<symbol, Writable | undefined>)[
    pino.symbols.streamSym
  ];
  if (stream === undefined) return (entry) => logger.info(toLogFields(entry), 'request');
  const bindings = Object.entries(logger.bindings())
    .map(([name, value]) => `,${JSON.stringify(name)}:${JSON.stringify(value)}`)
    .join('');
  // toISOString() costs about as much as the rest of the line: reuse it within a millisecond.
  let lastMs = 0;
  let lastIso = '';
  return (entry) => {
    const nowMs = Date.now();
    if (nowMs !== lastMs) {
      lastMs = nowMs;
      lastIso = new Date(nowMs).toISOString();
    }
    // Field by field, no intermediate object: the same fields and order as toLogFields().
    let line = `{"level":30,"time":"${lastIso}"${bindings},"request_id":${JSON.stringify(entry.requestId)}`;
    line += `,"method":${JSON.stringify(entry.method)},"route":${JSON.stringify(entry.route)}`;
    line += `,"status":${entry.status},"duration_ms":${Math.round(entry.durationMs * 100) / 100}`;
    if (entry.authMethod !== undefined) line += `,"auth_method":"${entry.authMethod}"`;
    if (entry.subject !== undefined) line += `,"subject":${JSON.stringify(entry.subject)}`;
    if (entry.key !== undefined) line += `,"key":${JSON.stringify(entry.key)}`;
    if (entry.errorCode !== undefined) line += `,"error_code":"${entry.errorCode}"`;
    if (entry.aborted) line += ',"aborted":true';
    if (entry.traceId !== undefined) line += `,"trace_id":"${entry.traceId}"`;
    stream.write(`${line},"msg":"request"}\n`);
  };
}

export function toLogFields(
  entry: AccessEntry,
): Record<string, string | number | boolean | undefined> {
  return {
    request_id: entry.requestId,
    method: entry.method,
    route: entry.route,
    status: entry.status,
    duration_ms: Math.round(entry.durationMs * 100) / 100,
    auth_method: entry.authMethod,
    subject: entry.subject,
    key: entry.key,
    error_code: entry.errorCode,
    aborted: entry.aborted ? true : undefined,
    trace_id: entry.traceId,
  };
}
