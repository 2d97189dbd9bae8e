// The one module that imports the OpenTelemetry SDK; it is itself imported by `import()`
// (load-span-export.ts), and only when `tracing.otlp` is set.

import {
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  createTraceState,
  diag,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { diagnosticCause } from './diagnostic-cause.js';
import type {
  RequestEnd,
  RequestSpans,
  SpanExport,
  SpanParent,
  UpstreamCall,
} from './span-sink.js';

export interface OtlpSettings {
  /** The collector's traces URL (OTLP/HTTP JSON), `/v1/traces` included. */
  readonly endpoint: string;
  /** Sent with every export (a collector's API token): never logged. */
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly batchDelayMs: number;
  readonly serviceName: string;
  readonly serviceVersion: string;
  /** Paths (client input) are cut to this many UTF-16 units: the access line's bound. */
  readonly maxPathChars: number;
  /** The SDK's own warnings and errors (a collector refusing an export): the caller paces them. */
  readonly warn: (cause: string) => void;
  /** The spans lost at shutdown: the process's last word, never held back. */
  readonly warnAtShutdown: (cause: string) => void;
}

/** One provider per process: a worker exports its own spans. */
export function createOtlpSpans(settings: OtlpSettings): SpanExport {
  reportDiagnostics(settings.warn);
  const exporter = new OTLPTraceExporter({
    url: settings.endpoint,
    headers: { ...settings.headers },
    timeoutMillis: settings.timeoutMs,
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': settings.serviceName,
      'service.version': settings.serviceVersion,
      // Each worker exports its own spans: the pid tells them apart.
      'process.pid': process.pid,
    }),
    // The gateway decided sampling already (the incoming flag, or tracing.sampleRatio):
    // it asks for spans only on sampled requests.
    sampler: new AlwaysOnSampler(),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        exportTimeoutMillis: settings.timeoutMs,
        scheduledDelayMillis: settings.batchDelayMs,
      }),
    ],
  });
  const tracer = provider.getTracer('accounts-gateway', settings.serviceVersion);
  return {
    sink: {
      begin: (parent, method) =>
        new OtlpRequestSpans(tracer, parent, method, settings.maxPathChars),
    },
    shutdown: (withinMs) => flushAtShutdown(provider, settings, withinMs),
  };
}

/**
 * The last spans, sent within what the drain left (and one export timeout at most): a
 * collector that is down or does not answer costs its spans, never the drain's exit code
 * nor its bound. Each outcome but success is one warning, said plainly.
 */
async function flushAtShutdown(
  provider: TracerProvider,
  settings: OtlpSettings,
  withinMs: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const outOfTime = new Promise<string>((resolve) => {
    timer = setTimeout(
      () => resolve('the drain ended before the collector answered'),
      Math.max(0, Math.min(withinMs, settings.timeoutMs)),
    );
    timer.unref();
  });
  const flushed = provider.shutdown().then(
    () => undefined,
    (error: unknown) => diagnosticCause(error),
  );
  const problem = await Promise.race([flushed, outOfTime]);
  clearTimeout(timer);
  if (problem !== undefined) settings.warnAtShutdown(`spans not sent at shutdown: ${problem}`);
}

class OtlpRequestSpans implements RequestSpans {
  readonly traceId: string;
  private readonly server: Span;
  private auth: Span | undefined = undefined;
  private upstream: Span | undefined = undefined;

  constructor(
    private readonly tracer: Tracer,
    parent: SpanParent,
    private readonly method: string,
    private readonly maxPathChars: number,
  ) {
    const context =
      parent.parentId === undefined
        ? ROOT_CONTEXT
        : trace.setSpanContext(ROOT_CONTEXT, {
            traceId: parent.traceId,
            spanId: parent.parentId,
            traceFlags: parent.flags,
            isRemote: true,
            ...(parent.state === undefined ? {} : { traceState: createTraceState(parent.state) }),
          });
    this.server = tracer.startSpan(
      method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
      context,
    );
    this.traceId = this.server.spanContext().traceId;
  }

