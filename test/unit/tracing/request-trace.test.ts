import { describe, expect, it } from 'vitest';
import { beginSpans, beginTrace, type TraceSettings } from '../../../src/tracing/request-trace.js';
import type { RequestSpans, SpanParent, SpanSink } from '../../../src/tracing/span-sink.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;
const HEX32 = /^[0-9a-f]{32}$/;

const settings = (more: Partial<TraceSettings> = {}): TraceSettings => ({
  propagate: true,
  sampleRatio: 1,
  spans: undefined,
  ...more,
});

/** A sink that records what it was asked, its spans' trace id the one given. */
function recordingSink(traceId: string): { sink: SpanSink; begun: SpanParent[] } {
  const begun: SpanParent[] = [];
  const spans = { traceId } as RequestSpans;
  return {
    begun,
    sink: {
      begin: (parent) => {
        begun.push({ ...parent });
        return spans;
      },
    },
  };
}

describe('beginTrace', () => {
  it('continues a valid traceparent with its well-formed tracestate', () => {
    expect(beginTrace(settings(), TRACEPARENT, 'congo=t61rcWkgMzE')).toEqual({
      traceId: TRACE_ID,
      parentId: PARENT_ID,
      flags: 1,
      state: 'congo=t61rcWkgMzE',
    });
  });

  it('reads repeated tracestate headers as one list', () => {
    expect(beginTrace(settings(), TRACEPARENT, ['a=1', 'b=2']).state).toBe('a=1,b=2');
  });

  it('starts a sampled trace with the random flag when there is no valid traceparent, and ignores its tracestate', () => {
    for (const traceparent of [undefined, 'garbage', [TRACEPARENT, TRACEPARENT]]) {
      const trace = beginTrace(settings(), traceparent, 'congo=t61rcWkgMzE');
      expect(trace.traceId).toMatch(HEX32);
      expect(trace.traceId).not.toBe(TRACE_ID);
      expect([trace.parentId, trace.flags, trace.state]).toEqual([undefined, 3, undefined]);
    }
  });

  it('ignores the client’s headers when propagation is off', () => {
    const trace = beginTrace(settings({ propagate: false }), TRACEPARENT, 'congo=t61rcWkgMzE');
    expect(trace.traceId).not.toBe(TRACE_ID);
    expect([trace.parentId, trace.state]).toEqual([undefined, undefined]);
  });

  it('leaves the traces it starts unsampled at sampleRatio 0, and keeps a client’s sampled flag', () => {
    expect(beginTrace(settings({ sampleRatio: 0 }), undefined, undefined).flags).toBe(2);
    expect(beginTrace(settings({ sampleRatio: 0 }), TRACEPARENT, undefined).flags).toBe(1);
  });

  it('starts a new trace id each time', () => {
    const ids = new Set(
      Array.from({ length: 1000 }, () => beginTrace(settings(), undefined, undefined).traceId),
    );
    expect(ids.size).toBe(1000);
  });
});

describe('beginSpans', () => {
  it('makes no spans without an export, nor for an unsampled trace', () => {
    const { sink, begun } = recordingSink(TRACE_ID);
    expect(beginSpans(settings(), beginTrace(settings(), TRACEPARENT, undefined), 'GET')).toBe(
      undefined,
    );
    const unsampled = beginTrace(settings(), `00-${TRACE_ID}-${PARENT_ID}-00`, undefined);
    expect(beginSpans(settings({ spans: sink }), unsampled, 'GET')).toBeUndefined();
    expect(begun).toEqual([]);
  });

  it('gives a started trace the id its spans carry', () => {
    const sdkTraceId = 'aaaabbbbccccddddeeeeffff00001111';
    const { sink, begun } = recordingSink(sdkTraceId);
    const trace = beginTrace(settings(), undefined, undefined);
    expect(beginSpans(settings({ spans: sink }), trace, 'GET')?.traceId).toBe(sdkTraceId);
    expect(trace.traceId).toBe(sdkTraceId);
    expect(begun[0]?.parentId).toBeUndefined();
  });
});
