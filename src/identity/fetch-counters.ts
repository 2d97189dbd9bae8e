/**
 * Fetches of a remote resource (an issuer's JWKS) and those that failed, as plain numbers
 * bumped in place, like CacheCounters: the key source (auth) counts, the metrics
 * (observability) read at scrape, and neither imports the other.
 */
export interface FetchCounters {
  /** Every fetch, failed ones included. */
  fetches: number;
  failures: number;
}
