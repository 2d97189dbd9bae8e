import { describe, expect, it } from 'vitest';
import { KEYS_PAGE_MESSAGES } from '../../../src/endpoints/key-page-query.js';
import {
  EVENTS_PAGE_MESSAGES,
  parseEventPageQuery,
} from '../../../src/endpoints/list-key-events.js';

describe('parseEventPageQuery', () => {
  it('reads a page as GET /keys does, its cursor an event id', () => {
    expect(parseEventPageQuery('')).toEqual({ ok: true, page: { limit: 1000, order: 'desc' } });
    expect(parseEventPageQuery('?limit=2&order=asc&last_id=1795341600000-12')).toEqual({
      ok: true,
      page: { limit: 2, order: 'asc', after: '1795341600000-12' },
    });
  });

  it('refuses what GET /keys refuses, and a cursor that is no event id or given twice', () => {
    const cases: [string, string][] = [
      ['?limit=0', KEYS_PAGE_MESSAGES.limit],
      ['?order=up&last_id=x', KEYS_PAGE_MESSAGES.order],
      ['?last_id=ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX', EVENTS_PAGE_MESSAGES.lastId],
      ['?last_id=12', EVENTS_PAGE_MESSAGES.lastId],
      ['?last_id=1-2-3', EVENTS_PAGE_MESSAGES.lastId],
      ['?last_id=', EVENTS_PAGE_MESSAGES.lastId],
      ['?last_id=1-0&last_id=2-0', EVENTS_PAGE_MESSAGES.lastId],
    ];
    for (const [query, message] of cases)
      expect(parseEventPageQuery(query), query).toEqual({ ok: false, message });
  });
});
