import type { ServerResponse } from 'node:http';

/** The spec's envelope (§2.1) for the gateway's own successful responses. */
export function listEnvelope(records: readonly Record<string, unknown>[], status = 200): string {
  const last = records.at(-1);
  const lastId = last !== undefined && 'id' in last ? last.id : null;
  return JSON.stringify({
    result: 'success',
    status,
    meta: { count: records.length, limit: 1000, order: 'desc', last_id: lastId ?? null },
    data: records,
  });
}

export function writeJson(
  res: ServerResponse,
  status: number,
  body: string,
  requestId: string,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'cache-control': 'no-store',
    'x-request-id': requestId,
    ...extra,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
