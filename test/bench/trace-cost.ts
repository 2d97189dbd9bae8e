// Nanoseconds per request of the trace context while spans are not exported, in process, on
// the built gateway's own functions: what the request handler runs for every request (read
// the traceparent and tracestate, or start a trace) and for every forwarded one (a span id
// for the upstream call, the traceparent it receives). Each case runs in batches of
// ITERATIONS until TIME_BOUND_MS has passed (at least MIN_BATCHES); the median batch counts.
// Usage (sections.ts does this): node --import ./resolve-hook.ts trace-cost.ts [iterations]
import { beginTrace, type TraceSettings } from '../../src/tracing/request-trace.js';
import { formatTraceparent } from '../../src/tracing/trace-context.js';
import { newSpanId } from '../../src/tracing/trace-ids.js';
import { median } from '../support/median.js';

const ITERATIONS = Number(process.argv[2] ?? 1_000_000);
const MIN_BATCHES = 3;
const TIME_BOUND_MS = 1500;

const settings: TraceSettings = { propagate: true, sampleRatio: 1, spans: undefined };
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TRACESTATE = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';

/** One request's trace work; the returned length keeps the JIT from dropping it. */
function perRequest(traceparent: string | undefined, tracestate: string | undefined): number {
  const trace = beginTrace(settings, traceparent, tracestate);
  return formatTraceparent(trace.traceId, newSpanId(), trace.flags).length;
}

function nsPerRequest(traceparent: string | undefined, tracestate: string | undefined): number {
  const batches: number[] = [];
  const deadline = performance.now() + TIME_BOUND_MS;
  let sink = 0;
  while (batches.length < MIN_BATCHES || performance.now() < deadline) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i += 1) sink += perRequest(traceparent, tracestate);
    batches.push(Number(process.hrtime.bigint() - start) / ITERATIONS);
    if (batches.length >= MIN_BATCHES && performance.now() >= deadline) break;
  }
  if (sink === 0) throw new Error('nothing measured');
  return median(batches);
}

process.stdout.write(
  `${JSON.stringify({
    iterations: ITERATIONS,
    noHeaderNs: nsPerRequest(undefined, undefined),
    traceparentNs: nsPerRequest(TRACEPARENT, undefined),
    withTracestateNs: nsPerRequest(TRACEPARENT, TRACESTATE),
  })}\n`,
);
