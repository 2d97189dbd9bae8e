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
