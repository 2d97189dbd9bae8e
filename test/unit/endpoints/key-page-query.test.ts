import { describe, expect, it } from 'vitest';
import { KEYS_PAGE_MESSAGES, parsePageQuery } from '../../../src/endpoints/key-page-query.js';

describe('parsePageQuery', () => {
  it('reads the first 1,000 pairs newest first when nothing is asked', () => {
    for (const query of ['', '?', '?_=1700000000'])
      expect(parsePageQuery(query)).toEqual({ ok: true, page: { limit: 1000, order: 'desc' } });
  });

  it('reads limit, order and last_id', () => {
    expect(parsePageQuery('?limit=1&order=asc&last_id=ak_Abc-_09')).toEqual({
      ok: true,
      page: { limit: 1, order: 'asc', after: 'ak_Abc-_09' },
    });
    expect(parsePageQuery('limit=1000&order=desc')).toEqual({
      ok: true,
      page: { limit: 1000, order: 'desc' },
    });
  });

  it('refuses each parameter it cannot use, or given twice, with its own message', () => {
    const cases: [string, string][] = [
      ['?limit=0', KEYS_PAGE_MESSAGES.limit],
      ['?limit=1001', KEYS_PAGE_MESSAGES.limit],
      ['?limit=01', KEYS_PAGE_MESSAGES.limit],
      ['?limit=+5', KEYS_PAGE_MESSAGES.limit],
      ['?limit=', KEYS_PAGE_MESSAGES.limit],
      ['?limit=2&limit=2', KEYS_PAGE_MESSAGES.limit],
      ['?order=DESC', KEYS_PAGE_MESSAGES.order],
      ['?order=asc&order=desc', KEYS_PAGE_MESSAGES.order],
      ['?last_id=', KEYS_PAGE_MESSAGES.lastId],
      ['?last_id=ak', KEYS_PAGE_MESSAGES.lastId],
      ['?last_id=ak%20x', KEYS_PAGE_MESSAGES.lastId],
      [`?last_id=${'a'.repeat(65)}`, KEYS_PAGE_MESSAGES.lastId],
    ];
    for (const [query, message] of cases)
      expect(parsePageQuery(query), query).toEqual({ ok: false, message });
  });
});
