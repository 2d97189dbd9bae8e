import { describe, expect, it } from 'vitest';
import { capturedLog as capture } from '../../support/captured-log.js';

const BASIC = 'Basic YWtfbGVha2VkOnN1cGVyLXNlY3JldC12YWx1ZQ==';
const SECRET = 'super-secret-value-0123456789';

describe('createLogger redaction', () => {
  it('redacts credentials at the top level', () => {
    const { logger, lines, text } = capture();
    logger.info(
      {
        headers: { authorization: BASIC, cookie: `sid=${SECRET}`, accept: 'application/json' },
        secret: SECRET,
        password: SECRET,
        access_token: SECRET,
      },
      'top level',
    );
    expect(lines()[0]).toMatchObject({
      headers: { authorization: '[redacted]', cookie: '[redacted]', accept: 'application/json' },
      secret: '[redacted]',
      password: '[redacted]',
      access_token: '[redacted]',
      msg: 'top level',
    });
    expect(text()).not.toContain(SECRET);
    expect(text()).not.toContain(BASIC);
  });

  it('redacts credentials one level down, as in a logged request, user or token', () => {
    const { logger, lines, text } = capture();
    logger.warn(
      {
        req: {
          method: 'GET',
          headers: {
            authorization: BASIC,
            'proxy-authorization': BASIC,
            cookie: `sid=${SECRET}`,
            'set-cookie': [`sid=${SECRET}`],
            host: 'gateway.example',
          },
        },
        res: { headers: { 'set-cookie': `sid=${SECRET}` } },
        x: { password: SECRET, username: 'alice' },
        pair: { key: 'ak_public', secret: SECRET },
        token: { access_token: SECRET, refresh_token: SECRET, token_type: 'Bearer' },
        upstream: { authorization: BASIC },
      },
      'nested',
    );
    expect(lines()[0]).toMatchObject({
      req: {
        method: 'GET',
        headers: {
          authorization: '[redacted]',
          'proxy-authorization': '[redacted]',
          cookie: '[redacted]',
          'set-cookie': '[redacted]',
          host: 'gateway.example',
        },
      },
      res: { headers: { 'set-cookie': '[redacted]' } },
      x: { password: '[redacted]', username: 'alice' },
      pair: { key: 'ak_public', secret: '[redacted]' },
      token: { access_token: '[redacted]', refresh_token: '[redacted]', token_type: 'Bearer' },
      upstream: { authorization: '[redacted]' },
    });
    expect(text()).not.toContain(SECRET);
    expect(text()).not.toContain(BASIC);
  });

  it('leaves the logged object itself untouched', () => {
    const { logger } = capture();
    const logged = { req: { headers: { authorization: BASIC } } };
    logger.info(logged, 'kept');
    expect(logged.req.headers.authorization).toBe(BASIC);
  });
});
