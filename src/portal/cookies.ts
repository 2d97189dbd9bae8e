/**
 * The session cookie (RFC 6265; the `__Host-` prefix of RFC 6265bis §4.1.3.2). Pure.
 *
 * `__Host-` makes a browser accept the cookie only with `Secure`, `Path=/` and no `Domain`: no
 * other host of the site and no plain-HTTP page can set or shadow it. Browsers refuse a
 * `Secure` cookie from a plain-HTTP origin (other than some for localhost), so on a plain-HTTP
 * API port (`npm start`'s default) the cookie is `ag_session` without `Secure`: the same
 * attributes otherwise. docs/portal.md says why.
 */

/** The cookie's name: `__Host-ag_session` when it is `Secure`, else `ag_session`. */
export function sessionCookieName(secure: boolean): string {
  return secure ? '__Host-ag_session' : 'ag_session';
}

/**
 * The value of the cookie `name` in a request's Cookie header(s); undefined when absent, or
 * given more than once (another cookie of the same name, set by a sibling host or path, must
 * not be able to stand in for the session: RFC 6265 §8.6 "Weak Integrity").
 */
export function readCookie(
  header: string | readonly string[] | undefined,
  name: string,
): string | undefined {
  if (header === undefined) return undefined;
  const lines = typeof header === 'string' ? [header] : header;
  const values: string[] = [];
  for (const line of lines)
    for (const pair of line.split(';')) {
      const eq = pair.indexOf('=');
      if (eq === -1) continue;
      if (pair.slice(0, eq).trim() === name) values.push(pair.slice(eq + 1).trim());
    }
  return values.length === 1 ? values[0] : undefined;
}

/**
 * The Set-Cookie of a new session: HttpOnly (no script reads it), SameSite=Strict (no other
 * site's page sends it, RFC 6265bis §5.4.7), Path=/ and no Domain (the `__Host-` rules), no
 * Max-Age (gone with the browser; the server ends it by its own lifetimes anyway).
 */
export function sessionCookie(name: string, value: string, secure: boolean): string {
  return `${name}=${value}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The Set-Cookie that removes the session cookie (sign-out, or a session that ended). */
export function clearedCookie(name: string, secure: boolean): string {
  return `${name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
