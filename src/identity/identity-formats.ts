/**
 * The shapes of the names the gateway stores and checks, written once: config validation,
 * the API, the verifiers and the CLI all test against these, and say the same rule.
 */
export interface Format {
  readonly pattern: RegExp;
  /** The rule in words, for error messages. */
  readonly rule: string;
}

/**
 * A key pair's public id. Generated ones are self-describing (key-id.ts, 39 characters);
 * stores may hold others (earlier `ak_` + 24 base62 ones, ids another service wrote).
 */
export const KEY_ID: Format = { pattern: /^[A-Za-z0-9_-]{3,64}$/, rule: '3-64 of A-Z a-z 0-9 _ -' };

/** Who a credential acts for: forwarded as X-Auth-Subject and used as a JWT `sub`. */
export const SUBJECT: Format = {
  pattern: /^[A-Za-z0-9._@:+-]{1,128}$/,
  rule: '1-128 of A-Z a-z 0-9 . _ @ : + -',
};

/** A web-app user's login name for the password-to-token exchange. */
export const USERNAME: Format = {
  pattern: /^[A-Za-z0-9._@+-]{1,128}$/,
  rule: '1-128 of A-Z a-z 0-9 . _ @ + -',
};

/** A bcrypt hash as stored; bcrypt itself accepts some malformed ones (a NUL suffix). */
export const BCRYPT_HASH: Format = {
  pattern: /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/,
  rule: 'a bcrypt hash',
};

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * C0 controls and DEL: RFC 7617 §2 forbids them in a user-id and password, and a label
 * shown one line per pair must not carry them either.
 */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}

/**
 * One scope token, as RFC 6749 §3.3 defines it: `1*( %x21 / %x23-5B / %x5D-7E )`, printable
 * ASCII but space, `"` and `\`. Bounded to 128 characters here so a stored list stays small.
 */
export const SCOPE: Format = {
  pattern: /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/,
  rule: '1-128 printable ASCII characters but space, " and \\ (RFC 6749 §3.3)',
};
