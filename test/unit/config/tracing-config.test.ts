import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../src/config/load-config.js';

// tracing: propagation on by default, no export unless tracing.otlp.endpoint is set.

const tracingOf = (yaml: string, env: Record<string, string> = {}) =>
  parseConfig(yaml, 'test.yaml', env).tracing;

function problemsOf(yaml: string): string[] {
  try {
    parseConfig(yaml, 'test.yaml', {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}

describe('tracing', () => {
  it('propagates, samples every trace it starts and exports nothing by default', () => {
    expect(tracingOf('')).toEqual({
      propagate: true,
      sampleRatio: 1,
      serviceName: 'accounts-gateway',
    });
  });

  it('takes an OTLP endpoint with its headers, and a ratio from the environment', () => {
    const tracing = tracingOf(
      'tracing: { sampleRatio: "${RATIO}", otlp: { endpoint: "https://collector:4318/v1/traces", headers: { x-key: "${KEY}" } } }',
      { RATIO: '0.25', KEY: 'k1' },
    );
    expect(tracing.sampleRatio).toBe(0.25);
    expect(tracing.otlp).toEqual({
      endpoint: 'https://collector:4318/v1/traces',
      headers: { 'x-key': 'k1' },
      timeoutMs: 10_000,
      batchDelayMs: 5000,
    });
  });

  it('refuses a ratio outside 0 to 1 and an endpoint that is not an http(s) URL', () => {
    expect(problemsOf('tracing: { sampleRatio: 1.5 }')).toHaveLength(1);
    expect(problemsOf('tracing: { otlp: { endpoint: "grpc://collector:4317" } }')).toEqual([
      'tracing.otlp.endpoint: must be an http:// or https:// URL',
    ]);
    expect(problemsOf('tracing: { otlp: { endpoint: "collector" } }')).toHaveLength(1);
  });
});
