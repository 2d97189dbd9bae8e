import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import type { GatewayError } from '../../../src/errors/gateway-error.js';
import type { Exchange } from '../../../src/proxy/forwarder.js';
import { NO_BODY } from '../../../src/proxy/request-body.js';
import { UndiciExchange } from '../../../src/proxy/undici-forwarder.js';

/** A client response whose socket is full until `drain`, recording what it was asked. */
function fullResponse() {
  const res = Object.assign(new EventEmitter(), {
    writes: 0,
    headersSent: false,
    write: () => {
      res.writes += 1;
      return false;
    },
  });
  return res;
}

function controller() {
  const calls: string[] = [];
  const c: Pick<Dispatcher.DispatchController, 'pause' | 'resume' | 'abort'> = {
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
    abort: () => calls.push('abort'),
  };
  return { calls, c: c as Dispatcher.DispatchController };
}

const exchange = (errors: GatewayError[] = []): Exchange => ({
  path: '/',
  headers: {},
  body: NO_BODY,
  requestId: 'r',
  responseFields: [],
  onError: (error: GatewayError) => errors.push(error),
  upstreamStartedAt: performance.now(),
  upstreamStatus: undefined,
  upstreamMs: undefined,
  upstreamError: undefined,
});

/** A handler whose upstream errors are counted in `counted`, on the exchange `seen`. */
function counting() {
  const counted: string[] = [];
  const seen = exchange();
  const handler = new UndiciExchange({} as ServerResponse, seen, {
    observe: () => undefined,
    countError: (kind) => counted.push(kind),
  });
  return { counted, seen, handler };
}

describe('UndiciExchange', () => {
  it('pauses the upstream while the client cannot take more, and resumes on drain', () => {
    const res = fullResponse();
    const { calls, c } = controller();
    const handler = new UndiciExchange(res as unknown as ServerResponse, exchange());
    handler.onResponseData(c, Buffer.from('chunk'));
    expect(calls).toEqual(['pause']);
    res.emit('drain');
    expect([calls, res.writes]).toEqual([['pause', 'resume'], 1]);
  });

  it('aborts the upstream exchange when the client goes away, and reports no error for it', () => {
    const errors: GatewayError[] = [];
    const { calls, c } = controller();
    const handler = new UndiciExchange({} as ServerResponse, exchange(errors));
    handler.onRequestStart(c);
    handler.clientClosed();
    handler.onResponseError(c, new Error('aborted'));
    expect([calls, errors]).toEqual([['abort'], []]);
  });

  it.each([
    ['UND_ERR_HEADERS_TIMEOUT', 'upstream_timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'upstream_timeout'],
    ['UND_ERR_CONNECT_TIMEOUT', 'upstream_timeout'],
    ['ECONNREFUSED', 'upstream_unavailable'],
    ['UND_ERR_SOCKET', 'upstream_unavailable'],
  ])('maps %s to %s', (code, expected) => {
    const errors: GatewayError[] = [];
    const { c } = controller();
    const handler = new UndiciExchange({} as ServerResponse, exchange(errors));
    handler.onResponseError(c, Object.assign(new Error(code), { code }));
    expect(errors.map((e) => e.code)).toEqual([expected]);
  });

  it.each([
    ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_timeout'],
    ['ECONNREFUSED', 'connect_refused'],
    ['UND_ERR_SOCKET', 'reset'],
  ] as const)('records %s on the exchange and counts it as %s', (code, kind) => {
    const { c } = controller();
    const { seen, counted, handler } = counting();
    handler.onResponseError(c, Object.assign(new Error(code), { code }));
    expect([seen.upstreamError, counted, typeof seen.upstreamMs]).toEqual([kind, [kind], 'number']);
  });

  it('counts no upstream error when the client went away', () => {
    const { c } = controller();
    const { seen, counted, handler } = counting();
    handler.onRequestStart(c);
    handler.clientClosed();
    handler.onResponseError(c, Object.assign(new Error('reset'), { code: 'UND_ERR_SOCKET' }));
    expect([seen.upstreamError, counted]).toEqual([undefined, []]);
  });
});
