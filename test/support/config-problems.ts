import { expect } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/load-config.js';

/** The problems parseConfig reports for `yaml`; fails the test unless it throws a ConfigError. */
export function configProblems(yaml: string): string[] {
  try {
    parseConfig(yaml, 'test.yaml');
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}
