import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { basicHeader } from '../support/basic-header.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from '../support/gateway-yaml.js';
import { send } from '../support/send.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { codeBlocks, readDoc } from '../support/markdown.js';

// The prefix-route example of docs/api.md, pasted as it is over the built-in upstream, answers
// GET /accounts/{id} with the subject's account (a newcomer tries it on `npm start`'s
// reference service first).

const DOC = readDoc('docs/api.md');
const SECTION = DOC.slice(DOC.indexOf('**Prefix routes.**'));
const ROUTES = codeBlocks(SECTION, 'yaml').find((block) => block.startsWith('routes:'));

const prefix = uniquePrefix('prefix-builtin');
const KEY = 'ak_prefix_builtin';
const SECRET = 's3cret-prefix-builtin';
const ACCOUNT = { id: 1, name: 'Main trading account', currency: 'USD' };

describe("docs/api.md's prefix route over the built-in upstream", () => {
  let gateway: GatewayProcess;

  beforeAll(async () => {
    await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'demo' });
    const { routes } = parse(ROUTES ?? '') as Pick<GatewayConfigInput, 'routes'>;
    gateway = await startGateway(
      gatewayYaml({
        upstreamUrl: 'builtin',
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
        config: {
          admin: { enabled: false },
          routes,
          referenceUpstream: { accounts: { demo: [ACCOUNT, { id: 2 }] } },
        },
      }),
    );
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('answers GET /accounts/1 with that account of the subject, in the envelope', async () => {
    const answer = await send(gateway.url, '/accounts/1', {
      headers: { authorization: basicHeader(KEY, SECRET) },
    });
    expect([answer.status, answer.json]).toEqual([
      200,
      {
        result: 'success',
        status: 200,
        meta: { count: 1, limit: 1000, order: 'desc', last_id: 1 },
        data: [ACCOUNT],
      },
    ]);
  });
});
