import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../../src/errors/error-codes.js';
import { errorBody, writeError, writeRawError } from '../../../src/errors/error-envelope.js';
import {
  GatewayError,
  KEY_NOT_FOUND_MESSAGE,
  toGatewayError,
} from '../../../src/errors/gateway-error.js';
import type { HttpAnswer } from '../../support/http-answer.js';
import { finalStatuses, rawRequest } from '../../support/raw-request.js';
import { send as sendRequest } from '../../support/send.js';

const CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

describe('ERROR_CATALOGUE', () => {
  it('maps the design’s codes to their statuses', () => {
    expect(Object.fromEntries(CODES.map((c) => [c, ERROR_CATALOGUE[c].status]))).toEqual({
      malformed_authorization: 400,
      invalid_path: 400,
      bad_request: 400,
      missing_credentials: 401,
      invalid_credentials: 401,
      invalid_token: 401,
      token_expired: 401,
      forbidden: 403,
      not_found: 404,
      method_not_allowed: 405,
      request_timeout: 408,
      conflict: 409,
      payload_too_large: 413,
      unsupported_media_type: 415,
      limit_exceeded: 422,
      rate_limited: 429,
      headers_too_large: 431,
      internal_error: 500,
      upstream_unavailable: 502,
      credential_store_unavailable: 503,
      overloaded: 503,
      draining: 503,
      upstream_timeout: 504,
    });
  });

  it('gives every code a non-empty fixed message', () => {
    for (const code of CODES) expect(ERROR_CATALOGUE[code].message).toMatch(/^[A-Z].+\.$/);
  });
});

describe('errorBody', () => {
  it.each(CODES)('produces the exact envelope for %s', (code) => {
    const { status, message } = ERROR_CATALOGUE[code];
    const body = errorBody(code, 'req-123');
    expect(JSON.parse(body)).toEqual({
      result: 'error',
      status,
      error: { code, message },
      request_id: 'req-123',
    });
    // Key order as the design shows it.
    expect(body).toBe(
      `{"result":"error","status":${status},"error":{"code":"${code}","message":${JSON.stringify(message)}},"request_id":"req-123"}`,
    );
  });

  it('writes a given message in place of the catalogue’s, keeping code and status', () => {
    expect(errorBody('not_found', 'req-9', KEY_NOT_FOUND_MESSAGE)).toBe(
      '{"result":"error","status":404,"error":{"code":"not_found","message":"No key pair with this id belongs to the caller."},"request_id":"req-9"}',
    );
  });

  it('escapes the request id as JSON', () => {
    expect(
      (JSON.parse(errorBody('not_found', 'a"b\\c')) as { request_id: string }).request_id,
    ).toBe('a"b\\c');
  });
});

describe('GatewayError', () => {
  it('takes status and message from the catalogue and keeps the cause', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new GatewayError('upstream_unavailable', { cause });
    expect(error).toBeInstanceOf(Error);
    expect([error.name, error.code, error.status, error.message, error.cause]).toEqual([
      'GatewayError',
      'upstream_unavailable',
      502,
      'The upstream service is unavailable.',
      cause,
    ]);
  });

  it('takes a fixed message override, keeping code and status from the catalogue', () => {
    const error = new GatewayError('not_found', { message: KEY_NOT_FOUND_MESSAGE });
    expect([error.code, error.status, error.message]).toEqual([
      'not_found',
      404,
      'No key pair with this id belongs to the caller.',
    ]);
    expect(KEY_NOT_FOUND_MESSAGE).toMatch(/^[A-Z].+\.$/);
    expect(KEY_NOT_FOUND_MESSAGE).not.toBe(ERROR_CATALOGUE.not_found.message);
    expect(ERROR_CATALOGUE.not_found.message).toBe('No resource matches the request path.');
  });

  it('has no cause property when none is given', () => {
    expect('cause' in new GatewayError('not_found')).toBe(false);
  });

  it('toGatewayError passes a GatewayError through unchanged', () => {
    const error = new GatewayError('forbidden');
    expect(toGatewayError(error)).toBe(error);
  });

  it('toGatewayError wraps a foreign error as internal_error with the cause', () => {
    const foreign = new TypeError('boom');
    const mapped = toGatewayError(foreign);
    expect([mapped.code, mapped.status, mapped.cause]).toEqual(['internal_error', 500, foreign]);
  });
});

