import { createServer, type Server, type ServerResponse } from 'node:http';
import { listEnvelope } from '../http/json-response.js';

export interface Account {
  readonly id: number;
  readonly [field: string]: unknown;
}

/**
 * The built-in accounts backend: answers `GET /accounts` in the spec's envelope with the
 * accounts of the subject the gateway names in X-Auth-Subject. It trusts that header, as
 * any backend behind the gateway does, so it listens on loopback only.
 */
export function createReferenceUpstream(
  accounts: Readonly<Record<string, readonly Account[]>>,
): Server {
  const bySubject = new Map<string, string>();
  for (const [subject, list] of Object.entries(accounts)) {
    bySubject.set(subject, listEnvelope([...list].sort((a, b) => b.id - a.id)));
  }
  const empty = listEnvelope([]);
  return createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/accounts')
      return send(res, 404, errorBody(404, 'not_found', 'No such resource.'));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return send(res, 405, errorBody(405, 'method_not_allowed', 'Method not allowed.'));
    }
    const subject = req.headers['x-auth-subject'];
    if (typeof subject !== 'string')
      return send(res, 401, errorBody(401, 'missing_credentials', 'No subject.'));
    send(res, 200, bySubject.get(subject) ?? empty);
  });
}

function errorBody(status: number, code: string, message: string): string {
  return JSON.stringify({ result: 'error', status, error: { code, message } });
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
