import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../src/config/load-config.js';
import { given } from '../../support/config-override.js';

// server.workers and serve --workers: a positive integer or `auto`, one process by default;
// refused with the memory store, whose state lives in one process.

const MEMORY_REFUSED =
  'server.workers: the memory store keeps its state in one process; more than one worker needs credentials.store: redis';

function problemsOf(yaml: string, overrides: Parameters<typeof parseConfig>[3] = {}): string[] {
  try {
    parseConfig(yaml, 'test.yaml', {}, overrides);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}

const workersOf = (yaml: string, overrides: Parameters<typeof parseConfig>[3] = {}) =>
  parseConfig(yaml, 'test.yaml', { N: '3' }, overrides).server.workers;

describe('server.workers', () => {
  it('defaults to one process, with the memory store too', () => {
    expect(workersOf('')).toBe(1);
    expect(workersOf('server: { workers: 1 }')).toBe(1);
  });

  it('takes a positive integer or auto with the Redis store', () => {
    expect(workersOf('server: { workers: 4 }\ncredentials: { store: redis }')).toBe(4);
    expect(workersOf('server: { workers: auto }\ncredentials: { store: redis }')).toBe('auto');
    expect(workersOf('server: { workers: "${N}" }\ncredentials: { store: redis }')).toBe(3);
  });

  it('refuses zero, a fraction, a word other than auto, and more than 256', () => {
    for (const value of ['0', '1.5', 'many', '257', '-2']) {
      expect(problemsOf(`server: { workers: ${value} }\ncredentials: { store: redis }`)).toEqual([
        'server.workers: must be a whole number from 1 to 256, or auto',
      ]);
    }
  });

  it('refuses more than one worker, or auto, with the memory store, saying to use redis', () => {
    expect(problemsOf('server: { workers: 2 }')).toEqual([MEMORY_REFUSED]);
    expect(problemsOf('server: { workers: auto }\ncredentials: { store: memory }')).toEqual([
      MEMORY_REFUSED,
    ]);
  });

  it('reports the memory-store refusal together with the other problems of the file', () => {
    expect(problemsOf('server: { workers: 2, port: -1 }')).toEqual([
      'server.port: must be at least 0',
      MEMORY_REFUSED,
    ]);
  });
});

describe('the --workers override', () => {
  it('wins over the file', () => {
    expect(
      workersOf('server: { workers: 4 }\ncredentials: { store: redis }', {
        workers: given('--workers', '2'),
      }),
    ).toBe(2);
    expect(
      workersOf('credentials: { store: redis }', { workers: given('--workers', 'auto') }),
    ).toBe('auto');
  });

  it('is refused with the memory store like the setting, and allowed once --redis-url is given', () => {
    expect(problemsOf('', { workers: given('--workers', '2') })).toEqual([MEMORY_REFUSED]);
    expect(
      workersOf('', {
        workers: given('--workers', '2'),
        redisUrl: given('--redis-url', 'redis://127.0.0.1:6379'),
      }),
    ).toBe(2);
  });

  it('reports a value that is not a whole number from 1 to 256 or auto as the flag’s problem', () => {
    for (const value of ['0', 'two', '1e3', '', '257']) {
      expect(
        problemsOf('credentials: { store: redis }', { workers: given('--workers', value) }),
      ).toEqual(['--workers: must be a whole number from 1 to 256, or auto']);
    }
  });
});
