import { pino, type Logger } from 'pino';

export interface AccessEntry {
  readonly requestId: string;
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly durationMs: number;
  readonly authMethod: string | undefined;
  readonly subject: string | undefined;
  readonly key: string | undefined;
  readonly errorCode: string | undefined;
  readonly aborted: boolean;
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
    let line = `{"level":30,"time":"${lastIso}"${bindings}`;
    for (const [name, value] of Object.entries(toLogFields(entry))) {
      if (value !== undefined)
        line += `,"${name}":${typeof value === 'string' ? JSON.stringify(value) : String(value)}`;
    }
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
  };
}
