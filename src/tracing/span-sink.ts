/**
 * Where a sampled request's spans go, as the request handler sees it: the OTLP export
 * (otlp-spans.ts) implements it, loaded only when `tracing.otlp` is set. No type of the
 * OpenTelemetry SDK appears here, so nothing that imports this module loads it.
 */

/** What the SERVER span starts from: the incoming parent, when the trace is continued. */
export interface SpanParent {
  readonly traceId: string;
  readonly parentId: string | undefined;
  readonly flags: number;
  readonly state: string | undefined;
}

export interface UpstreamCall {
  readonly method: string;
  /** The upstream's name in the configuration. */
  readonly upstream: string;
  readonly origin: URL;
  /** The outgoing path, query included: cut before it reaches a span. */
  readonly path: string;
}

export interface RequestEnd {
  readonly route: string;
  readonly status: number;
  /** The request target as received, query included: cut before it reaches a span. */
  readonly target: string;
  readonly scheme: 'http' | 'https';
  /** The gateway's error code when it answered with an error envelope. */
  readonly errorCode: string | undefined;
  /** The response did not finish (the client went away, or the upstream cut it). */
  readonly aborted: boolean;
}

/** One sampled request's spans: the request (SERVER), authentication, the upstream call. */
export interface RequestSpans {
  /** The trace's id: the SDK's own when the gateway started the trace. */
  readonly traceId: string;
  beginAuth(): void;
  /** `denied`: the reason the credentials were refused; otherwise the identity's facts. */
  endAuth(
    method: string | undefined,
    subject: string | undefined,
    key: string | undefined,
    denied: string | undefined,
  ): void;
  /** Starts the CLIENT span; returns its span id, the parent id the upstream receives. */
  beginUpstream(call: UpstreamCall): string;
  /** Ends every span still open, the request's last. */
  end(facts: RequestEnd): void;
}

export interface SpanSink {
  begin(parent: SpanParent, method: string): RequestSpans;
}

/** The export of one process: its sink, and the flush that runs once requests have drained. */
export interface SpanExport {
  readonly sink: SpanSink;
  /**
   * Sends the spans still queued and stops the exporter, within `withinMs` (what the drain
   * left); never rejects: spans that cannot be sent are dropped with a warning.
   */
  shutdown(withinMs: number): Promise<void>;
}
