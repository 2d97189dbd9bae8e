import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearerHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { generateSigningKey } from '../support/generate-signing-key.js';
import { pollStatus } from '../support/poll-status.js';
import { killCliChildren, runCli } from '../support/run-cli.js';
import { putUser, uniquePrefix } from '../support/seed-redis.js';
import { issueToken, JSON_TYPE, send } from '../support/send.js';
import { untilSubscribers } from '../support/until-subscribers.js';

// A token the gateway issued stops working when its user's password changes or the user is
// removed: on proxied routes and at POST /keys alike, not only at `exp`. A token never seen
// by the gateway is refused at once (its user is read at verification); a cached one once the
// store's announcement reaches the gateway.

const redisUrl = inject('redisUrl');
const prefix = uniquePrefix('tokuser');
let upstream: EchoUpstream;
let gateway: GatewayProcess;
let cliConfig: string;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  const signing = await generateSigningKey();
  const yaml = gatewayYaml({
    upstreamUrl: upstream.url,
    redis: { url: redisUrl, keyPrefix: prefix },
    signingKeyPem: signing.pem,
  });
  cliConfig = writeConfig(yaml);
  gateway = await startGateway(yaml);
  await untilSubscribers(redisUrl, prefix, 1);
});

afterEach(() => killCliChildren());

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

const cli = (args: string[], stdin?: string) =>
  runCli([...args, '--config', cliConfig], stdin === undefined ? {} : { stdin });

const accounts = (token: string) =>
  send(gateway.url, '/accounts', { headers: { authorization: bearerHeader(token) } });

const createKey = (token: string) =>
  send(gateway.url, '/keys', {
    method: 'POST',
    headers: { ...JSON_TYPE, authorization: bearerHeader(token) },
    body: JSON.stringify({ label: 'after' }),
  });

/** Until the cached token is refused: the store's announcement is heard asynchronously. */
const refusedOnce = (token: string) =>
  pollStatus(
    () => fetch(`${gateway.url}/accounts`, { headers: { authorization: bearerHeader(token) } }),
    401,
    {
      deadlineMs: 10_000,
      intervalMs: 20,
    },
  );

describe('tokens issued before a user change', () => {
  it('refuses the tokens issued before users passwd with 401 invalid_token, and accepts a new one', async () => {
    await putUser(redisUrl, prefix, {
      username: 'pia',
      subject: 'subject-pia',
      password: 'pia-old-password',
    });
    const cached = await issueToken(gateway.url, 'pia', 'pia-old-password');
    const unseen = await issueToken(gateway.url, 'pia', 'pia-old-password');
    expect((await accounts(cached)).status).toBe(200);

    const changed = await cli(['users', 'passwd', 'pia'], 'pia-new-password\n');
    expect(changed.code).toBe(0);

    expectGatewayError(await accounts(unseen), 'invalid_token');
    expectGatewayError((await refusedOnce(cached)).answer, 'invalid_token');
    expectGatewayError(await createKey(unseen), 'invalid_token');

    const fresh = await issueToken(gateway.url, 'pia', 'pia-new-password');
    expect((await accounts(fresh)).status).toBe(200);
    expect((await createKey(fresh)).status).toBe(201);
  });

  it('refuses the tokens of a removed user with 401 invalid_token, on POST /keys too', async () => {
    await putUser(redisUrl, prefix, {
      username: 'rex',
      subject: 'subject-rex',
      password: 'rex-password-1',
    });
    const cached = await issueToken(gateway.url, 'rex', 'rex-password-1');
    const unseen = await issueToken(gateway.url, 'rex', 'rex-password-1');
    expect((await accounts(cached)).status).toBe(200);

    expect((await cli(['users', 'remove', 'rex'])).code).toBe(0);

    expectGatewayError(await accounts(unseen), 'invalid_token');
    expectGatewayError((await refusedOnce(cached)).answer, 'invalid_token');
    expectGatewayError(await createKey(cached), 'invalid_token');
    expectGatewayError(await createKey(unseen), 'invalid_token');
  });
});
