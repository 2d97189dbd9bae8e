/** The Authorization value for a key pair (RFC 7617: `key:secret`, UTF-8, base64). */
export function basicHeader(key: string, secret: string): string {
  return `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;
}

/** The Authorization value for a bearer token. */
export function bearerHeader(token: string): string {
  return `Bearer ${token}`;
}
