import { diag } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { reportDiagnostics } from '../../../src/tracing/otlp-spans.js';

afterEach(() => diag.disable());

describe('reportDiagnostics', () => {
  it('passes the SDK’s errors and warnings on at most once a minute, counting the rest', () => {
    const reported: [string, number][] = [];
    let nowMs = 0;
    reportDiagnostics(
      (message, suppressed) => reported.push([message, suppressed]),
      () => nowMs,
    );
    diag.error('export failed: 400');
    diag.warn('export failed: 400 again');
    diag.info('not passed on');
    nowMs = 59_999;
    diag.error('still within the minute');
    nowMs = 60_000;
    diag.error('a minute later');
    expect(reported).toEqual([
      ['export failed: 400', 0],
      ['a minute later', 2],
    ]);
  });
});
