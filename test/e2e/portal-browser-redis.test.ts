import bcrypt from 'bcrypt';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { chromiumInstalled, NO_CHROMIUM, useChromium } from '../support/chromium.js';
import { pollStatus } from '../support/poll-status.js';
import {
  accountsWith,
  createPair,
  PORTAL,
  revokePair,
  rowOf,
  signIn,
  untilHeading,
  type NewPair,
} from '../support/portal-pages.js';
import { redisConfig } from '../support/redis-config.js';
import { startRedisGateway, type RedisGateway } from '../support/redis-gateway.js';
import { openRedisStore } from '../support/redis-store.js';
import { putUser, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { basicHeader } from '../support/basic-header.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// The portal in Chromium on the Redis store with two gateway processes (issue 27, "Done
// when"): a pair made in one gateway's page works on the other, a revoke in one ends it on
// both, and the session (kept in Redis) opens the pages of either. Both gateways listen on
// 127.0.0.1, so the browser sends the one session cookie to both (cookies do not tell ports
// apart).

const installed = chromiumInstalled();
if (!installed) console.warn(NO_CHROMIUM);

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('portal2');
const HOLDER = {
  username: 'hana',
  subject: 'hana-subject',
  password: 'hana-password-0123',
  scopes: ['accounts:read'],
};

describe.skipIf(!installed)('the portal in Chromium, on Redis with two gateways', () => {
  const browser = useChromium();
  let a: RedisGateway;
  let b: RedisGateway;

  beforeAll(async () => {
    await putUser(redisUrl, prefix, HOLDER);
    // A revoked pair would stay accepted for this long from a cache without the announcement.
    const config = { auth: { basic: { cache: { ttlSec: 300 } } } };
    [a, b] = await Promise.all([
      startRedisGateway(redisUrl, prefix, config),
      startRedisGateway(redisUrl, prefix, config),
    ]);
    await untilSubscribers(redisUrl, prefix, 2);
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  async function inContext(use: (context: BrowserContext, page: Page) => Promise<void>) {
    const context = await browser().newContext();
    try {
      await use(context, await context.newPage());
    } finally {
      await context.close();
    }
  }

  /** Requests until the gateway refuses the pair; the revocation's announcement, not a TTL. */
  const untilRefused = (gateway: RedisGateway, pair: NewPair) =>
    pollStatus(
      () =>
        fetch(`${gateway.gateway.url}/accounts`, {
          headers: { authorization: basicHeader(pair.key, pair.secret) },
        }),
      401,
      { deadlineMs: 10_000, intervalMs: 50 },
    );

  it("makes a pair in one gateway's page that works on the other; a revoke in the other's page ends it on both", async () => {
    await inContext(async (_context, page) => {
      await signIn(page, a.gateway.url, HOLDER);
      const pair = await createPair(page, 'two gateways');
      for (const gateway of [a, b])
        expect((await accountsWith(gateway.gateway.url, pair)).status).toBe(200);

      // The session is in Redis: gateway B's list shows the pair made through A.
      await page.goto(`${b.gateway.url}${PORTAL}`);
      await untilHeading(page, 'Your key pairs');
      expect(await rowOf(page, pair.key).innerText()).toContain('Active');
      await revokePair(page, pair.key);
      expect(await rowOf(page, pair.key).innerText()).toContain('Revoked');

      expect((await accountsWith(b.gateway.url, pair)).status).toBe(401);
      // A verified it (and cached it for 300 s) before: only the announcement ends it there.
      expect((await untilRefused(a, pair)).answer.status).toBe(401);
      await page.goto(`${a.gateway.url}${PORTAL}`);
      expect(await rowOf(page, pair.key).innerText()).toContain('Revoked');
    });
  });

  it("ends the session on both gateways when the user's password changes", async () => {
    await inContext(async (_context, page) => {
      await signIn(page, a.gateway.url, HOLDER);
      await page.goto(`${b.gateway.url}${PORTAL}`);
      await untilHeading(page, 'Your key pairs');
      // As `users passwd` changes it: the store's setUserPassword, which ends the user's sessions.
      const store = openRedisStore(redisConfig(redisUrl, prefix));
      try {
        const hash = await bcrypt.hash(HOLDER.password, TEST_BCRYPT_COST);
        expect(await store.setUserPassword(HOLDER.username, hash)).toBe(true);
      } finally {
        await store.close();
      }
      for (const gateway of [a, b]) {
        await page.goto(`${gateway.gateway.url}${PORTAL}`);
        await untilHeading(page, 'Sign in');
      }
    });
  });
});
