import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  MAX_PATH_CHARS,
  MAX_USER_AGENT_CHARS,
  createAccessLog,
  jsonString,
  toLogFields,
  type AccessEntry,
  type AccessLogOptions,
} from '../../../src/observability/access-log.js';
import { codeBlocks, readDoc } from '../../support/markdown.js';

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
  target: '/accounts?access_token=secret-in-query',
  route: 'accounts "main"',
  status: 200,
  durationMs: 1.23456,
  clientAddress: '203.0.113.7',
  userAgent: 'curl/8.5.0',
  bytesIn: 112,
  bytesOut: 345,
  upstreamStatus: 200,
  upstreamMs: 0.98765,
  upstreamError: undefined,
  authMethod: 'basic',
  subject: 'alice',
  key: 'ak_x',
  authFailure: undefined,
  errorCode: undefined,
  rateLimitShadow: undefined,
  traceId: undefined,
  aborted: false,
};

const QUERY_OFF: AccessLogOptions = { query: false };

/** The one line written for `e`, parsed. */
function lineFor(e: AccessEntry, options = QUERY_OFF): Record<string, unknown> {
  const { lines, logger } = capture();
  createAccessLog(logger, options)?.(e);
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0] ?? '') as Record<string, unknown>;
}

describe('createAccessLog', () => {
  it('writes one JSON line with every field pino would write for the same entry', () => {
    expect(lineFor(entry)).toEqual({
      level: 30,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      service: 'accounts-gateway',
      ...JSON.parse(JSON.stringify(toLogFields(entry, QUERY_OFF))),
      msg: 'request',
    });
  });

  it('writes each field under its name with its value', () => {
    const parsed = lineFor({ ...entry, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
    expect(parsed).toMatchObject({
      request_id: 'req-1',
      method: 'GET',
      path: '/accounts',
      route: 'accounts "main"',
      status: 200,
      duration_ms: 1.23,
      client_address: '203.0.113.7',
      user_agent: 'curl/8.5.0',
      bytes_in: 112,
      bytes_out: 345,
      upstream_status: 200,
      upstream_ms: 0.99,
      auth_method: 'basic',
      subject: 'alice',
      key: 'ak_x',
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
  });

  it('leaves the query out of the path unless logging.query keeps it', () => {
    expect(lineFor(entry).path).toBe('/accounts');
    expect(lineFor(entry, { query: true }).path).toBe('/accounts?access_token=secret-in-query');
    expect(lineFor({ ...entry, target: '/accounts?' }).path).toBe('/accounts');
  });

  it('adds the failure fields only when they apply', () => {
    const parsed = lineFor({
      ...entry,
      status: 401,
      upstreamStatus: undefined,
      upstreamMs: undefined,
      userAgent: undefined,
      authMethod: undefined,
      subject: undefined,
      key: undefined,
      authFailure: 'invalid_credentials',
      errorCode: 'invalid_credentials',
      aborted: true,
    });
    expect(parsed).toMatchObject({
      auth_failure: 'invalid_credentials',
      error_code: 'invalid_credentials',
      aborted: true,
    });
    for (const absent of ['user_agent', 'upstream_status', 'upstream_ms', 'subject', 'trace_id'])
      expect(parsed, absent).not.toHaveProperty(absent);
    expect(lineFor(entry)).not.toHaveProperty('auth_failure');
    expect(lineFor(entry)).not.toHaveProperty('aborted');
    expect(lineFor(entry)).not.toHaveProperty('rate_limit_shadow');
  });

  it('names the shadow rate limit that would have refused the request', () => {
    expect(lineFor({ ...entry, rateLimitShadow: 'subject' }).rate_limit_shadow).toBe('subject');
  });

  it('writes the upstream error kind of a failed exchange', () => {
    const parsed = lineFor({
      ...entry,
      upstreamStatus: undefined,
      upstreamError: 'connect_refused',
    });
    expect([parsed.upstream_error, 'upstream_status' in parsed]).toEqual([
      'connect_refused',
      false,
    ]);
  });

  it.each([
    ['a quote', 'evil"agent'],
    ['a newline that would forge a second line', 'agent\n{"level":30,"msg":"forged"}'],
    ['a NUL', 'agent\u0000nul'],
    ['a backslash', 'agent\\'],
    [
      'every control character',
      Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)).join(''),
    ],
    ['DEL and Latin-1 bytes as Node decodes them', 'agent\u007f\u00ff\u00e9'],
    ['a lone surrogate', 'agent\ud800x'],
  ])('keeps a user agent with %s on one line of JSON, value intact', (_what, userAgent) => {
    const { lines, logger } = capture();
    createAccessLog(logger, QUERY_OFF)?.({ ...entry, userAgent, target: `/a"${userAgent}` });
    expect(lines).toHaveLength(1);
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect([parsed.user_agent, parsed.path, parsed.msg]).toEqual([
      userAgent,
      `/a"${userAgent}`,
      'request',
    ]);
  });

  it('writes DEL and the C1 controls of a Latin-1 user agent and path as \\u escapes, never raw', () => {
    const { lines, logger } = capture();
    // NEL (U+0085) is a line break to some log viewers; CSI (U+009B) starts a terminal sequence.
    const userAgent = 'agent\u0085\u009b2J\u007f\u0080\u009f';
    createAccessLog(logger, QUERY_OFF)?.({ ...entry, userAgent, target: `/a${userAgent}` });
    expect(lines[0]).toContain('"user_agent":"agent\\u0085\\u009b2J\\u007f\\u0080\\u009f"');
    expect(lines[0]).not.toMatch(/[\u007f-\u009f]/);
    const parsed = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect([parsed.user_agent, parsed.path]).toEqual([userAgent, `/a${userAgent}`]);
  });

  it('writes a failure as the request failed warning: level 40, the same fields, its cause, escaped alike', () => {
    const { lines, logger } = capture('warn');
    const failed = {
      ...entry,
      status: 502,
      userAgent: 'agent\u0085',
      errorCode: 'upstream_unavailable' as const,
    };
    createAccessLog(logger, QUERY_OFF, true)?.(failed, 'Error ECONNREFUSED: connect refused');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/[\u007f-\u009f]/);
    expect(JSON.parse(lines[0] ?? '')).toEqual({
      level: 40,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
      service: 'accounts-gateway',
      ...JSON.parse(JSON.stringify(toLogFields(failed, QUERY_OFF))),
      cause: 'Error ECONNREFUSED: connect refused',
      msg: 'request failed',
    });
  });

  it('cuts a 10 KB user agent and a long path to their bounds', () => {
    const parsed = lineFor({
      ...entry,
      userAgent: 'A'.repeat(10_240),
      target: `/${'p'.repeat(5_000)}?q=1`,
    });
    expect([parsed.user_agent, parsed.path]).toEqual([
      'A'.repeat(MAX_USER_AGENT_CHARS),
      `/${'p'.repeat(MAX_PATH_CHARS - 1)}`,
    ]);
  });

  it('never writes a header it was not given: no Authorization, no cookie', () => {
    const { lines, logger } = capture();
    createAccessLog(logger, QUERY_OFF)?.(entry);
    expect(lines[0]).not.toMatch(/authorization|cookie|secret-in-query/i);
  });

  it('is off when info lines are off', () => {
    expect(createAccessLog(capture('warn').logger, QUERY_OFF)).toBeUndefined();
  });
});

describe('jsonString', () => {
  it('quotes plain printable ASCII as it is', () => {
    expect(jsonString('Mozilla/5.0 (X11; Linux x86_64)', 256)).toBe(
      '"Mozilla/5.0 (X11; Linux x86_64)"',
    );
  });

  it('writes what JSON.stringify writes for anything else', () => {
    for (const value of ['a"b', 'a\\b', 'tab\there', 'é', '\ud83d\ude00', '\udc00'])
      expect(jsonString(value, 256)).toBe(JSON.stringify(value));
  });

  it('escapes DEL and the C1 controls, which JSON.stringify leaves raw', () => {
    expect(jsonString('a\u007f\u0080\u009f\u00a0é', 256)).toBe('"a\\u007f\\u0080\\u009f\u00a0é"');
  });

  it('stays valid JSON when the cut splits a surrogate pair', () => {
    const cut = jsonString(`${'a'.repeat(9)}\ud83d\ude00`, 10);
    expect([cut, JSON.parse(cut)]).toEqual(['"aaaaaaaaa\\ud83d"', 'aaaaaaaaa\ud83d']);
  });
});

describe('the example under Logs in docs/operations.md', () => {
  // What operators copy into their log queries: the fields of a proxied, authenticated
  // request's line, in the order written.
  it('has the fields of a proxied, authenticated request’s line, trace_id included, in order', () => {
    const doc = readDoc('docs/operations.md');
    const [block = ''] = codeBlocks(doc.slice(doc.indexOf('**Logs.**')), 'json');
    const example = JSON.parse(block) as object;
    const line = lineFor({ ...entry, traceId: '4bf92f3577b34da6a3ce929d0e0e4736' });
    expect(Object.keys(example)).toEqual(Object.keys(line));
  });
});
