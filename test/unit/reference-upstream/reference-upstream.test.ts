import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReferenceUpstream } from '../../../src/reference-upstream/reference-upstream.js';

const ALICE = [
  { id: 2, name: 'Savings', currency: 'EUR' },
  { id: 7, name: 'Options desk', currency: 'USD' },
  { id: 1, name: 'Main trading account', currency: 'USD' },
];

describe('the reference accounts upstream', () => {
  let server: Server;
  let baseUrl: string;

  beforeAll(async () => {
    server = createReferenceUpstream({ alice: ALICE, bob: [] });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const get = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${baseUrl}${path}`, init);
  const asSubject = (subject: string, init: RequestInit = {}): RequestInit => ({
    ...init,
    headers: { 'x-auth-subject': subject },
  });

  it('lists the subject’s accounts newest (highest id) first in the spec’s envelope', async () => {
    const res = await get('/accounts', asSubject('alice'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.json()).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 3, limit: 1000, order: 'desc', last_id: 1 },
      data: [
        { id: 7, name: 'Options desk', currency: 'USD' },
        { id: 2, name: 'Savings', currency: 'EUR' },
        { id: 1, name: 'Main trading account', currency: 'USD' },
      ],
    });
  });

  it('ignores the query string when matching /accounts', async () => {
    const res = await get('/accounts?limit=5&order=asc', asSubject('alice'));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { meta: { count: number } }).meta.count).toBe(3);
  });

  it.each(['bob', 'nobody'])(
    'answers an empty list (count 0, last_id null) for subject %s, which has no accounts',
    async (subject) => {
      const res = await get('/accounts', asSubject(subject));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        result: 'success',
        status: 200,
        meta: { count: 0, limit: 1000, order: 'desc', last_id: null },
        data: [],
      });
    },
  );

  it('answers HEAD with the GET headers, the body’s length, and no body', async () => {
    const full = await get('/accounts', asSubject('alice'));
    const body = await full.text();
    const res = await get('/accounts', asSubject('alice', { method: 'HEAD' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    expect(await res.text()).toBe('');
  });

  it('answers GET /accounts/{id} with that account of the subject’s, as a list of one', async () => {
    const res = await get('/accounts/7?fields=all', asSubject('alice'));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      result: 'success',
      status: 200,
      meta: { count: 1, limit: 1000, order: 'desc', last_id: 7 },
      data: [{ id: 7, name: 'Options desk', currency: 'USD' }],
    });
  });

  it.each([
    ['/accounts/7', 'bob'],
    ['/accounts/3', 'alice'],
    ['/accounts/07', 'alice'],
    ['/accounts/7/', 'alice'],
    ['/accounts/', 'alice'],
  ])(
    'answers %s as %s, no such account of the subject’s, with 404 not_found',
    async (path, subject) => {
      const res = await get(path, asSubject(subject));
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
    },
  );

  it('answers PUT /accounts/{id} with 405 and Allow: GET, HEAD', async () => {
    const res = await get('/accounts/7', asSubject('alice', { method: 'PUT' }));
    expect([res.status, res.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
  });

  it.each(['/', '/account', '/admin', '/accountsx/7'])(
    'answers %s with 404 not_found',
    async (path) => {
      const res = await get(path, asSubject('alice'));
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({
        result: 'error',
        status: 404,
        error: { code: 'not_found', message: 'No such resource.' },
      });
    },
  );

  it.each(['POST', 'PUT', 'DELETE', 'PATCH'])(
    'answers %s /accounts with 405 and Allow: GET, HEAD',
    async (method) => {
      const res = await get('/accounts', asSubject('alice', { method }));
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, HEAD');
      expect(await res.json()).toEqual({
        result: 'error',
        status: 405,
        error: { code: 'method_not_allowed', message: 'Method not allowed.' },
      });
    },
  );

  it('answers 401 missing_credentials when the gateway named no subject', async () => {
    const res = await get('/accounts');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      result: 'error',
      status: 401,
      error: { code: 'missing_credentials', message: 'No subject.' },
    });
  });
});
