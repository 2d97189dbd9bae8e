import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startInProcessGateway, type RunningGateway } from '../support/in-process-gateway.js';
import { fieldValue, PortalClient, textOf } from '../support/portal-client.js';
import { redisConfig } from '../support/redis-config.js';
import { openRedisStore } from '../support/redis-store.js';
import { putUser, removeUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// The key holder's pages driven over HTTP as a browser would (a cookie jar, forms, the page's
// Origin), on a gateway in this process over the run's Redis: sign in, list, create (the
// secret works, a reload shows it no more), revoke, CSRF refused, and every way a session ends.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('portal');
let upstream: EchoUpstream;
let gateway: RunningGateway;

const HOLLY = { username: 'holly', subject: 'holly-subject', password: 'holly-password-0123' };

beforeAll(async () => {
  upstream = await startEchoUpstream();
  await putUser(redisUrl, prefix, { ...HOLLY, scopes: ['accounts:read', 'keys:write'] });
  gateway = await startInProcessGateway({
    redisUrl,
    keyPrefix: prefix,
    upstreamUrl: upstream.url,
    // A lock, once reached, outlasts any test's few requests.
    config: { lockout: { initialLockSec: 60 } },
  });
});

afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

/** A browser signed in as `user` (whose password is right). */
async function signedIn(
  user: { username: string; password: string } = HOLLY,
): Promise<PortalClient> {
  const browser = new PortalClient(gateway.url);
  const answer = await browser.post('/portal/sign-in', user);
  expect(answer.status).toBe(303);
  expect(answer.headers.location).toBe('/portal/');
  return browser;
}

/** The CSRF token of the signed-in pages, read off the list's sign-out form. */
async function csrfOf(browser: PortalClient): Promise<string> {
  const token = fieldValue((await browser.get('/portal/')).body, 'csrf');
  if (token === undefined) throw new Error('no CSRF token on the list');
  return token;
}

/** Opens the create form and sends it: the answer, and the form's fields as sent. */
async function createPair(browser: PortalClient, fields: Record<string, string | string[]> = {}) {
  const form = (await browser.get('/portal/keys/new')).body;
  const sent = {
    csrf: fieldValue(form, 'csrf') ?? '',
    nonce: fieldValue(form, 'nonce') ?? '',
    label: 'ci <deploy>',
    expires_in: '604800',
    scopes: ['accounts:read'],
    ...fields,
  };
  return { answer: await browser.post('/portal/keys', sent), sent };
}

const accounts = (key: string, secret: string) =>
  send(gateway.url, '/accounts', { headers: { authorization: basicHeader(key, secret) } });

describe('the portal, signed out', () => {
  it('sends a visitor without a session to the sign-in form, every answer with its security headers', async () => {
    const browser = new PortalClient(gateway.url);
    const home = await browser.get('/portal/');
    expect(home.status).toBe(303);
    expect(home.headers.location).toBe('/portal/sign-in');
    const form = await browser.get('/portal/sign-in');
    expect(form.status).toBe(200);
    expect(form.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
      'content-security-policy':
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    });
    expect(form.body).toContain('id="sign-in-form"');
    const css = await browser.get('/portal/portal.css');
    expect([css.status, css.headers['content-type']]).toEqual([200, 'text/css; charset=utf-8']);
  });

  it('answers an unknown user and a wrong password with the same page, and sets no cookie', async () => {
    const browser = new PortalClient(gateway.url);
    const wrong = await browser.post('/portal/sign-in', {
      username: 'holly',
      password: 'not-it-0123',
    });
    const unknown = await browser.post('/portal/sign-in', {
      username: 'nobody',
      password: 'not-it-0123',
    });
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    expect(wrong.body.replace('value="holly"', 'value=""')).toBe(
      unknown.body.replace('value="nobody"', 'value=""'),
    );
    expect(textOf(wrong.body, 'form-error')).toBe('The username or the password is not right.');
    expect(wrong.headers['set-cookie']).toBeUndefined();
    expect(browser.cookieHeader()).toBe('');
  });

  it('counts failed sign-ins in the lockout of POST /auth/token, and refuses once it locks', async () => {
    await putUser(redisUrl, prefix, {
      username: 'lockme',
      subject: 'lockme',
      password: 'right-password-0123',
    });
    const browser = new PortalClient(gateway.url);
    const wrong = { username: 'lockme', password: 'wrong-password-0123' };
    for (let i = 0; i < 4; i += 1)
      expect((await browser.post('/portal/sign-in', wrong)).status).toBe(401);
    const token = await send(gateway.url, '/auth/token', {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify(wrong),
    });
    expect(token.status).toBe(401);
    const locked = await browser.post('/portal/sign-in', {
      ...wrong,
      password: 'right-password-0123',
    });
    expect(locked.status).toBe(429);
    expect(locked.headers['retry-after']).toMatch(/^\d+$/);
    expect(locked.body).toContain('id="sign-in-form"');
    expect(browser.cookieHeader()).toBe('');
  });

  it('refuses a sign-in posted from another origin, or with none', async () => {
    const browser = new PortalClient(gateway.url);
    for (const origin of ['http://evil.example', null]) {
      const answer = await browser.post('/portal/sign-in', HOLLY, { origin });
      expect(answer.status).toBe(403);
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(answer.headers['set-cookie']).toBeUndefined();
    }
  });

  it('answers errors with pages that give the request id, never the JSON envelope', async () => {
    const browser = new PortalClient(gateway.url);
    const missing = await browser.get('/portal/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(textOf(missing.body, 'request-id')).toBe(missing.headers['x-request-id']);
    const wrongMethod = await send(gateway.url, '/portal/', { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('GET, HEAD, POST');
    expect(wrongMethod.headers['content-type']).toBe('text/html; charset=utf-8');
    const notAForm = await send(gateway.url, '/portal/sign-in', {
      method: 'POST',
      headers: { ...JSON_TYPE, origin: gateway.url },
      body: '{}',
    });
    expect(notAForm.status).toBe(415);
    expect(notAForm.body).toContain('application/x-www-form-urlencoded');
  });
});

describe('the portal, signed in', () => {
  it('signs in with a new session id of its own, never one the browser brought', async () => {
    const browser = new PortalClient(gateway.url);
    const planted = `${'a'.repeat(5)}.${'b'.repeat(43)}`;
    browser.setCookie('ag_session', planted);
    const answer = await browser.post('/portal/sign-in', HOLLY);
    expect(answer.status).toBe(303);
    const set = String(answer.headers['set-cookie']);
    expect(set).toMatch(
      /^ag_session=[0-9a-f]{5}\.[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    expect(browser.cookie('ag_session')).not.toBe(planted);
    expect((await browser.get('/portal/')).status).toBe(200);
  });

  it('makes a pair whose secret is shown once and works, lists it, and shows it no more on a reload', async () => {
    const browser = await signedIn();
    const empty = await browser.get('/portal/');
    expect(empty.status).toBe(200);
    expect(empty.body).toContain('id="no-pairs"');
    const { answer, sent } = await createPair(browser);
    expect(answer.status).toBe(201);
    expect(answer.headers['cache-control']).toBe('no-store');
    const key = textOf(answer.body, 'new-key') ?? '';
    const secret = textOf(answer.body, 'secret') ?? '';
    expect(key).toMatch(/^ak_[0-9a-f]{5}_[0-9A-Za-z]{30}$/);
    expect(secret).toMatch(/^[0-9A-Za-z]{48}$/);
    expect((await accounts(key, secret)).status).toBe(200);

    // A reload sends the same form again: no secret, no second pair.
    const again = await browser.post('/portal/keys', sent);
    expect(again.status).toBe(409);
    expect(again.body).toContain('id="already-sent"');
    expect(again.body).not.toContain(secret);
    const list = await browser.get('/portal/');
    expect(list.body.match(/<tr id="pair-/g)).toHaveLength(1);
    expect(list.body).toContain(`id="pair-${key}"`);
    expect(list.body).toContain('ci &lt;deploy&gt;');
    expect(list.body).not.toContain(secret);
  });

  it('refuses scopes beyond the holder’s own (a tampered form: 403), and a bad label keeping the form usable', async () => {
    const browser = await signedIn();
    const { answer: beyond } = await createPair(browser, { scopes: ['admin'] });
    expect(beyond.status).toBe(403);
    const { answer: badLabel, sent } = await createPair(browser, { label: 'bad\u0007label' });
    expect(badLabel.status).toBe(400);
    expect(textOf(badLabel.body, 'form-error')).toContain('label must be');
    // The form's token was not spent by the refusal: the corrected form makes the pair.
    const fixed = await browser.post('/portal/keys', { ...sent, label: 'fixed' });
    expect(fixed.status).toBe(201);
  });

  it('refuses a form without the session’s CSRF token or from another origin', async () => {
    const browser = await signedIn();
    const form = (await browser.get('/portal/keys/new')).body;
    const fields = { csrf: fieldValue(form, 'csrf') ?? '', nonce: fieldValue(form, 'nonce') ?? '' };
    const noToken = await browser.post('/portal/keys', { nonce: fields.nonce });
    const wrongToken = await browser.post('/portal/keys', { ...fields, csrf: 'x'.repeat(43) });
    const otherOrigin = await browser.post('/portal/keys', fields, {
      origin: 'http://evil.example',
    });
    const noOrigin = await browser.post('/portal/keys', fields, { origin: null });
    for (const refused of [noToken, wrongToken, otherOrigin, noOrigin]) {
      expect(refused.status).toBe(403);
      expect(refused.headers['content-type']).toBe('text/html; charset=utf-8');
    }
    const signOut = await browser.post('/portal/sign-out', {});
    expect(signOut.status).toBe(403);
    // None of them changed anything: the form still makes its pair, the session still stands.
    expect((await browser.post('/portal/keys', fields)).status).toBe(201);
  });

  it('revokes a pair after its confirmation, the last active one only when confirmed, and it is refused at once', async () => {
    await putUser(redisUrl, prefix, {
      username: 'rita',
      subject: 'rita-subject',
      password: 'rita-password-0123',
    });
    const browser = await signedIn({ username: 'rita', password: 'rita-password-0123' });
    const { answer } = await createPair(browser, { scopes: [] });
    const key = textOf(answer.body, 'new-key') ?? '';
    const secret = textOf(answer.body, 'secret') ?? '';
    expect((await accounts(key, secret)).status).toBe(200);
    const confirm = await browser.get(`/portal/keys/${key}/revoke`);
    expect(confirm.status).toBe(200);
    const csrf = fieldValue(confirm.body, 'csrf') ?? '';
    const refused = await browser.post(`/portal/keys/${key}/revoke`, { csrf });
    expect(refused.status).toBe(409);
    expect(refused.body).toContain('id="force"');
    expect((await accounts(key, secret)).status).toBe(200);
    const revoked = await browser.post(`/portal/keys/${key}/revoke`, { csrf, force: 'yes' });
    expect(revoked.status).toBe(303);
    expect(revoked.headers.location).toBe('/portal/?notice=revoked');
    expect((await accounts(key, secret)).status).toBe(401);
    const list = await browser.get('/portal/?notice=revoked');
    expect(textOf(list.body, 'notice')).toBe('The key pair is revoked.');
    expect(list.body).toContain('status-revoked');
  });

  it("shows and revokes only the holder's own pairs: another subject's is not found", async () => {
    await seedKey(redisUrl, prefix, {
      key: 'ak_portal_other',
      secret: 'other-secret-0123456789',
      subject: 'someone-else',
    });
    const browser = await signedIn();
    const csrf = await csrfOf(browser);
    expect((await browser.get('/portal/keys/ak_portal_other/revoke')).status).toBe(404);
    expect(
      (await browser.post('/portal/keys/ak_portal_other/revoke', { csrf, force: 'yes' })).status,
    ).toBe(404);
    expect((await accounts('ak_portal_other', 'other-secret-0123456789')).status).toBe(200);
    expect((await browser.get('/portal/')).body).not.toContain('ak_portal_other');
  });
});

describe('rolling a pair in the portal', () => {
  const ROLF = { username: 'rolf', subject: 'rolf-subject', password: 'rolf-password-0123' };

  beforeAll(async () => {
    await putUser(redisUrl, prefix, { ...ROLF, scopes: ['accounts:read'] });
  });

  /** Makes a pair, opens its roll page and sends it with `overlap`: the answer and the form. */
  async function roll(browser: PortalClient, overlap: string) {
    const { answer: made } = await createPair(browser, { label: 'to <roll>' });
    const old = {
      key: textOf(made.body, 'new-key') ?? '',
      secret: textOf(made.body, 'secret') ?? '',
    };
    const page = await browser.get(`/portal/keys/${old.key}/roll`);
    expect(page.status).toBe(200);
    const sent = {
      csrf: fieldValue(page.body, 'csrf') ?? '',
      nonce: fieldValue(page.body, 'nonce') ?? '',
      overlap_sec: overlap,
    };
    const answer = await browser.post(`/portal/keys/${old.key}/roll`, sent);
    return { old, page, sent, answer };
  }

  it('offers a roll from the row, and answers with the new secret once: both pairs work during the overlap', async () => {
    const browser = await signedIn(ROLF);
    const { old, page, sent, answer } = await roll(browser, '3600');
    expect(page.body).toMatch(/<option value="3600" selected/);
    expect((await browser.get('/portal/')).body).toContain(`href="/portal/keys/${old.key}/roll"`);
    expect(answer.status).toBe(201);
    expect(answer.headers['cache-control']).toBe('no-store');
    const key = textOf(answer.body, 'new-key') ?? '';
    const secret = textOf(answer.body, 'secret') ?? '';
    expect(key).toMatch(/^ak_[0-9a-f]{5}_[0-9A-Za-z]{30}$/);
    expect(key).not.toBe(old.key);
    expect(textOf(answer.body, 'rolled-key')).toBe(old.key);
    const end = /id="rolled-end">keeps working until <time datetime="([^"]+)"/.exec(
      answer.body,
    )?.[1];
    expect(Date.parse(end ?? '') - Date.now()).toBeGreaterThan(3_500_000);
    expect(Date.parse(end ?? '') - Date.now()).toBeLessThanOrEqual(3_600_000);
    expect((await accounts(key, secret)).status).toBe(200);
    expect((await accounts(old.key, old.secret)).status).toBe(200);

    // A reload sends the same form again: no secret, no second roll.
    const again = await browser.post(`/portal/keys/${old.key}/roll`, sent);
    expect(again.status).toBe(409);
    expect(again.body).toContain('id="already-sent"');
    expect(again.body).not.toContain(secret);
    const list = (await browser.get('/portal/')).body;
    expect(list).toContain(`id="pair-${key}"`);
    // The rolled pair and its successor: no second roll.
    expect(list.match(/<tr id="pair-/g)).toHaveLength(2);
    expect(list).not.toContain(secret);
  });

  it('with no overlap, ends the old pair at once: 401', async () => {
    const browser = await signedIn(ROLF);
    const { old, answer } = await roll(browser, '0');
    expect(answer.status).toBe(201);
    expect(textOf(answer.body, 'rolled-end')).toMatch(/^has ended/);
    expect((await accounts(old.key, old.secret)).status).toBe(401);
    const key = textOf(answer.body, 'new-key') ?? '';
    expect((await accounts(key, textOf(answer.body, 'secret') ?? '')).status).toBe(200);
    // An ended pair has no roll: its page and its form are 409 pages.
    expect((await browser.get('/portal/')).body).not.toContain(
      `href="/portal/keys/${old.key}/roll"`,
    );
    const ended = await browser.get(`/portal/keys/${old.key}/roll`);
    expect(ended.status).toBe(409);
    expect(ended.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(ended.body).toContain('Only a usable key pair can be rolled');
    const form = await browser.get(`/portal/keys/${key}/roll`);
    const posted = await browser.post(`/portal/keys/${old.key}/roll`, {
      csrf: fieldValue(form.body, 'csrf') ?? '',
      nonce: fieldValue(form.body, 'nonce') ?? '',
      overlap_sec: '0',
    });
    expect(posted.status).toBe(409);
    expect(posted.body).toContain('Only a usable key pair can be rolled');
    await browser.post(`/portal/keys/${key}/revoke`, { csrf: await csrfOf(browser), force: 'yes' });
  });

  it('refuses an overlap it does not offer, keeping the form usable', async () => {
    const browser = await signedIn(ROLF);
    const { old, sent, answer } = await roll(browser, '86401');
    expect(answer.status).toBe(400);
    expect(textOf(answer.body, 'form-error')).toContain('Choose one of the overlaps');
    expect((await accounts(old.key, old.secret)).status).toBe(200);
    const fixed = await browser.post(`/portal/keys/${old.key}/roll`, {
      ...sent,
      overlap_sec: '300',
    });
    expect(fixed.status).toBe(201);
  });

  it('refuses a roll without the CSRF token or from another origin, and rolls nothing', async () => {
    const browser = await signedIn(ROLF);
    const { answer: made } = await createPair(browser);
    const key = textOf(made.body, 'new-key') ?? '';
    const secret = textOf(made.body, 'secret') ?? '';
    const page = await browser.get(`/portal/keys/${key}/roll`);
    const fields = {
      csrf: fieldValue(page.body, 'csrf') ?? '',
      nonce: fieldValue(page.body, 'nonce') ?? '',
      overlap_sec: '0',
    };
    const path = `/portal/keys/${key}/roll`;
    const refused = [
      await browser.post(path, { ...fields, csrf: '' }),
      await browser.post(path, { ...fields, csrf: 'x'.repeat(43) }),
      await browser.post(path, fields, { origin: 'http://evil.example' }),
      await browser.post(path, fields, { origin: null }),
    ];
    for (const answer of refused) {
      expect(answer.status).toBe(403);
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
    }
    expect((await accounts(key, secret)).status).toBe(200);
    expect((await browser.post(path, fields)).status).toBe(201);
    expect((await accounts(key, secret)).status).toBe(401);
  });

  it("rolls only the holder's own pairs: another subject's is not found", async () => {
    await seedKey(redisUrl, prefix, {
      key: 'ak_portal_roll_other',
      secret: 'other-secret-0123456789',
      subject: 'someone-else',
    });
    const browser = await signedIn(ROLF);
    expect((await browser.get('/portal/keys/ak_portal_roll_other/roll')).status).toBe(404);
    const form = (await browser.get('/portal/keys/new')).body;
    const posted = await browser.post('/portal/keys/ak_portal_roll_other/roll', {
      csrf: fieldValue(form, 'csrf') ?? '',
      nonce: fieldValue(form, 'nonce') ?? '',
      overlap_sec: '0',
    });
    expect(posted.status).toBe(404);
    expect(posted.headers['content-type']).toBe('text/html; charset=utf-8');
    expect((await accounts('ak_portal_roll_other', 'other-secret-0123456789')).status).toBe(200);
  });
});

describe('rolling a pair in the portal at the cap (keys.maxActivePerSubject)', () => {
  it('refuses the roll with a 422 page, and both pairs stay as they were', async () => {
    const capped = await startInProcessGateway({
      redisUrl,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      config: { keys: { maxActivePerSubject: 1 } },
    });
    try {
      const user = { username: 'cappy', subject: 'cappy-subject', password: 'cappy-password-0123' };
      await putUser(redisUrl, prefix, user);
      // Two active pairs, put past the cap of 1 by the store's own hand.
      for (const key of ['ak_portal_cap_a', 'ak_portal_cap_b'])
        await seedKey(redisUrl, prefix, {
          key,
          secret: `${key}-secret-0123`,
          subject: user.subject,
        });
      const browser = new PortalClient(capped.url);
      expect((await browser.post('/portal/sign-in', user)).status).toBe(303);
      const page = await browser.get('/portal/keys/ak_portal_cap_a/roll');
      expect(page.status).toBe(200);
      const answer = await browser.post('/portal/keys/ak_portal_cap_a/roll', {
        csrf: fieldValue(page.body, 'csrf') ?? '',
        nonce: fieldValue(page.body, 'nonce') ?? '',
        overlap_sec: '0',
      });
      expect(answer.status).toBe(422);
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(answer.body).toContain('The maximum number of active key pairs is reached');
      expect(answer.body).not.toContain('id="secret"');
      const check = (key: string) =>
        send(capped.url, '/accounts', {
          headers: { authorization: basicHeader(key, `${key}-secret-0123`) },
        });
      expect((await check('ak_portal_cap_a')).status).toBe(200);
      expect((await check('ak_portal_cap_b')).status).toBe(200);
    } finally {
      await capped.close();
    }
  });
});

describe('the end of a session', () => {
  it('comes with a sign-out: the cookie is cleared and the old one no longer signs in', async () => {
    const browser = await signedIn();
    const cookie = browser.cookieHeader();
    const out = await browser.post('/portal/sign-out', { csrf: await csrfOf(browser) });
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/portal/sign-in');
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    const replayed = await send(gateway.url, '/portal/', { headers: { cookie } });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.location).toBe('/portal/sign-in');
  });

  it('comes with a new sign-in from the same browser: the session it carried ends', async () => {
    const browser = await signedIn();
    const cookie = browser.cookieHeader();
    const again = await browser.post('/portal/sign-in', HOLLY);
    expect(again.status).toBe(303);
    expect(browser.cookieHeader()).not.toBe(cookie);
    const replayed = await send(gateway.url, '/portal/', { headers: { cookie } });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.location).toBe('/portal/sign-in');
    expect((await browser.get('/portal/')).status).toBe(200);
  });

  it('comes with a new password of the user', async () => {
    await putUser(redisUrl, prefix, {
      username: 'pat',
      subject: 'pat-subject',
      password: 'pat-password-0123',
    });
    const browser = await signedIn({ username: 'pat', password: 'pat-password-0123' });
    expect((await browser.get('/portal/')).status).toBe(200);
    const store = openRedisStore(redisConfig(redisUrl, prefix));
    try {
      expect(
        await store.setUserPassword(
          'pat',
          '$2b$04$C6UzMDM.H6dfI/f/IKxGhuSb8c6lrC7nBFi4aVHKpbnWlhVuZ4Vsq',
        ),
      ).toBe(true);
    } finally {
      await store.close();
    }
    expect((await browser.get('/portal/')).status).toBe(303);
  });

  it('comes with the removal of the user', async () => {
    await putUser(redisUrl, prefix, {
      username: 'ray',
      subject: 'ray-subject',
      password: 'ray-password-0123',
    });
    const browser = await signedIn({ username: 'ray', password: 'ray-password-0123' });
    expect((await browser.get('/portal/')).status).toBe(200);
    expect(await removeUser(redisUrl, prefix, 'ray')).toBe(true);
    const after = await browser.get('/portal/');
    expect(after.status).toBe(303);
    expect(after.headers.location).toBe('/portal/sign-in');
  });
});

describe('the lifetimes of a session (portal.idleTimeoutSec 1800 and absoluteTimeoutSec 43200, the defaults)', () => {
  it('ends a session not seen for the idle time, moves its end on at each visit, and ends any at the absolute one', async () => {
    let clock = Date.now();
    const timed = await startInProcessGateway({
      redisUrl,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      now: () => clock,
    });
    const minutes = (n: number): void => {
      clock += n * 60_000;
    };
    try {
      const browser = new PortalClient(timed.url);
      expect((await browser.post('/portal/sign-in', HOLLY)).status).toBe(303);
      // Seen at 20 and 40 minutes: each visit moves the idle end 30 minutes on.
      minutes(20);
      expect((await browser.get('/portal/')).status).toBe(200);
      minutes(20);
      expect((await browser.get('/portal/')).status).toBe(200);
      minutes(31);
      const idle = await browser.get('/portal/');
      expect(idle.status).toBe(303);
      expect(idle.headers.location).toBe('/portal/sign-in');

      // Seen every 25 minutes, a session still ends 12 hours after its sign-in.
      expect((await browser.post('/portal/sign-in', HOLLY)).status).toBe(303);
      for (let seen = 25; seen < 12 * 60; seen += 25) {
        minutes(25);
        expect((await browser.get('/portal/')).status).toBe(200);
      }
      minutes(25);
      expect((await browser.get('/portal/')).status).toBe(303);
    } finally {
      await timed.close();
    }
  });
});

describe('the portal behind a proxy that terminates TLS (portal.secureCookie: always)', () => {
  it('sets a __Host- cookie with Secure, and refuses forms from a plain-http origin', async () => {
    const tls = await startInProcessGateway({
      redisUrl,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      config: { portal: { secureCookie: 'always' } },
    });
    try {
      const browser = new PortalClient(tls.url);
      const https = `https://${new URL(tls.url).host}`;
      expect((await browser.post('/portal/sign-in', HOLLY)).status).toBe(403);
      const answer = await browser.post('/portal/sign-in', HOLLY, { origin: https });
      expect(answer.status).toBe(303);
      expect(String(answer.headers['set-cookie'])).toMatch(
        /^__Host-ag_session=[0-9a-f]{5}\.[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Secure$/,
      );
      expect((await browser.get('/portal/')).status).toBe(200);
    } finally {
      await tls.close();
    }
  });
});

describe('the portal turned off', () => {
  it('serves none of its paths', async () => {
    const off = await startInProcessGateway({
      redisUrl,
      keyPrefix: prefix,
      upstreamUrl: upstream.url,
      config: { portal: { enabled: false } },
    });
    try {
      const answer = await send(off.url, '/portal/sign-in');
      expect(answer.status).toBe(404);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    } finally {
      await off.close();
    }
  });
});
