import type { ServerResponse } from 'node:http';

/** The page a listing answered: the `limit` and `order` of the envelope's `meta`. */
export interface ListMeta {
  readonly limit: number;
  readonly order: 'desc' | 'asc';
}

/**
 * The spec's envelope (§2.1) for the gateway's own successful responses; `last_id` is the
 * `id` of the last record, the cursor of the next page.
 */
export function listEnvelope<R extends object>(
  records: readonly R[],
  status = 200,
  page: ListMeta = { limit: 1000, order: 'desc' },
): string {
  const last: object | undefined = records.at(-1);
  const lastId = last !== undefined && 'id' in last ? last.id : null;
  return JSON.stringify({
    result: 'success',
    status,
    meta: { count: records.length, limit: page.limit, order: page.order, last_id: lastId ?? null },
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
