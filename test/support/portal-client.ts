import type { HttpAnswer } from './http-answer.js';
import { send } from './send.js';

/**
 * A browser as far as the portal's pages need one, over plain HTTP: a cookie jar (name=value,
 * Max-Age=0 removes), the page's Origin on every POST (as browsers send it), forms posted
 * url-encoded. No redirect is followed: the tests read each 303.
 */
export class PortalClient {
  private readonly jar = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  /** The cookie header the jar sends; '' when empty. */
  cookieHeader(): string {
    return [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  cookie(name: string): string | undefined {
    return this.jar.get(name);
  }

  /** Puts a cookie into the jar as if a page had set it (a fixation attempt, an old session). */
  setCookie(name: string, value: string): void {
    this.jar.set(name, value);
  }

  async get(path: string): Promise<HttpAnswer> {
    return this.keep(await send(this.baseUrl, path, { headers: this.headers() }));
  }

  /** Posts `fields` from a page of the portal's own origin (or `origin`, or none with null). */
  async post(
    path: string,
    fields: Record<string, string | readonly string[]>,
    options: { origin?: string | null } = {},
  ): Promise<HttpAnswer> {
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(fields))
      for (const each of typeof value === 'string' ? [value] : value) form.append(name, each);
    const origin = options.origin === undefined ? new URL(this.baseUrl).origin : options.origin;
    return this.keep(
      await send(this.baseUrl, path, {
        method: 'POST',
        headers: {
          ...this.headers(),
          'content-type': 'application/x-www-form-urlencoded',
          ...(origin === null ? {} : { origin }),
        },
        body: form.toString(),
      }),
    );
  }

  private headers(): Record<string, string> {
    const cookie = this.cookieHeader();
    return cookie === '' ? {} : { cookie };
  }

  private keep(answer: HttpAnswer): HttpAnswer {
    const set = answer.headers['set-cookie'];
    for (const line of set === undefined ? [] : typeof set === 'string' ? [set] : set) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      if (attributes.some((a) => a.toLowerCase() === 'max-age=0')) this.jar.delete(name);
      else this.jar.set(name, pair.slice(eq + 1));
    }
    return answer;
  }
}

/** The value of the (first) input named `name` in a page; undefined when there is none. */
export function fieldValue(page: string, name: string): string | undefined {
  const input = new RegExp(`<input\\b[^>]*\\bname="${name}"[^>]*>`).exec(page)?.[0];
  return input === undefined ? undefined : /\bvalue="([^"]*)"/.exec(input)?.[1];
}

/** The text of the element whose id is `id` (its markup removed); undefined when there is none. */
export function textOf(page: string, id: string): string | undefined {
  const match = new RegExp(`<([a-z0-9]+)\\b[^>]*\\bid="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(page);
  return match?.[2]?.replace(/<[^>]*>/g, '');
}
