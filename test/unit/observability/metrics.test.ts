import { describe, expect, it } from 'vitest';
import { createAggregatedMetrics, createMetrics } from '../../../src/observability/metrics.js';

describe('the Redis breaker metrics', () => {
  it('show each target open (1) or closed (0) and count its transitions by state', async () => {
    const metrics = createMetrics();
    metrics.setRedisBreaker('127.0.0.1:7000', true);
    metrics.setRedisBreaker('127.0.0.1:7001', true);
    metrics.setRedisBreaker('127.0.0.1:7000', false);
    const text = await metrics.scrape();
    expect(text).toMatch(/^gateway_redis_breaker_open\{target="127\.0\.0\.1:7000"\} 0$/m);
    expect(text).toMatch(/^gateway_redis_breaker_open\{target="127\.0\.0\.1:7001"\} 1$/m);
    expect(text).toMatch(
      /^gateway_redis_breaker_transitions_total\{target="127\.0\.0\.1:7000",state="open"\} 1$/m,
    );
    expect(text).toMatch(
      /^gateway_redis_breaker_transitions_total\{target="127\.0\.0\.1:7000",state="closed"\} 1$/m,
    );
  });

  it('read open across workers when any one of them has it open, and sum their transitions', async () => {
    const [one, two] = [createMetrics(), createMetrics()];
    one.setRedisBreaker('redis://r:6379', true);
    two.setRedisBreaker('redis://r:6379', true);
    two.setRedisBreaker('redis://r:6379', false);
    const set = createAggregatedMetrics(
      async () => [await one.snapshot(), await two.snapshot()],
      () => true,
    );
    const text = await set.scrape();
    expect(text).toMatch(/^gateway_redis_breaker_open\{target="redis:\/\/r:6379"\} 1$/m);
    expect(text).toMatch(
      /^gateway_redis_breaker_transitions_total\{target="redis:\/\/r:6379",state="open"\} 2$/m,
    );
  });
});

describe('the upstream metrics', () => {
  it('bucket each upstream response time under its upstream and count errors by kind', async () => {
    const metrics = createMetrics();
    const accounts = metrics.upstream('accounts');
    accounts.observe(0.002);
    accounts.observe(0.3);
    accounts.countError('connect_refused');
    metrics.upstream('accounts').countError('connect_refused');
    metrics.upstream('billing').countError('timeout');
    const text = await metrics.scrape();
    const series = (name: string): string | undefined =>
      text.split('\n').find((line) => line.startsWith(`${name} `));
    expect(
      [
        'gateway_upstream_request_duration_seconds_bucket{le="0.001",upstream="accounts"}',
        'gateway_upstream_request_duration_seconds_bucket{le="0.0025",upstream="accounts"}',
        'gateway_upstream_request_duration_seconds_bucket{le="0.5",upstream="accounts"}',
        'gateway_upstream_request_duration_seconds_bucket{le="+Inf",upstream="accounts"}',
        'gateway_upstream_request_duration_seconds_count{upstream="accounts"}',
        'gateway_upstream_errors_total{upstream="accounts",kind="connect_refused"}',
        'gateway_upstream_errors_total{upstream="accounts",kind="reset"}',
        'gateway_upstream_errors_total{upstream="billing",kind="timeout"}',
      ].map(series),
    ).toEqual([
      'gateway_upstream_request_duration_seconds_bucket{le="0.001",upstream="accounts"} 0',
      'gateway_upstream_request_duration_seconds_bucket{le="0.0025",upstream="accounts"} 1',
      'gateway_upstream_request_duration_seconds_bucket{le="0.5",upstream="accounts"} 2',
      'gateway_upstream_request_duration_seconds_bucket{le="+Inf",upstream="accounts"} 2',
      'gateway_upstream_request_duration_seconds_count{upstream="accounts"} 2',
      'gateway_upstream_errors_total{upstream="accounts",kind="connect_refused"} 2',
      'gateway_upstream_errors_total{upstream="accounts",kind="reset"} 0',
      'gateway_upstream_errors_total{upstream="billing",kind="timeout"} 1',
    ]);
  });

  it('sum each upstream series across workers', async () => {
    const [one, two] = [createMetrics(), createMetrics()];
    one.upstream('accounts').observe(0.01);
    two.upstream('accounts').observe(0.01);
    two.upstream('accounts').countError('reset');
    const set = createAggregatedMetrics(
      async () => [await one.snapshot(), await two.snapshot()],
      () => true,
    );
    const text = await set.scrape();
    expect(text).toMatch(
      /^gateway_upstream_request_duration_seconds_count\{upstream="accounts"\} 2$/m,
    );
    expect(text).toMatch(/^gateway_upstream_errors_total\{upstream="accounts",kind="reset"\} 1$/m);
  });
});

