import { describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { combineReadiness, resolveWorkerCount } from '../../../src/lifecycle/primary.js';

describe('the readiness of a set of workers', () => {
  it('is ready only when every worker is', () => {
    expect(combineReadiness(['ready', 'ready'])).toBe(true);
    expect(combineReadiness(['ready', 'ready', 'ready', 'ready'])).toBe(true);
  });

  it('is draining when any worker drains', () => {
    expect(combineReadiness(['ready', 'draining'])).toBe('draining');
    expect(combineReadiness(['store_unavailable', 'draining', 'missing'])).toBe('draining');
  });

  it("is not ready (credential_store_unavailable) when a worker's store does not answer", () => {
    expect(combineReadiness(['store_unavailable', 'ready'])).toBe(false);
    expect(combineReadiness(['missing', 'store_unavailable'])).toBe(false);
  });

  it('is overloaded while a worker is missing, starting or silent', () => {
    expect(combineReadiness(['ready', 'missing'])).toBe('overloaded');
    expect(combineReadiness(['starting', 'ready'])).toBe('overloaded');
    expect(combineReadiness(['ready', 'silent'])).toBe('overloaded');
  });
});

describe('the number of workers', () => {
  it('is the setting, or one per core the process may use for auto', () => {
    expect(resolveWorkerCount(3)).toBe(3);
    expect(resolveWorkerCount('auto')).toBe(availableParallelism());
  });
});
