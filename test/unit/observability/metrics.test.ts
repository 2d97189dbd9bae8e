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