describe('writeError on a real server', () => {
  let handler: (res: ServerResponse) => void = () => undefined;
  const server = createServer((_req, res) => handler(res));
  let port = 0;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const send = (method = 'GET', headers: Record<string, string> = {}): Promise<HttpAnswer> =>
    sendRequest(`http://127.0.0.1:${port}`, '/x', { method, headers });

  it('writes the envelope with content type, no-store and the request id', async () => {
    handler = (res) => writeError(res, new GatewayError('not_found'), 'rid-1');
    const res = await send();
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toEqual({
      result: 'error',
      status: 404,
      error: { code: 'not_found', message: ERROR_CATALOGUE.not_found.message },
      request_id: 'rid-1',
    });
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-request-id']).toBe('rid-1');
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(res.body)));
    expect(res.headers['www-authenticate']).toBeUndefined();
    expect(res.headers.allow).toBeUndefined();
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('writes the error’s overriding message, with a content length that matches it', async () => {
    handler = (res) =>
      writeError(res, new GatewayError('not_found', { message: KEY_NOT_FOUND_MESSAGE }), 'rid-k');
    const res = await send();
    expect(res.status).toBe(404);
    expect(res.body).toBe(
      '{"result":"error","status":404,"error":{"code":"not_found","message":"No key pair with this id belongs to the caller."},"request_id":"rid-k"}',
    );
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(res.body)));
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('sends one WWW-Authenticate header per challenge', async () => {
    const challenges = [
      'Basic realm="accounts-gateway", charset="UTF-8"',
      'Bearer realm="accounts-gateway", error="invalid_token"',
    ];
    handler = (res) => writeError(res, new GatewayError('invalid_token', { challenges }), 'rid-2');
    const res = await send();
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toEqual(challenges);
    expect(JSON.parse(res.body)).toEqual({
      result: 'error',
      status: 401,
      error: { code: 'invalid_token', message: ERROR_CATALOGUE.invalid_token.message },
      request_id: 'rid-2',
    });
  });

  it('sends Allow for a 405', async () => {
    handler = (res) =>
      writeError(res, new GatewayError('method_not_allowed', { allow: ['GET', 'HEAD'] }), 'r');
    const res = await send('POST');
    expect([res.status, res.headers.allow]).toEqual([405, 'GET, HEAD']);
  });

  it('sends Retry-After for a 429 and a 503', async () => {
    handler = (res) => writeError(res, new GatewayError('rate_limited', { retryAfterSec: 7 }), 'r');
    const limited = await send();
    expect([limited.status, limited.headers['retry-after']]).toEqual([429, '7']);
    handler = (res) => writeError(res, new GatewayError('overloaded', { retryAfterSec: 1 }), 'r');
    const overloaded = await send();
    expect([overloaded.status, overloaded.headers['retry-after']]).toEqual([503, '1']);
  });

  it('asks to close the connection after a 400', async () => {
    handler = (res) => writeError(res, new GatewayError('invalid_path'), 'r');
    // The client asks to keep the connection: only writeError's own header can close it.
    const res = await send('GET', { connection: 'keep-alive' });
    expect([res.status, res.headers.connection]).toEqual([400, 'close']);
  });

  it('sends headers without a body for HEAD', async () => {
    handler = (res) => writeError(res, new GatewayError('not_found'), 'r');
    const res = await send('HEAD');
    expect(res.status).toBe(404);
    expect(res.body).toBe('');
    expect(res.headers['content-length']).toBe(
      String(Buffer.byteLength(errorBody('not_found', 'r'))),
    );
  });

  it('destroys the socket instead of answering when the response has already started', async () => {
    handler = (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial', () => writeError(res, new GatewayError('upstream_unavailable'), 'r'));
    };
    const response = await fetch(`http://127.0.0.1:${port}/x`);
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
  });

  it('leaves a response already sent whole as it is: no cut, no second answer', async () => {
    handler = (res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '4' });
      res.end('done');
      writeError(res, new GatewayError('bad_request'), 'r');
    };
    // Two requests on one connection: the first answer must not cost the second one.
    const { raw } = await rawRequest(
      port,
      'GET /x HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      { untilClosed: true },
    );
    expect(finalStatuses(raw)).toEqual([200, 200]);
    expect(raw.endsWith('\r\n\r\ndone')).toBe(true);
  });

  it('asks to close the connection after a 408, whose body may never come', async () => {
    handler = (res) => writeError(res, new GatewayError('request_timeout'), 'r');
    const res = await send('GET', { connection: 'keep-alive' });
    expect([res.status, res.headers.connection]).toEqual([408, 'close']);
  });

  it('does not throw for a response that is already destroyed', async () => {
    let thrown: unknown = 'not called';
    handler = (res) => {
      res.destroy();
      try {
        writeError(res, new GatewayError('internal_error'), 'r');
        thrown = undefined;
      } catch (error) {
        thrown = error;
      }
    };
    await expect(send()).rejects.toThrow();
    expect(thrown).toBeUndefined();
  });
});

describe('writeRawError', () => {
  it('writes a complete HTTP response with the envelope and closes the socket', async () => {
    const server = createServer(() => undefined);
    server.on('clientError', (_error, socket: Socket) =>
      writeRawError(socket, 'headers_too_large', 'raw-1'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const { raw, closedByServer } = await rawRequest(
        port,
        'GET / HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n',
        { untilClosed: true },
      );
      expect(closedByServer).toBe(true);
      const body = errorBody('headers_too_large', 'raw-1');
      expect(raw).toBe(
        'HTTP/1.1 431 Request Header Fields Too Large\r\n' +
          'content-type: application/json; charset=utf-8\r\n' +
          `content-length: ${Buffer.byteLength(body)}\r\n` +
          'cache-control: no-store\r\n' +
          'x-request-id: raw-1\r\n' +
          'connection: close\r\n\r\n' +
          body,
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
