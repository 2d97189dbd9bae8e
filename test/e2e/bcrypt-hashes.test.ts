import bcrypt from 'bcrypt';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { HashOwner } from '../../src/credentials/credential-store.js';
import { redisLayout } from '../../src/backends/redis/layout.js';
import { basicHeader } from '../support/basic-header.js';
import { ECHO_BODY, startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { htpasswdHash, PHP_WRITTEN } from '../support/foreign-hashes.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { sample } from '../support/scrape-metric.js';
import { putUser, seedKey, TEST_BCRYPT_COST, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// Hashes other writers put in Redis ($2y$ at cost 10, from htpasswd and PHP), through the
// whole path of a gateway process at cost 4: the Basic check of a proxied request and the
// password exchange, each followed by the rewrite of the hash (rehash on use).

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('bcrypthashes');
const HTPASSWD_PAIR = {
  key: 'ak_htpasswd',
  secret: 'htpasswd-written secret 0123456789',
  subject: 'nginx-user',
};
const PHP_USER = { username: 'php-user', subject: 'php-subject', password: PHP_WRITTEN.secret };

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  await seedKey(redisUrl, prefix, {
    ...HTPASSWD_PAIR,
    secretHash: await htpasswdHash(HTPASSWD_PAIR.secret),
  });
  await putUser(redisUrl, prefix, { ...PHP_USER, passwordHash: PHP_WRITTEN.hash });
  gateway = await startGateway(
    gatewayYaml({
      upstreamUrl: upstream.url,
      redis: { url: redisUrl, keyPrefix: prefix },
      config: { logging: { level: 'info', requests: false } },
    }),
  );
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

/** The hash field Redis holds now. */
async function stored(key: string, field: string): Promise<string | null> {
  const redis = new Redis(redisUrl);
  try {
    return await redis.hget(key, field);
  } finally {
    redis.disconnect();
  }
}

/** gateway_bcrypt_rehashes_total of `kind` written, from the admin port. */
async function rehashes(kind: 'key' | 'user'): Promise<number> {
  const metrics = await (await fetch(`${gateway.adminUrl ?? ''}/metrics`)).text();
  return sample(metrics, `gateway_bcrypt_rehashes_total{kind="${kind}",outcome="written"}`);
}

/**
 * Once the success has been answered: the rehash of the $2y$ cost-10 hash is logged (with the
 * key id or username, never the secret) and counted, and Redis holds a $2b$ hash of the same
 * secret at the gateway's cost.
 */
async function expectRehashed(owner: HashOwner, secret: string): Promise<void> {
  const k = redisLayout(prefix);
  const [who, redisKey, field]: [Record<string, string>, string, string] =
    owner.kind === 'key'
      ? [{ key: owner.key }, k.key(owner.key, HTPASSWD_PAIR.subject), 'secret_hash']
      : [{ username: owner.username }, k.user(owner.username), 'password_hash'];
  expect(await gateway.waitForLog('bcrypt hash rehashed', who)).toMatchObject({
    level: 30,
    from_variant: '2y',
    from_cost: 10,
    outcome: 'written',
  });
  const hash = await stored(redisKey, field);
  expect(hash).toMatch(new RegExp(`^\\$2b\\$0${TEST_BCRYPT_COST}\\$`));
  await expect(bcrypt.compare(secret, hash ?? '')).resolves.toBe(true);
  expect(await rehashes(owner.kind)).toBe(1);
  expect(gateway.output()).not.toContain(secret);
}

describe('a $2y$ hash written by another tool', () => {
  it('lets the pair whose hash htpasswd -nbBC 10 wrote through with 200, then rewrites its hash at the configured cost as $2b$ and counts it', async () => {
    const answer = await send(gateway.url, '/accounts', {
      headers: { authorization: basicHeader(HTPASSWD_PAIR.key, HTPASSWD_PAIR.secret) },
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual(ECHO_BODY);

    await expectRehashed({ kind: 'key', key: HTPASSWD_PAIR.key }, HTPASSWD_PAIR.secret);
  });

  it('issues a token to the user whose password hash PHP wrote, then rewrites it at the configured cost as $2b$ and counts it', async () => {
    const answer = await send(gateway.url, '/auth/token', {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ username: PHP_USER.username, password: PHP_USER.password }),
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ data: [{ token_type: 'Bearer' }] });

    await expectRehashed({ kind: 'user', username: PHP_USER.username }, PHP_USER.password);
  });
});
