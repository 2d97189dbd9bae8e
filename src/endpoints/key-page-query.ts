import { FIRST_PAGE, MAX_KEYS_PAGE, type KeyPage } from '../credentials/credential-store.js';
import { KEY_ID } from '../identity/identity-formats.js';

export type PageOutcome =
  { readonly ok: true; readonly page: KeyPage } | { readonly ok: false; readonly message: string };

const LIMIT = /^[1-9][0-9]{0,3}$/;

/** `GET /keys` 400 bad_request: a paging parameter the listing cannot use. */
export const KEYS_PAGE_MESSAGES = {
  limit: `limit must be a whole number from 1 to ${MAX_KEYS_PAGE}, given once.`,
  order: 'order must be desc or asc, given once.',
  lastId:
    "last_id must be the id of one of the caller's pairs, given once, as the previous page's meta.last_id.",
} as const;

/**
 * The page `GET /keys` asks for: `limit` (1 to 1000, default 1000), `order` (`desc`, the
 * default, or `asc`) and `last_id` (the previous page's `meta.last_id`), as the spec's
 * envelope `meta` names them. Pure. Other parameters are ignored, as a cache buster must
 * not break a listing; a known one given twice is refused, since either value could be meant.
 */
export function parsePageQuery(query: string): PageOutcome {
  const params = new URLSearchParams(query);
  const one = (name: string): string | undefined | null => {
    const values = params.getAll(name);
    return values.length === 0 ? undefined : values.length === 1 ? (values[0] ?? null) : null;
  };
  const limit = one('limit');
  const order = one('order');
  const lastId = one('last_id');
  if (
    limit === null ||
    (limit !== undefined && !(LIMIT.test(limit) && Number(limit) <= MAX_KEYS_PAGE))
  )
    return { ok: false, message: KEYS_PAGE_MESSAGES.limit };
  if (order === null || (order !== undefined && order !== 'desc' && order !== 'asc'))
    return { ok: false, message: KEYS_PAGE_MESSAGES.order };
  if (lastId === null || (lastId !== undefined && !KEY_ID.pattern.test(lastId)))
    return { ok: false, message: KEYS_PAGE_MESSAGES.lastId };
  return {
    ok: true,
    page: {
      limit: limit === undefined ? FIRST_PAGE.limit : Number(limit),
      order: order ?? FIRST_PAGE.order,
      ...(lastId === undefined ? {} : { after: lastId }),
    },
  };
}