  /** The path alone (a query may carry anything, secrets included), cut as the access line's. */
  private pathOf(target: string): string {
    const query = target.indexOf('?');
    const path = query === -1 ? target : target.slice(0, query);
    return path.length > this.maxPathChars ? path.slice(0, this.maxPathChars) : path;
  }

  private child(name: string, kind: SpanKind): Span {
    return this.tracer.startSpan(name, { kind }, trace.setSpan(ROOT_CONTEXT, this.server));
  }

  beginAuth(): void {
    this.auth = this.child('authenticate', SpanKind.INTERNAL);
  }

  endAuth(
    method: string | undefined,
    subject: string | undefined,
    key: string | undefined,
    denied: string | undefined,
  ): void {
    const span = this.auth;
    if (span === undefined) return;
    this.auth = undefined;
    // The scheme, the subject and the public key id (all three in the access line too);
    // never the Authorization value, a secret or a token.
    if (method !== undefined) span.setAttribute('gateway.auth.method', method);
    if (subject !== undefined) span.setAttribute('enduser.id', subject);
    if (key !== undefined) span.setAttribute('gateway.auth.key_id', key);
    span.setAttribute('gateway.auth.outcome', denied === undefined ? 'allowed' : 'denied');
    if (denied !== undefined) span.setAttribute('error.type', denied);
    span.end();
  }

  beginUpstream(call: UpstreamCall): string {
    const span = this.child(this.method, SpanKind.CLIENT);
    span.setAttributes({
      'http.request.method': call.method,
      'server.address': call.origin.hostname,
      'server.port': portOf(call.origin),
      'url.path': this.pathOf(call.path),
      'gateway.upstream': call.upstream,
    });
    this.upstream = span;
    return span.spanContext().spanId;
  }

  end(facts: RequestEnd): void {
    const { server, auth, upstream } = this;
    // Authentication that never settled: its dependency failed (the error says which).
    if (auth !== undefined) {
      auth.setAttribute('gateway.auth.outcome', 'failed');
      auth.setStatus({ code: SpanStatusCode.ERROR });
      auth.end();
    }
    const errorType = facts.errorCode ?? (facts.aborted ? 'aborted' : undefined);
    if (upstream !== undefined) {
      // 502/504 are the gateway's answers for an upstream that failed: no upstream status.
      if (facts.errorCode === undefined)
        upstream.setAttribute('http.response.status_code', facts.status);
      if (errorType !== undefined || facts.status >= 400) {
        upstream.setAttribute('error.type', errorType ?? String(facts.status));
        upstream.setStatus({ code: SpanStatusCode.ERROR });
      }
      upstream.end();
    }
    // OpenTelemetry HTTP semantic conventions: a server span is named `{method} {route}`;
    // only a 5xx (or a cut response) marks it an error, a 4xx is the client's.
    if (facts.route !== 'none') {
      server.updateName(`${this.method} ${facts.route}`);
      server.setAttribute('http.route', facts.route);
    }
    server.setAttributes({
      'url.path': this.pathOf(facts.target),
      'url.scheme': facts.scheme,
      'http.response.status_code': facts.status,
    });
    if (errorType !== undefined) server.setAttribute('error.type', errorType);
    if (facts.status >= 500 || facts.aborted) server.setStatus({ code: SpanStatusCode.ERROR });
    server.end();
  }
}

/**
 * The SDK reports a failed export through its global diagnostics, silent unless a logger is
 * set: its errors and warnings go to `warn` as one-line causes.
 */
export function reportDiagnostics(warn: OtlpSettings['warn']): void {
  const report = (message: unknown): void => warn(diagnosticCause(message));
  const ignore = (): void => undefined;
  diag.setLogger(
    { error: report, warn: report, info: ignore, debug: ignore, verbose: ignore },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
}

function portOf(origin: URL): number {
  if (origin.port !== '') return Number(origin.port);
  return origin.protocol === 'https:' ? 443 : 80;
}
