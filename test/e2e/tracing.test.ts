import { writeFileSync } from 'node:fs';
import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from '../support/gateway-yaml.js';
import { moduleProbe, type ModuleProbe } from '../support/module-probe.js';
import {
  SPAN_KIND,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../support/otlp-receiver.js';
import { MAX_PATH_CHARS } from '../../src/observability/access-log.js';
import { freePort } from '../support/redis-server.js';
import { seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';

// W3C trace context through the gateway and its spans over OTLP (issue 16 point 3): what the
// upstream receives, what the access line says, what a collector started here receives, and
// that a gateway without tracing.otlp never loads the OpenTelemetry SDK.

const KEY = 'ak_tracing_pair_01';
const SECRET = 'tracing-secret-0123456789abcdefghijklmnop';
const AUTHORIZATION = basicHeader(KEY, SECRET);
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_PARENT = '00f067aa0ba902b7';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

let upstream: EchoUpstream;
let receiver: OtlpReceiver;
/** A collector a gateway without tracing.otlp is pointed at through the SDK's environment. */
let unusedReceiver: OtlpReceiver;
let exporting: GatewayProcess;
let exportingProbe: ModuleProbe;
let silent: GatewayProcess;
let silentProbe: ModuleProbe;
let secretHash: string;

function yaml(config: GatewayConfigInput, secretHash: string): string {
  return gatewayYaml({
    upstreamUrl: upstream.url,
    config: {
      admin: { enabled: false },
      credentials: { seed: { keys: [{ key: KEY, secretHash, subject: 'alice' }] } },
      keys: { lastUsedIntervalSec: 0 },
      logging: { level: 'info', requests: true },
      ...config,
    },
  });
}

beforeAll(async () => {
  [upstream, receiver, unusedReceiver] = await Promise.all([
    startEchoUpstream(),
    startOtlpReceiver(),
    startOtlpReceiver(),
  ]);
  secretHash = await bcrypt.hash(SECRET, TEST_BCRYPT_COST);
  exportingProbe = moduleProbe('/@opentelemetry/');
  silentProbe = moduleProbe('/@opentelemetry/');
  [exporting, silent] = await Promise.all([
    startGateway(
      yaml(
        {
          tracing: {
            serviceName: 'gateway-under-test',
            otlp: {
              endpoint: receiver.endpoint,
              headers: { 'x-collector-token': 'collector-token-1' },
              batchDelayMs: 50,
            },
          },
        },
        secretHash,
      ),
      [],
      exportingProbe.env,
    ),
    startGateway(yaml({}, secretHash), [], {
      ...silentProbe.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: unusedReceiver.endpoint.replace('/v1/traces', ''),
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: unusedReceiver.endpoint,
    }),
  ]);
});

afterAll(async () => {
  await Promise.all([exporting?.stop(), silent?.stop()]);
  await Promise.all([upstream?.close(), receiver?.close(), unusedReceiver?.close()]);
});

/** Sends a request and returns what the upstream received for it (undefined: nothing). */
async function send(
  gateway: GatewayProcess,
  headers: Record<string, string>,
  path = '/accounts?limit=5',
): Promise<{
  status: number;
  requestId: string;
  upstreamHeaders: Record<string, unknown> | undefined;
}> {
  const before = upstream.received.length;
  const response = await fetch(`${gateway.url}${path}`, { headers });
  await response.arrayBuffer();
  const requestId = response.headers.get('x-request-id') ?? '';
  const got = upstream.received.slice(before).find((r) => r.headers['x-request-id'] === requestId);
  return { status: response.status, requestId, upstreamHeaders: got?.headers };
}

function sentTraceparent(headers: Record<string, unknown> | undefined): {
  traceId: string;
  parentId: string;
  flags: string;
} {
  const match = TRACEPARENT.exec(String(headers?.traceparent));
  expect(match, `traceparent ${String(headers?.traceparent)}`).not.toBeNull();
  const [, traceId = '', parentId = '', flags = ''] = match ?? [];
  return { traceId, parentId, flags };
}

function byKind(spans: ReceivedSpan[], kind: number): ReceivedSpan {
  const found = spans.filter((span) => span.kind === kind);
  expect(found).toHaveLength(1);
  return found[0] as ReceivedSpan;
}

describe('trace context', () => {
  it('continues an incoming traceparent: the same trace upstream, in the access line and in the spans, the upstream parented by the CLIENT span', async () => {
    const { status, requestId, upstreamHeaders } = await send(exporting, {
      authorization: AUTHORIZATION,
      traceparent: `00-${TRACE_ID}-${CLIENT_PARENT}-01`,
      tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
    });
    expect(status).toBe(200);
    const sent = sentTraceparent(upstreamHeaders);
    expect(sent.traceId).toBe(TRACE_ID);
    expect(sent.parentId).not.toBe(CLIENT_PARENT);
    expect(sent.flags).toBe('01');
    expect(upstreamHeaders?.tracestate).toBe('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    const line = await exporting.waitForLog('request', { request_id: requestId });
    expect(line.trace_id).toBe(TRACE_ID);

    const spans = await receiver.spansOf(TRACE_ID, 3);
    expect(spans).toHaveLength(3);
    const server = byKind(spans, SPAN_KIND.server);
    const auth = byKind(spans, SPAN_KIND.internal);
    const client = byKind(spans, SPAN_KIND.client);
    expect(server.parentSpanId).toBe(CLIENT_PARENT);
    expect(auth.parentSpanId).toBe(server.spanId);
    expect(client.parentSpanId).toBe(server.spanId);
    expect(client.spanId).toBe(sent.parentId);
    expect(server.traceState).toBe('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    expect(server.name).toBe('GET accounts');
    expect(server.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': 'accounts',
      'http.response.status_code': 200,
      'url.path': '/accounts',
      'url.scheme': 'http',
    });
    expect(auth.name).toBe('authenticate');
    expect(auth.attributes).toEqual({
      'gateway.auth.method': 'basic',
      'enduser.id': 'alice',
      'gateway.auth.key_id': KEY,
      'gateway.auth.outcome': 'allowed',
    });
    expect(client.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(upstream.url).port),
      'url.path': '/accounts',
      'gateway.upstream': 'accounts',
    });
    expect(server.resource['service.name']).toBe('gateway-under-test');
    // The secret, the Authorization value and the query never reach the collector.
    const exported = JSON.stringify(spans);
    expect(exported).not.toContain(SECRET);
    expect(exported).not.toContain(AUTHORIZATION.slice('Basic '.length));
    expect(exported).not.toContain('limit=5');
    expect(receiver.exports[0]?.['x-collector-token']).toBe('collector-token-1');
  });

  it('starts a trace when the request has none, sampled with the random flag, its root span the request', async () => {
    const { requestId, upstreamHeaders } = await send(exporting, { authorization: AUTHORIZATION });
    const sent = sentTraceparent(upstreamHeaders);
    expect(sent.flags).toBe('03');
    expect(upstreamHeaders?.tracestate).toBeUndefined();
    const line = await exporting.waitForLog('request', { request_id: requestId });
    expect(line.trace_id).toBe(sent.traceId);
    const spans = await receiver.spansOf(sent.traceId, 3);
    const server = byKind(spans, SPAN_KIND.server);
    expect(server.parentSpanId).toBe('');
    expect(byKind(spans, SPAN_KIND.client).spanId).toBe(sent.parentId);
  });

  it.each([
    ['version ff', `ff-${TRACE_ID}-${CLIENT_PARENT}-01`],
    ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${CLIENT_PARENT}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${CLIENT_PARENT}-01`],
  ])(
    'replaces an invalid traceparent (%s) with a new trace and drops its tracestate',
    async (_name, traceparent) => {
      const { requestId, upstreamHeaders } = await send(exporting, {
        authorization: AUTHORIZATION,
        traceparent,
        tracestate: 'congo=t61rcWkgMzE',
      });
      const sent = sentTraceparent(upstreamHeaders);
      expect(sent.traceId).not.toBe(TRACE_ID);
      expect(sent.traceId).not.toBe('0'.repeat(32));
      expect(upstreamHeaders?.tracestate).toBeUndefined();
      const line = await exporting.waitForLog('request', { request_id: requestId });
      expect(line.trace_id).toBe(sent.traceId);
    },
  );

  it('continues a future version by its first four fields and sends version 00', async () => {
    const { upstreamHeaders } = await send(exporting, {
      authorization: AUTHORIZATION,
      traceparent: `cc-${TRACE_ID}-${CLIENT_PARENT}-00-what-the-future-holds`,
    });
    const sent = sentTraceparent(upstreamHeaders);
    expect([sent.traceId, sent.flags]).toEqual([TRACE_ID, '00']);
  });

  it('cuts the path in its spans to the access line’s bound', async () => {
    const traceId = 'aaaabbbbccccddddeeeeffff00002222';
    const path = `/accounts/${'a'.repeat(12_000)}`;
    await send(exporting, { traceparent: `00-${traceId}-${CLIENT_PARENT}-01` }, path);
    const server = byKind(await receiver.spansOf(traceId, 1), SPAN_KIND.server);
    expect(server.attributes['url.path']).toBe(path.slice(0, MAX_PATH_CHARS));
  });

  it('yields a request span with its 401 status and a denied authentication span for a wrong secret', async () => {
    const traceId = 'aaaabbbbccccddddeeeeffff00001111';
    const { status, upstreamHeaders } = await send(exporting, {
      authorization: basicHeader(KEY, 'wrong-secret-0123456789abcdefghijklmnop'),
      traceparent: `00-${traceId}-${CLIENT_PARENT}-01`,
    });
    expect(status).toBe(401);
    expect(upstreamHeaders).toBeUndefined();
    const spans = await receiver.spansOf(traceId, 2);
    expect(spans).toHaveLength(2);
    const server = byKind(spans, SPAN_KIND.server);
    expect(server.attributes).toMatchObject({
      'http.response.status_code': 401,
      'error.type': 'invalid_credentials',
    });
    // A 4xx is the client's: the server span is not an error (HTTP semantic conventions).
    expect(server.statusCode).toBe(0);
    expect(byKind(spans, SPAN_KIND.internal).attributes).toEqual({
      'gateway.auth.outcome': 'denied',
      'error.type': 'invalid_credentials',
    });
  });

  it('exports no span for a request the client marked unsampled, and passes the flag on', async () => {
    const unsampled = '11112222333344445555666677778888';
    const { upstreamHeaders } = await send(exporting, {
      authorization: AUTHORIZATION,
      traceparent: `00-${unsampled}-${CLIENT_PARENT}-00`,
    });
    expect(sentTraceparent(upstreamHeaders)).toMatchObject({ traceId: unsampled, flags: '00' });
    // Spans are exported in the order they end: once a later request's are in, none came.
    const fence = 'ffff2222333344445555666677778888';
    await send(exporting, {
      authorization: AUTHORIZATION,
      traceparent: `00-${fence}-${CLIENT_PARENT}-01`,
    });
    await receiver.spansOf(fence, 3);
    expect(receiver.spans.filter((span) => span.traceId === unsampled)).toEqual([]);
  });
});

describe('across a reload and a drain', () => {
  it('keeps exporting after a reload that changes the sampling, and sends the spans still queued when it drains', async () => {
    // A batch delay far past the test: only the drain can send these spans.
    const config = (sampleRatio: number) =>
      yaml(
        { tracing: { sampleRatio, otlp: { endpoint: receiver.endpoint, batchDelayMs: 600_000 } } },
        secretHash,
      );
    const gateway = await startGateway(config(1));
    try {
      const before = '0123456789abcdef0123456789abcdef';
      await send(gateway, {
        authorization: AUTHORIZATION,
        traceparent: `00-${before}-${CLIENT_PARENT}-01`,
      });
      writeFileSync(gateway.configFile, config(0));
      gateway.child.kill('SIGHUP');
      await gateway.waitForLog('configuration reloaded');
      // sampleRatio 0 now: a trace the gateway starts is not sampled (random flag only)...
      const started = sentTraceparent(
        (await send(gateway, { authorization: AUTHORIZATION })).upstreamHeaders,
      );
      expect(started.flags).toBe('02');
      // ...while a client's sampled trace still is, through the same provider.
      const after = 'fedcba9876543210fedcba9876543210';
      await send(gateway, {
        authorization: AUTHORIZATION,
        traceparent: `00-${after}-${CLIENT_PARENT}-01`,
      });
      expect(receiver.spans.filter((span) => [before, after].includes(span.traceId))).toEqual([]);
      expect(await gateway.stop()).toBe(0);
      expect(await receiver.spansOf(before, 3)).toHaveLength(3);
      expect(await receiver.spansOf(after, 3)).toHaveLength(3);
      expect(receiver.spans.filter((span) => span.traceId === started.traceId)).toEqual([]);
    } finally {
      await gateway.stop();
    }
  });
});

describe('a collector that refuses', () => {
  it('logs that span export failed and keeps serving', async () => {
    const refusing = await startOtlpReceiver(400);
    const gateway = await startGateway(
      yaml({ tracing: { otlp: { endpoint: refusing.endpoint, batchDelayMs: 50 } } }, secretHash),
    );
    try {
      expect((await send(gateway, { authorization: AUTHORIZATION })).status).toBe(200);
      const warning = await gateway.waitForLog('span export problem (spans may be lost)');
      expect(warning.level).toBe(40);
      expect(JSON.stringify(warning)).not.toContain(SECRET);
      expect((await send(gateway, { authorization: AUTHORIZATION })).status).toBe(200);
    } finally {
      await gateway.stop();
      await refusing.close();
    }
  });
});

describe('a collector at shutdown', () => {
  const WARNING = 'span export problem (spans may be lost)';
  /** The causes of the export warnings a gateway logged up to its last line ('stopped'). */
  const warnings = async (gateway: GatewayProcess): Promise<unknown[]> => {
    await gateway.waitForLog('stopped');
    return gateway.logs.filter((line) => line.msg === WARNING).map((line) => line.cause);
  };
  // A batch delay far past the test: the spans wait for the drain's flush.
  const sampled = {
    authorization: AUTHORIZATION,
    traceparent: `00-${TRACE_ID}-${CLIENT_PARENT}-01`,
  };

  /** A collector the test starts (or a closed port), and how to stop it. */
  type Collector = () => Promise<{ endpoint: string; close?: () => Promise<void> }>;
  const collectors: [string, Collector][] = [
    ['is down', async () => ({ endpoint: `http://127.0.0.1:${await freePort()}/v1/traces` })],
    ['refuses the export', () => startOtlpReceiver(400)],
  ];

  it.each(collectors)('that %s drains with exit 0 and one warning', async (_name, collector) => {
    const { endpoint, close } = await collector();
    const gateway = await startGateway(
      yaml({ tracing: { otlp: { endpoint, timeoutMs: 2000, batchDelayMs: 600_000 } } }, secretHash),
    );
    try {
      expect((await send(gateway, sampled)).status).toBe(200);
      expect(await gateway.stop()).toBe(0);
      const [cause, ...more] = await warnings(gateway);
      expect(more).toEqual([]);
      // A sentence: never the SDK's JSON of the error, stack included.
      expect(cause).toMatch(/^spans not sent at shutdown: [^\n{]+$/);
      expect(gateway.logs.filter((line) => line.msg === 'shutdown failed')).toEqual([]);
    } finally {
      await gateway.stop();
      await close?.();
    }
  });

  it('that never answers holds the drain no longer than server.drainTimeoutMs, then exits 0', async () => {
    const hung = await startOtlpReceiver('never');
    // The export's own bound (a minute) is far past the drain's: the drain's is the one kept.
    const gateway = await startGateway(
      yaml(
        {
          server: { drainTimeoutMs: 1000 },
          tracing: { otlp: { endpoint: hung.endpoint, timeoutMs: 60_000, batchDelayMs: 600_000 } },
        },
        secretHash,
      ),
    );
    try {
      expect((await send(gateway, sampled)).status).toBe(200);
      expect(await gateway.stop()).toBe(0);
      // The spans reached the collector, which never answered.
      expect(await hung.spansOf(TRACE_ID, 3)).toHaveLength(3);
      expect(await warnings(gateway)).toEqual([
        'spans not sent at shutdown: the drain ended before the collector answered',
      ]);
    } finally {
      await gateway.stop();
      await hung.close();
    }
  }, 20_000);
});

describe('serve --workers 2', () => {
  it('has each worker export its own spans', async () => {
    const keyPrefix = uniquePrefix('tracing');
    await seedKey(inject('redisUrl'), keyPrefix, { key: KEY, secret: SECRET, subject: 'alice' });
    const gateway = await startGateway(
      gatewayYaml({
        upstreamUrl: upstream.url,
        redis: { url: inject('redisUrl'), keyPrefix },
        config: {
          admin: { enabled: false },
          tracing: { otlp: { endpoint: receiver.endpoint, batchDelayMs: 50 } },
        },
      }),
      ['--workers', '2'],
    );
    try {
      const workers = (await gateway.waitForLog('gateway listening')).worker_pids as number[];
      const traceId = '5555666677778888999900001111aaaa';
      const { status } = await send(gateway, {
        authorization: AUTHORIZATION,
        traceparent: `00-${traceId}-${CLIENT_PARENT}-01`,
      });
      expect(status).toBe(200);
      const spans = await receiver.spansOf(traceId, 3);
      const pids = new Set(spans.map((span) => span.resource['process.pid']));
      expect(pids.size).toBe(1);
      expect(workers).toContain([...pids][0]);
    } finally {
      await gateway.stop();
    }
  });
});

describe('without tracing.otlp', () => {
  it('still propagates and logs the trace, and never loads the OpenTelemetry SDK nor sends a span', async () => {
    const { requestId, upstreamHeaders } = await send(silent, {
      authorization: AUTHORIZATION,
      traceparent: `00-${TRACE_ID}-${CLIENT_PARENT}-01`,
    });
    const sent = sentTraceparent(upstreamHeaders);
    expect(sent.traceId).toBe(TRACE_ID);
    expect(sent.parentId).not.toBe(CLIENT_PARENT);
    const line = await silent.waitForLog('request', { request_id: requestId });
    expect(line.trace_id).toBe(TRACE_ID);
    await send(silent, { authorization: basicHeader(KEY, 'wrong') });
    // After a drain, when the export would flush its last spans.
    expect(await silent.stop()).toBe(0);
    // @opentelemetry/api alone is loaded by prom-client (its exemplars look for it), SDK or
    // not; the SDK, the exporter and the resources package are loaded by the export only.
    const sdk = silentProbe.resolved().filter((url) => !url.includes('/@opentelemetry/api/'));
    expect(sdk).toEqual([]);
    expect(unusedReceiver.exports).toEqual([]);
    // The probe sees the SDK where it is loaded: the silence above is not the probe's.
    expect(exportingProbe.resolved().some((url) => url.includes('/sdk-trace/'))).toBe(true);
  });
});
