import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createAccessLog, type AccessEntry } from '../../../src/observability/access-log.js';

// The README's example access line is what operators copy into their log queries: it must
// show the fields a line of a proxied, authenticated request has, in the order written.

const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

/** The JSON block that follows the **Logs.** paragraph. */
function readmeExample(): Record<string, unknown> {
  const start = README.indexOf('**Logs.**');
  const open = README.indexOf('```json\n', start);
  const close = README.indexOf('\n```', open);
  return JSON.parse(README.slice(open + '```json\n'.length, close)) as Record<string, unknown>;
}

function writtenLine(entry: AccessEntry): Record<string, unknown> {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  const logger = pino({ base: { service: 'accounts-gateway' } }, stream);
  createAccessLog(logger, { query: false })?.(entry);
  return JSON.parse(text) as Record<string, unknown>;
}

describe('the README example under Logs', () => {
  it('has the fields of a proxied, authenticated request’s line, trace_id included, in order', () => {
    const line = writtenLine({
      requestId: 'req-1',
      method: 'GET',
      target: '/accounts',
      route: 'accounts',
      status: 200,
      durationMs: 84.3,
      clientAddress: '203.0.113.9',
      userAgent: 'curl/8.5.0',
      bytesIn: 132,
      bytesOut: 412,
      upstreamStatus: 200,
      upstreamMs: 3.12,
      upstreamError: undefined,
      authMethod: 'basic',
      subject: 'alice',
      key: 'ak_x',
      authFailure: undefined,
      errorCode: undefined,
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      aborted: false,
    });
    expect(Object.keys(readmeExample())).toEqual(Object.keys(line));
  });
});
