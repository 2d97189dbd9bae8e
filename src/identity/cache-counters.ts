/**
 * A credential cache's lookups and evictions, as plain numbers the cache bumps in place
 * (`hits += 1`): bound once per method, so a request pays an increment and no label lookup.
 * Here, below both, so the caches (auth) and the metrics (observability) share one shape.
 */
export interface CacheCounters {
  hits: number;
  misses: number;
  /** Entries pushed out by the bound (count or size); not those expired, replaced or evicted by name. */
  evictions: number;
}
