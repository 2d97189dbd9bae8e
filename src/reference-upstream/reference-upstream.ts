import { createServer, type Server, type ServerResponse } from 'node:http';
import { listEnvelope } from '../http/json-response.js';

export interface Account {
  readonly id: number;
  readonly [field: string]: unknown;
}

const ITEM_PREFIX = '/accounts/';

/**
 * The built-in accounts backend: answers `GET /accounts` in the spec's envelope with the
 * accounts of the subject the gateway names in X-Auth-Subject, and `GET /accounts/{id}`
 * with that one account of the subject's (so docs/api.md's prefix route works as pasted).
 * The spec shows no item endpoint; every success it shows is the list envelope, so an item
 * is a list of one, and another subject's account is as unknown as a missing one. It
 * trusts X-Auth-Subject, as any backend behind the gateway does, so it listens on loopback
 * only.
 */
export function createReferenceUpstream(
  accounts: Readonly<Record<string, readonly Account[]>>,
): Server {
  const lists = new Map<string, string>();
  /** Subject, then the id as the path spells it (decimal, no leading zero), then the body. */
  const items = new Map<string, Map<string, string>>();
  for (const [subject, list] of Object.entries(accounts)) {
    lists.set(subject, listEnvelope([...list].sort((a, b) => b.id - a.id)));
    items.set(
      subject,
      new Map(list.map((account) => [String(account.id), listEnvelope([account])])),
    );
  }
  const empty = listEnvelope([]);
  const notFound = errorBody(404, 'not_found', 'No such resource.');
  return createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const item = path.startsWith(ITEM_PREFIX) ? path.slice(ITEM_PREFIX.length) : undefined;
    if (path !== '/accounts' && item === undefined) return send(res, 404, notFound);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return send(res, 405, errorBody(405, 'method_not_allowed', 'Method not allowed.'));
    }
    const subject = req.headers['x-auth-subject'];
    if (typeof subject !== 'string')
      return send(res, 401, errorBody(401, 'missing_credentials', 'No subject.'));
    if (item === undefined) return send(res, 200, lists.get(subject) ?? empty);
    const body = items.get(subject)?.get(item);
    send(res, body === undefined ? 404 : 200, body ?? notFound);
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
