import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { RedisConfig } from '../../../../src/config/config-schema.js';
import { deferred } from '../../../support/deferred.js';
import { recordingLog } from '../../../support/recording-log.js';
import { redisConfig } from '../../../support/redis-config.js';
import {
  classifyRedisError,
  redisAddress,
  redisSecrets,
  watchRedisConnection,
} from '../../../../src/backends/redis/client.js';

const BASE: RedisConfig = redisConfig('redis://127.0.0.1:6379', 'ag:');

const errno = (code: string, message: string): NodeJS.ErrnoException =>
  Object.assign(new Error(message), { code });

function watched(
  options: { secrets?: string[]; diagnose?: () => Promise<Error | undefined> } = {},
) {
  const client = new EventEmitter();
  const log = recordingLog();
  let clock = 1_000;
  const connection = watchRedisConnection(client, {
    address: 'redis://127.0.0.1:6379',
    secrets: options.secrets ?? [],
    log,
    settleWithinMs: 60_000,
    now: () => clock,
    diagnose: options.diagnose,
  });
  const changes: boolean[] = [];
  connection.onChange((ready) => changes.push(ready));
  return {
    client,
    log,
    connection,
    changes,
    advance: (ms: number) => (clock += ms),
  };
}

describe('redisAddress', () => {
  it('keeps scheme, host, port and database of a URL, never its password or query', () => {
    expect(
      redisAddress({ ...BASE, url: 'rediss://admin:s3cret@redis.internal:6380/2?password=s3cret' }),
    ).toBe('rediss://redis.internal:6380/2');
    expect(redisAddress({ ...BASE, url: 'redis://:pw@127.0.0.1:31379' })).toBe(
      'redis://127.0.0.1:31379',
    );
  });

  it('names the seed nodes of Sentinel and Cluster', () => {
    expect(
      redisAddress({
        ...BASE,
        mode: 'sentinel',
        sentinelName: 'accounts',
        nodes: ['10.0.0.1:26379', '10.0.0.2:26379'],
      }),
    ).toBe('sentinels 10.0.0.1:26379,10.0.0.2:26379 (master accounts)');
    expect(redisAddress({ ...BASE, mode: 'cluster', nodes: ['10.0.0.1:7000'] })).toBe(
      'cluster 10.0.0.1:7000',
    );
  });

  it('lists the URL’s password, as written and decoded, as the secret to keep out', () => {
    expect(redisSecrets({ ...BASE, url: 'redis://bob:p%40ss@127.0.0.1:6379' })).toEqual([
      'p%40ss',
      'p@ss',
    ]);
    expect(redisSecrets({ ...BASE, url: 'redis://bob:plain@127.0.0.1:6379' })).toEqual(['plain']);
    expect(redisSecrets(BASE)).toEqual([]);
  });
});

