import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { ECHO_BODY, startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { htpasswdHash, PHP_WRITTEN } from '../support/foreign-hashes.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { putUser, seedKey, uniquePrefix } from '../support/seed-redis.js';
import { JSON_TYPE, send } from '../support/send.js';

// Hashes other writers put in Redis ($2y$ from htpasswd and PHP), through the whole path of
// a gateway process: the Basic check of a proxied request and the password exchange.

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

describe('a $2y$ hash written by another tool', () => {
  it('lets the pair whose hash htpasswd -nbBC 10 wrote through with 200', async () => {
    const answer = await send(gateway.url, '/accounts', {
      headers: { authorization: basicHeader(HTPASSWD_PAIR.key, HTPASSWD_PAIR.secret) },
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual(ECHO_BODY);
  });

  it('issues a token to the user whose password hash PHP wrote', async () => {
    const answer = await send(gateway.url, '/auth/token', {
      method: 'POST',
      headers: JSON_TYPE,
      body: JSON.stringify({ username: PHP_USER.username, password: PHP_USER.password }),
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ data: [{ token_type: 'Bearer' }] });
  });
});