describe('gateway_requests_total', () => {
  it('tells by its source label whether the gateway or the upstream produced the status', async () => {
    const metrics = createMetrics();
    metrics.observeRequest('accounts', 404, 0.01, 'upstream');
    metrics.observeRequest('accounts', 404, 0.01, 'gateway');
    metrics.observeRequest('accounts', 404, 0.01, 'gateway');
    metrics.observeRequest('accounts', 502, 0.01);
    const text = await metrics.scrape();
    expect(text).toMatch(
      /^gateway_requests_total\{route="accounts",status="404",source="upstream"\} 1$/m,
    );
    expect(text).toMatch(
      /^gateway_requests_total\{route="accounts",status="404",source="gateway"\} 2$/m,
    );
    expect(text).toMatch(
      /^gateway_requests_total\{route="accounts",status="502",source="gateway"\} 1$/m,
    );
    expect(text).toMatch(/^gateway_request_duration_seconds_count\{route="accounts"\} 4$/m);
  });
});

describe('the Redis connection and JWKS metrics', () => {
  it('show each Redis node by role, 1 when up, and the minimum across workers', async () => {
    const [one, two] = [createMetrics(), createMetrics()];
    const reading = (up: boolean) => () => [
      { node: '10.0.0.1:6379', role: 'master', up: true },
      { node: '10.0.0.2:6379', role: 'replica', up },
    ];
    one.readFrom({
      openConnections: () => 0,
      cacheEntries: () => 0,
      redisConnections: reading(true),
    });
    two.readFrom({
      openConnections: () => 0,
      cacheEntries: () => 0,
      redisConnections: reading(false),
    });
    const set = createAggregatedMetrics(
      async () => [await one.snapshot(), await two.snapshot()],
      () => true,
    );
    const text = await set.scrape();
    expect(text).toMatch(
      /^gateway_redis_connection_up\{node="10\.0\.0\.1:6379",role="master"\} 1$/m,
    );
    expect(text).toMatch(
      /^gateway_redis_connection_up\{node="10\.0\.0\.2:6379",role="replica"\} 0$/m,
    );
  });

  it('give the age of the older key set when two issuer entries share an issuer', async () => {
    const metrics = createMetrics({ countReloads: false, now: () => 10_000 });
    metrics.readFrom({
      openConnections: () => 0,
      cacheEntries: () => 0,
      jwksFetchedAt: () => [
        { issuer: 'https://a.example', fetchedAtMs: 9_000 },
        { issuer: 'https://a.example', fetchedAtMs: 7_000 },
      ],
    });
    const text = await metrics.scrape();
    expect(text.split('\n').filter((line) => line.startsWith('gateway_jwks_key_set_age'))).toEqual([
      'gateway_jwks_key_set_age_seconds{issuer="https://a.example"} 3',
    ]);
  });
});

