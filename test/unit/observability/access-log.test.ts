import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  createAccessLog,
  toLogFields,
  type AccessEntry,
} from '../../../src/observability/access-log.js';

function capture(level = 'info'): { lines: string[]; logger: pino.Logger } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
  return { lines, logger: pino({ level, base: { service: 'accounts-gateway' } }, stream) };
}

const entry: AccessEntry = {
  requestId: 'req-1',
  method: 'GET',
  route: 'accounts "main"',
  status: 200,
  durationMs: 1.23456,
  authMethod: 'basic',
  subject: 'alice',
  key: 'ak_x',
  errorCode: undefined,
  aborted: false,
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
};

describe('createAccessLog', () => {
  it('writes one JSON line with the fields pino would write, escaped', () => {
    const { lines, logger } = capture();
    createAccessLog(logger)?.(entry);
    expect(lines).toHaveLength(1);
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect(parsed).toEqual({
      level: 30,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      service: 'accounts-gateway',
      ...JSON.parse(JSON.stringify(toLogFields(entry))),
      msg: 'request',
    });
    expect(parsed.route).toBe('accounts "main"');
    expect(parsed.trace_id).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('adds error_code and aborted only when they apply', () => {
    const { lines, logger } = capture();
    createAccessLog(logger)?.({
      ...entry,
      authMethod: undefined,
      subject: undefined,
      key: undefined,
      errorCode: 'not_found',
      aborted: true,
    });
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect([parsed.error_code, parsed.aborted, 'subject' in parsed]).toEqual([
      'not_found',
      true,
      false,
    ]);
  });

  it('is off when info lines are off', () => {
    expect(createAccessLog(capture('warn').logger)).toBeUndefined();
  });
});
