import { diag } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { diagnosticCause } from '../../../src/tracing/diagnostic-cause.js';
import { reportDiagnostics } from '../../../src/tracing/otlp-spans.js';

afterEach(() => diag.disable());

describe('reportDiagnostics', () => {
  it('passes the SDK’s errors and warnings on, never its information', () => {
    const reported: string[] = [];
    reportDiagnostics((message) => reported.push(message));
    diag.error('export failed: 400');
    diag.warn('export failed: 400 again');
    diag.info('not passed on');
    diag.debug('nor this');
    expect(reported).toEqual(['export failed: 400', 'export failed: 400 again']);
  });
});

describe('the cause of a span-export warning', () => {
  it('is the message of the error the SDK handed over as JSON, never its stack', () => {
    const reported: string[] = [];
    reportDiagnostics((message) => reported.push(message));
    // What the SDK's global error handler passes for an export timeout.
    const error = new Error('Timeout');
    diag.error(JSON.stringify({ stack: error.stack, message: error.message, name: 'Error' }));
    expect(reported).toEqual(['Timeout']);
  });

  it('is one line, cut to a sentence’s length', () => {
    expect(diagnosticCause('export failed\n    at somewhere (file.js:1:1)')).toBe('export failed');
    expect(diagnosticCause(new Error('connect ECONNREFUSED 127.0.0.1:4318'))).toBe(
      'connect ECONNREFUSED 127.0.0.1:4318',
    );
    expect(diagnosticCause('x'.repeat(500))).toHaveLength(201);
    expect(diagnosticCause('{"stack":"Error\\n at x"}')).toBe('unknown error');
  });
});
