import {
  FIRST_PAGE,
  type CredentialStore,
  type KeySummary,
} from '../../credentials/credential-store.js';
import { LISTED_FIELDS, listedFields, toKeySummary } from './hash-fields.js';
import type { RedisLayout } from './layout.js';
import { pairsHere } from './pair-runs.js';
import { COUNT_ACTIVE_PAIRS, LIST_PAIRS } from './scripts.js';
import type { SubjectPairs } from './subject-pairs.js';

/** A subject's pairs read: a page of them, and how many are usable. */
export function redisPairListing(
  pairs: SubjectPairs,
  layout: RedisLayout,
): Pick<CredentialStore, 'listKeys' | 'countActiveKeys'> {
  return {
    listKeys: async (subject, page = FIRST_PAGE) => {
      // Two round trips, whatever the page size: the ids, then the page's hashes declared.
      const listed = await pairs.run(
        LIST_PAIRS,
        subject,
        pairsHere(layout, subject),
        {},
        {
          limit: page.limit,
          order: page.order,
          after: page.after ?? '',
          fields: LISTED_FIELDS,
        },
      );
      if (listed === undefined) return undefined;
      const records: KeySummary[] = [];
      for (const { id, values } of listed) {
        const record = toKeySummary(id, listedFields(values));
        if (record !== undefined) records.push(record);
      }
      return records;
    },
    countActiveKeys: (subject) =>
      pairs.run(COUNT_ACTIVE_PAIRS, subject, pairsHere(layout, subject), {}, {}),
  };
}
