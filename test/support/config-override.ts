import type { Override } from '../../src/config/apply-overrides.js';

/** A value as a flag or variable gives it: `given('--listen', '8080')`. */
export function given(from: string, value: string): Override {
  return { from, value };
}
