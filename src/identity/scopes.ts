import { SCOPE } from './identity-formats.js';

/** At most this many scopes on one credential: a list checked per request stays short. */
export const MAX_SCOPES = 64;

/** The one empty list: every credential without scopes shares it (the cache holds many). */
export const NO_SCOPES: readonly string[] = Object.freeze([]);

/**
 * The scopes of a space-delimited list (RFC 6749 §3.3; a token's `scope` claim, RFC 9068
 * §2.2.3; the `scopes` field of the Redis hashes), each once, in their first order. Entries
 * that are not scope tokens are dropped: they could never match a required scope, which
 * config validation holds to the same rule.
 */
export function parseScopeList(text: string | undefined): readonly string[] {
  if (text === undefined || text === '') return NO_SCOPES;
  return uniqueScopes(text.split(' '));
}

/** The valid scope tokens of a list, each once, in their first order. */
export function uniqueScopes(scopes: readonly unknown[]): readonly string[] {
  const seen = new Set<string>();
  for (const scope of scopes)
    if (typeof scope === 'string' && SCOPE.pattern.test(scope)) seen.add(scope);
  return seen.size === 0 ? NO_SCOPES : [...seen];
}

/**
 * True when `granted` holds every scope in `required`. A route requires few scopes and a
 * credential holds few, so a scan beats building a Set per request; no requirement costs one
 * length check on the hot path.
 */
export function hasScopes(granted: readonly string[], required: readonly string[]): boolean {
  for (const scope of required) if (!granted.includes(scope)) return false;
  return true;
}
