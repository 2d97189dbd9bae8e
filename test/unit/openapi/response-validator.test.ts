import { describe, expect, it } from 'vitest';
import {
  createResponseValidator,
  readDocument,
  TEST_UPSTREAM_HEADER,
  type ObservedResponse,
} from '../../support/openapi-validator.js';

const validate = createResponseValidator(readDocument());

const unauthorized: ObservedResponse = {
  method: 'GET',
  target: '/keys?limit=5',
  status: 401,
  headers: {
    'x-request-id': 'r-1',
    'cache-control': 'no-store',
    'www-authenticate': [
      'Basic realm="accounts-gateway", charset="UTF-8"',
      'Bearer realm="accounts-gateway"',
    ],
  },
  body: JSON.stringify({
    result: 'error',
    status: 401,
    error: { code: 'missing_credentials', message: 'Credentials are required.' },
    request_id: 'r-1',
  }),
};

function failure(observed: ObservedResponse): string {
  const verdict = validate(observed);
  return verdict.kind === 'failed' ? verdict.message : verdict.kind;
}

describe('the response validator', () => {
  it('accepts an answer the document describes and names what it was checked against', () => {
    expect(validate(unauthorized)).toEqual({
      kind: 'checked',
      path: '/keys',
      method: 'get',
      status: 401,
    });
  });

  it('fails a 401 without its challenge, naming the request and the header', () => {
    const headers = { ...unauthorized.headers };
    delete headers['www-authenticate'];
    expect(failure({ ...unauthorized, headers })).toMatch(
      /^OpenAPI \(docs\/openapi\.json\): GET \/keys\?limit=5 answered 401: header WWW-Authenticate is missing/,
    );
  });

  it('fails a body the schema does not allow, with the ajv error', () => {
    const body = JSON.stringify({
      ...JSON.parse(unauthorized.body),
      error: { code: 'forbidden', message: 'x' },
    });
    expect(failure({ ...unauthorized, body })).toMatch(
      /body: \/error\/code must be equal to one of the allowed values/,
    );
  });

  it('fails a status the document does not list for the operation', () => {
    expect(failure({ ...unauthorized, status: 418 })).toMatch(
      /status 418 is not documented for GET \/keys/,
    );
  });

  it('skips paths the document does not describe, and holds test upstreams only to X-Request-Id', () => {
    expect(validate({ ...unauthorized, target: '/items/7' })).toEqual({ kind: 'skipped' });
    const upstream = { ...unauthorized, target: '/accounts', status: 418, body: 'teapot' };
    const marked: Record<string, string | readonly string[]> = {
      ...upstream.headers,
      [TEST_UPSTREAM_HEADER]: 'echo',
    };
    expect(validate({ ...upstream, headers: marked })).toEqual({ kind: 'skipped' });
    const unmarked = { ...marked };
    delete unmarked['x-request-id'];
    expect(failure({ ...upstream, headers: unmarked })).toMatch(/no X-Request-Id header/);
  });

  it("holds an upstream's status the listing does not list to its headers only, as passed through", () => {
    const passed = { ...unauthorized, target: '/accounts', status: 404, body: 'not here' };
    expect(validate(passed)).toEqual({
      kind: 'checked',
      path: '/accounts',
      method: 'get',
      status: 'default',
    });
    const headers = { ...passed.headers };
    delete headers['x-request-id'];
    expect(failure({ ...passed, headers })).toMatch(/no X-Request-Id header/);
  });

  it('holds a 405 of a method the path does not take to its Allow, and other answers there to the envelope', () => {
    const notTaken: ObservedResponse = {
      ...unauthorized,
      method: 'PUT',
      target: '/accounts',
      status: 405,
      body: JSON.stringify({
        result: 'error',
        status: 405,
        error: { code: 'method_not_allowed', message: 'x' },
        request_id: 'r-1',
      }),
    };
    expect(failure(notTaken)).toMatch(/PUT \/accounts answered 405: header Allow is missing/);
    const allowed = { ...notTaken, headers: { ...notTaken.headers, allow: 'GET, HEAD' } };
    expect(validate(allowed)).toEqual({
      kind: 'checked',
      path: '/accounts',
      method: 'put',
      status: 405,
    });
    // A test's own route that takes PUT here: its 401 is not the document's, held to the envelope.
    expect(validate({ ...unauthorized, method: 'PUT', target: '/accounts' })).toEqual({
      kind: 'skipped',
    });
    expect(
      failure({ ...unauthorized, method: 'PUT', target: '/accounts', body: '{"result":"error"}' }),
    ).toMatch(/PUT \/accounts answered 401: body: /);
  });

  it('fails a refusal made before routing without the headers every answer carries', () => {
    const late = { ...unauthorized, status: 408, body: unauthorized.body.replace(/401/g, '408') };
    expect(failure(late)).toMatch(/body: /);
    const headers = { ...unauthorized.headers };
    delete headers['cache-control'];
    expect(failure({ ...unauthorized, status: 431, headers })).toMatch(
      /answered 431: header Cache-Control is missing/,
    );
  });
});
