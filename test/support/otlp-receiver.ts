import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export carries it, flattened for assertions. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly traceState: string | undefined;
  /** The resource's attributes (service.name, service.version). */
  readonly resource: Readonly<Record<string, string | number | boolean>>;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;

export interface OtlpReceiver {
  /** The traces URL to configure as tracing.otlp.endpoint. */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  /** The request headers of every export received. */
  readonly exports: IncomingHttpHeaders[];
  /** Resolves with the spans of `traceId` once `count` of them have arrived. */
  spansOf(traceId: string, count: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
        traceState?: string;
      }[];
    }[];
  }[];
}

function attributes(list: OtlpAttribute[] = []): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list) {
    const v = value.stringValue ?? value.boolValue ?? value.doubleValue ?? value.intValue;
    if (v !== undefined) out[key] = typeof v === 'string' && 'intValue' in value ? Number(v) : v;
  }
  return out;
}

/**
 * A collector's OTLP/HTTP traces endpoint on loopback (JSON, the exporter's default
 * encoding): it answers POST /v1/traces with `status` (200: accepted; 'never': it reads the
 * export and never answers, a hung collector) and records every span it got.
 */
export async function startOtlpReceiver(status: number | 'never' = 200): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const exports: IncomingHttpHeaders[] = [];
  const waiters: (() => void)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      exports.push(req.headers);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as OtlpExport;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const resource = attributes(resourceSpans.resource?.attributes);
        for (const scope of resourceSpans.scopeSpans ?? [])
          for (const span of scope.spans ?? [])
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              attributes: attributes(span.attributes),
              statusCode: span.status?.code ?? 0,
              traceState: span.traceState === '' ? undefined : span.traceState,
              resource,
            });
      }
      if (status !== 'never')
        res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const spansOf = (traceId: string, count: number): Promise<ReceivedSpan[]> =>
    new Promise((resolve) => {
      const check = (): void => {
        const found = spans.filter((span) => span.traceId === traceId);
        if (found.length >= count) resolve(found);
        else waiters.push(check);
      };
      check();
    });
  return {
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    exports,
    spansOf,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
