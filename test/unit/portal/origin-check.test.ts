import { describe, expect, it } from 'vitest';
import { fromOwnOrigin } from '../../../src/portal/origin-check.js';

describe('the Origin check of a form', () => {
  const host = '127.0.0.1:8080';

  it('passes a form sent from a page of the host it was sent to', () => {
    expect(fromOwnOrigin({ host, origin: 'http://127.0.0.1:8080' }, false)).toBe(true);
    expect(fromOwnOrigin({ host: 'Portal.Example', origin: 'https://portal.example' }, true)).toBe(
      true,
    );
  });

  it('reads a Host that names the default port as the origin without one', () => {
    expect(
      fromOwnOrigin({ host: 'portal.example:443', origin: 'https://portal.example' }, true),
    ).toBe(true);
    expect(
      fromOwnOrigin({ host: 'portal.example:80', origin: 'http://portal.example' }, false),
    ).toBe(true);
    expect(
      fromOwnOrigin({ host: 'portal.example:8443', origin: 'https://portal.example' }, true),
    ).toBe(false);
  });

  it('reads the Referer when there is no Origin', () => {
    expect(fromOwnOrigin({ host, referer: 'http://127.0.0.1:8080/portal/keys/new' }, false)).toBe(
      true,
    );
    expect(fromOwnOrigin({ host, referer: 'http://evil.example/portal/' }, false)).toBe(false);
  });

  it('refuses another origin, another port, null, neither header, or no Host', () => {
    expect(fromOwnOrigin({ host, origin: 'http://evil.example' }, false)).toBe(false);
    expect(fromOwnOrigin({ host, origin: 'http://127.0.0.1:8081' }, false)).toBe(false);
    expect(fromOwnOrigin({ host, origin: 'null' }, false)).toBe(false);
    expect(fromOwnOrigin({ host }, false)).toBe(false);
    expect(fromOwnOrigin({ origin: 'http://127.0.0.1:8080' }, false)).toBe(false);
    expect(fromOwnOrigin({ host, origin: 'not a url' }, false)).toBe(false);
  });

  it('refuses a plain-http origin when the portal is served over https', () => {
    expect(fromOwnOrigin({ host: 'portal.example', origin: 'http://portal.example' }, true)).toBe(
      false,
    );
    expect(fromOwnOrigin({ host, origin: 'ftp://127.0.0.1:8080' }, false)).toBe(false);
  });
});