describe('classifyRedisError', () => {
  it.each([
    ['refused', errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:31379')],
    ['timeout', errno('ETIMEDOUT', 'connect ETIMEDOUT')],
    ['timeout', new Error('no answer within 300 ms')],
    ['auth', new Error('WRONGPASS invalid username-password pair or user is disabled.')],
    ['auth', new Error('NOAUTH HELLO must be called with the client already authenticated')],
    ['tls', errno('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate')],
    ['tls', errno('ERR_SSL_WRONG_VERSION_NUMBER', 'wrong version number')],
    [
      'tls',
      errno('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
    ],
    ['dns', errno('ENOTFOUND', 'getaddrinfo ENOTFOUND redis.internal')],
    ['reset', errno('ECONNRESET', 'read ECONNRESET')],
    ['closed', new Error('Connection is closed.')],
    ['protocol', new Error('Unknown RESP type 72 "H". Please report this.')],
    [
      'refused',
      Object.assign(new Error('Failed to refresh slots cache.'), {
        lastNodeError: errno('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:7000'),
      }),
    ],
    ['other', 'not an error'],
  ])('says %s for %s', (reason, error) => {
    expect(classifyRedisError(error)).toBe(reason);
  });
});

describe('watchRedisConnection', () => {
  it('logs a first failure once as unreachable, whatever the retries, then connected', () => {
    const { client, log, changes } = watched();
    for (let retry = 0; retry < 5; retry += 1) {
      client.emit('error', errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6379'));
      client.emit('close');
    }
    client.emit('ready');
    expect(log.lines).toEqual([
      {
        level: 'warn',
        store: 'redis',
        address: 'redis://127.0.0.1:6379',
        reason: 'refused',
        cause: 'connect ECONNREFUSED 127.0.0.1:6379',
        msg: 'redis unreachable',
      },
      { level: 'info', store: 'redis', address: 'redis://127.0.0.1:6379', msg: 'redis connected' },
    ]);
    expect(changes).toEqual([false, true]);
  });

  it('logs a lost connection and its return once each, with how long it was down', () => {
    const { client, log, connection, changes, advance } = watched();
    client.emit('ready');
    expect(connection.ready()).toBe(true);
    client.emit('error', errno('ECONNRESET', 'read ECONNRESET'));
    client.emit('close');
    expect(connection.ready()).toBe(false);
    advance(1_500);
    for (let retry = 0; retry < 5; retry += 1) {
      client.emit('error', errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6379'));
      client.emit('close');
    }
    client.emit('ready');
    expect(log.lines.map(({ msg, reason, down_ms }) => ({ msg, reason, down_ms }))).toEqual([
      { msg: 'redis connected', reason: undefined, down_ms: undefined },
      { msg: 'redis connection lost', reason: 'reset', down_ms: undefined },
      { msg: 'redis connection regained', reason: undefined, down_ms: 1_500 },
    ]);
    expect(changes).toEqual([true, false, true]);
  });

  it('says a loss without an error was a close by the server', () => {
    const { client, log } = watched();
    client.emit('ready');
    client.emit('close');
    expect(log.lines.at(-1)).toMatchObject({
      msg: 'redis connection lost',
      reason: 'closed',
      cause: 'connection closed by the server',
    });
  });

  it('counts the first error of a client that retries without closing (Sentinel) as unreachable', () => {
    const { client, log } = watched();
    client.emit(
      'error',
      new Error('All sentinels are unreachable. Last error: Connection is closed.'),
    );
    client.emit(
      'error',
      new Error('All sentinels are unreachable. Last error: Connection is closed.'),
    );
    expect(log.lines.map((line) => [line.msg, line.reason])).toEqual([
      ['redis unreachable', 'closed'],
    ]);
  });

  it('names the cause a diagnosis finds when the client says only that its connection closed (ioredis Cluster and Sentinel over TLS)', async () => {
    const found = deferred<Error | undefined>();
    const { client, log, connection, changes } = watched({ diagnose: () => found.promise });
    const slotsFailed = Object.assign(new Error('Failed to refresh slots cache.'), {
      lastNodeError: new Error('Connection is closed.'),
    });
    client.emit('error', slotsFailed);
    expect(changes).toEqual([false]);
    expect(log.lines).toEqual([]);
    found.resolve(
      errno('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
    );
    await connection.settled;
    // Later retries that say no more do not hide it.
    client.emit('error', slotsFailed);
    expect(log.lines.map(({ msg, reason, cause }) => ({ msg, reason, cause }))).toEqual([
      {
        msg: 'redis unreachable',
        reason: 'tls',
        cause: 'self-signed certificate in certificate chain',
      },
    ]);
    expect(connection.describe(new Error('Connection is closed.')).why).toBe(
      'unreachable, TLS failed (self-signed certificate in certificate chain)',
    );
  });

  it('asks no diagnosis when the client names its own cause, and keeps "closed" when the diagnosis finds none', async () => {
    let asked = 0;
    const diagnose = (): Promise<undefined> => {
      asked += 1;
      return Promise.resolve(undefined);
    };
    const refused = watched({ diagnose });
    refused.client.emit('error', errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6379'));
    expect(refused.log.lines.map((line) => line.reason)).toEqual(['refused']);
    expect(asked).toBe(0);
    const closed = watched({ diagnose });
    closed.client.emit('ready');
    closed.client.emit('close');
    expect(await closed.log.until('redis connection lost')).toMatchObject({ reason: 'closed' });
    expect(asked).toBe(1);
  });

  it('logs nothing once the store closes on purpose', () => {
    const { client, log, connection } = watched();
    client.emit('ready');
    connection.closing();
    client.emit('close');
    client.emit('end');
    expect(log.lines.map((line) => line.msg)).toEqual(['redis connected']);
  });

  it('never writes a secret of the configuration, in a line or a cause', () => {
    const { client, log, connection } = watched({ secrets: ['hunter2'] });
    client.emit('error', new Error('WRONGPASS for hunter2'));
    const cause = connection.describe(new Error('Reached the max retries per request limit'));
    expect(JSON.stringify(log.lines)).not.toContain('hunter2');
    expect(cause.message).toBe(
      'Redis redis://127.0.0.1:6379: unreachable, authentication failed (WRONGPASS for ***)',
    );
  });

  it('keeps every cause on one line, whatever the error says (OpenSSL ends its words in a newline)', () => {
    const { client, log, connection } = watched();
    client.emit('error', new Error('SSL routines::wrong version number\n'));
    const lines = log.lines as { cause?: string }[];
    expect(lines.map((line) => line.cause)).toEqual(['SSL routines::wrong version number']);
    expect(connection.describe(new Error('Connection is closed.')).message).not.toMatch(/\n/);
  });

  it('describes a failed operation by the connection while it is down, by the error while it is up', () => {
    const { client, connection } = watched();
    expect(connection.describe(new Error('Redis did not answer within 300 ms')).message).toBe(
      'Redis redis://127.0.0.1:6379: not connected, no answer yet (Redis did not answer within 300 ms)',
    );
    client.emit('ready');
    const timeout = connection.describe(new Error('no answer within 300 ms'));
    expect([timeout.name, timeout.message, timeout.why]).toEqual([
      'RedisUnavailable',
      'Redis redis://127.0.0.1:6379: no answer within 300 ms',
      'no answer within 300 ms',
    ]);
    client.emit('close');
    client.emit('error', errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6379'));
    expect(connection.describe(new Error('Connection is closed.')).message).toBe(
      'Redis redis://127.0.0.1:6379: unreachable, connection refused (connect ECONNREFUSED 127.0.0.1:6379)',
    );
  });

  it('settles on the first outcome, failure or success', async () => {
    const failing = watched();
    failing.client.emit('error', errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6379'));
    await failing.connection.settled;
    const working = watched();
    working.client.emit('ready');
    await working.connection.settled;
  });
});
