import { RANDOM, SAMPLED, parseTraceparent, parseTracestate } from './trace-context.js';
import { newTraceId } from './trace-ids.js';
import type { RequestSpans, SpanParent, SpanSink } from './span-sink.js';

/** The tracing configuration one request chain applies (see config `tracing`). */
export interface TraceSettings {
  /** Continue a valid incoming traceparent; false: every request starts its own trace. */
  readonly propagate: boolean;
  /** The share of the traces the gateway starts that are sampled (0 to 1). */
  readonly sampleRatio: number;
  /** Present when spans are exported (`tracing.otlp`). */
  readonly spans: SpanSink | undefined;
}

/** The request's place in a trace, as the gateway carries it to the upstream and the log. */
export interface RequestTrace extends SpanParent {
  traceId: string;
}

type HeaderValue = string | string[] | undefined;

/**
 * The incoming trace context continued (a valid traceparent, with its tracestate when that
 * is well formed too), or a new trace: a random id, sampled by `sampleRatio`, with level 2's
 * random flag since every digit of the id is random. No allocation beyond the result.
 */
export function beginTrace(
  settings: TraceSettings,
  traceparent: HeaderValue,
  tracestate: HeaderValue,
): RequestTrace {
  if (settings.propagate && typeof traceparent === 'string') {
    const parent = parseTraceparent(traceparent);
    if (parent !== undefined)
      return {
        traceId: parent.traceId,
        parentId: parent.parentId,
        flags: parent.flags,
        state: parseTracestate(Array.isArray(tracestate) ? tracestate.join(',') : tracestate),
      };
  }
  const sampled = settings.sampleRatio >= 1 || Math.random() < settings.sampleRatio;
  return {
    traceId: newTraceId(),
    parentId: undefined,
    flags: sampled ? SAMPLED | RANDOM : RANDOM,
    state: undefined,
  };
}

/**
 * The request's spans when they are exported and the trace is sampled; undefined otherwise,
 * so an unsampled request makes no span object. A trace the gateway started takes the
 * SDK's trace id, the one its spans carry.
 */
export function beginSpans(
  settings: TraceSettings,
  trace: RequestTrace,
  method: string,
): RequestSpans | undefined {
  if (settings.spans === undefined || (trace.flags & SAMPLED) === 0) return undefined;
  const spans = settings.spans.begin(trace, method);
  trace.traceId = spans.traceId;
  return spans;
}