describe('the TLS metrics', () => {
  it('are absent without server.tls, where a not-after of 0 would read as a certificate expired in 1970', async () => {
    const metrics = createMetrics({ countReloads: false });
    metrics.setTlsCertificateNotAfter(1_900_000_000);
    metrics.countTlsReload('loaded');
    expect(await metrics.scrape()).not.toMatch(/gateway_tls_/);
  });

  it('show the served certificate and the reloads with server.tls', async () => {
    const metrics = createMetrics({ countReloads: false, tls: true });
    metrics.setTlsCertificateNotAfter(1_900_000_000);
    metrics.countTlsReload('loaded');
    const text = await metrics.scrape();
    expect(text).toMatch(/^gateway_tls_certificate_not_after_seconds 1900000000$/m);
    expect(text).toMatch(/^gateway_tls_reloads_total\{outcome="loaded"\} 1$/m);
  });
});

describe('gateway_pairs_expiring', () => {
  const lines = (text: string): string[] =>
    text.split('\n').filter((line) => line.startsWith('gateway_pairs_expiring'));

  it('shows the latest count by window, and no series without one', async () => {
    const metrics = createMetrics();
    expect(lines(await metrics.scrape())).toEqual([]);
    metrics.setPairsExpiring({ '7d': 2, '30d': 9 });
    expect(lines(await metrics.scrape())).toEqual([
      'gateway_pairs_expiring{within="7d"} 2',
      'gateway_pairs_expiring{within="30d"} 9',
    ]);
    metrics.setPairsExpiring(undefined);
    expect(lines(await metrics.scrape())).toEqual([]);
  });

  it('reads the count of the one store once across workers, not their sum', async () => {
    const [one, two] = [createMetrics(), createMetrics()];
    one.setPairsExpiring({ '7d': 2, '30d': 9 });
    two.setPairsExpiring({ '7d': 2, '30d': 9 });
    const set = createAggregatedMetrics(
      async () => [await one.snapshot(), await two.snapshot()],
      () => true,
    );
    expect(lines(await set.scrape())).toEqual([
      'gateway_pairs_expiring{within="7d"} 2',
      'gateway_pairs_expiring{within="30d"} 9',
    ]);
  });
});

describe('the bcrypt work metrics', () => {
  it('show the runs under way and waiting at the scrape, and count refusals', async () => {
    const metrics = createMetrics();
    metrics.readFrom({
      openConnections: () => 0,
      cacheEntries: () => 0,
      bcryptWork: () => ({ running: 4, queued: 17 }),
    });
    metrics.countBcryptRefusal();
    const text = await metrics.scrape();
    expect(text).toMatch(/^gateway_bcrypt_in_flight 4$/m);
    expect(text).toMatch(/^gateway_bcrypt_queued 17$/m);
    expect(text).toMatch(/^gateway_bcrypt_refusals_total 1$/m);
  });
});

describe('gateway_redis_call_duration_seconds', () => {
  it('buckets each Redis call from a tenth of a millisecond, without a label', async () => {
    const metrics = createMetrics();
    expect(await metrics.scrape()).not.toMatch(/^gateway_redis_call_duration_seconds_count/m);
    for (const seconds of [0.00005, 0.0004, 0.003, 2]) metrics.observeRedisCall(seconds);
    const text = await metrics.scrape();
    expect(text).toMatch(/^gateway_redis_call_duration_seconds_bucket\{le="0\.0001"\} 1$/m);
    expect(text).toMatch(/^gateway_redis_call_duration_seconds_bucket\{le="0\.0005"\} 2$/m);
    expect(text).toMatch(/^gateway_redis_call_duration_seconds_bucket\{le="0\.005"\} 3$/m);
    expect(text).toMatch(/^gateway_redis_call_duration_seconds_bucket\{le="1"\} 3$/m);
    expect(text).toMatch(/^gateway_redis_call_duration_seconds_bucket\{le="\+Inf"\} 4$/m);
    expect(text).toMatch(/^gateway_redis_call_duration_seconds_count 4$/m);
  });
});
