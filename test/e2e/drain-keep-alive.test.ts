import { Agent, request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { pollStatus } from '../support/poll-status.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';

// A SIGTERM under keep-alive load loses nothing (issue 15): every request a client wrote
// gets a whole response, because every response from the signal on says `Connection: close`
// and no idle connection is closed under a client that may be writing its next request.
// The test plays the load balancer too: once /readyz answers 503 it sends no new
// connection here, and the gateway accepts them for `server.shutdownDelayMs` until then.
// (A connection still in the kernel's accept queue when the listener closes is reset by
// the kernel: only a balancer that stopped sending in time avoids that.) Any error on a
// request written, and any refused connection, is a failure.

const KEY = 'ak_drain_keep_alive';
const SECRET = 's3cret-drain-keep-alive';
const CLIENTS = 16;
/** Answers seen before the signal: the load is running on every connection by then. */
const ANSWERS_BEFORE_SIGNAL = 160;

interface ClientTally {
  answers: number;
  closeAnswers: number;
  /** Requests written that got no whole response: a reset, a hang-up, a cut body. */
  lost: string[];
}

/**
 * One keep-alive connection at a time, requests back to back, until the connection closes
 * after the balancer stopped routing here (`routed()` false).
 */
async function runClient(
  url: string,
  authorization: string,
  tally: ClientTally,
  hooks: { onAnswer: () => void; routed: () => boolean },
): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let connectionClosed = false;
  try {
    while (!(connectionClosed && !hooks.routed())) {
      await new Promise<void>((resolve) => {
        const req = request(`${url}/accounts`, { agent, headers: { authorization } }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('error', (error) => {
            tally.lost.push(`body: ${error.message}`);
            connectionClosed = true;
            resolve();
          });
          res.on('end', () => {
            if (res.statusCode !== 200 || !body.includes('"result"'))
              tally.lost.push(`answer ${String(res.statusCode)}: ${body}`);
            tally.answers += 1;
            connectionClosed = res.headers.connection === 'close';
            if (connectionClosed) tally.closeAnswers += 1;
            hooks.onAnswer();
            resolve();
          });
        });
        req.on('error', (error: NodeJS.ErrnoException) => {
          const connection = req.reusedSocket ? 'kept-alive' : 'new';
          tally.lost.push(`request on a ${connection} connection: ${error.code ?? error.message}`);
          connectionClosed = true;
          resolve();
        });
        req.end();
      });
    }
  } finally {
    agent.destroy();
  }
}

describe('SIGTERM under keep-alive load', () => {
  const prefix = uniquePrefix('drain-keep-alive');
  let upstream: EchoUpstream;
  let gateway: GatewayProcess | undefined;

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'alice' });
  });

  afterEach(() => {
    const child = gateway?.child;
    gateway = undefined;
    if (child !== undefined && child.exitCode === null && child.signalCode === null)
      child.kill('SIGKILL');
  });

  afterAll(async () => {
    await upstream?.close();
  });

  async function loadThenSigterm(extraArgs: string[]): Promise<void> {
    const started = await startGateway(
      gatewayYaml({
        upstreamUrl: upstream.url,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
        // A delay long enough for the balancer below to see /readyz answer 503.
        config: { server: { shutdownDelayMs: 1_000, drainTimeoutMs: 20_000 } },
      }),
      extraArgs,
    );
    gateway = started;
    const exited = new Promise<number | null>((resolve) =>
      started.child.once('exit', (code) => resolve(code)),
    );
    let answers = 0;
    let routed = true;
    const adminUrl = started.adminUrl ?? '';
    const onAnswer = (): void => {
      answers += 1;
      if (answers !== ANSWERS_BEFORE_SIGNAL) return;
      started.child.kill('SIGTERM');
      void pollStatus(() => fetch(`${adminUrl}/readyz`), 503).then(() => (routed = false));
    };
    const tallies = Array.from({ length: CLIENTS }, (): ClientTally => ({
      answers: 0,
      closeAnswers: 0,
      lost: [],
    }));
    await Promise.all(
      tallies.map((tally) =>
        runClient(started.url, basicHeader(KEY, SECRET), tally, {
          onAnswer,
          routed: () => routed,
        }),
      ),
    );

    expect(tallies.flatMap((tally) => tally.lost)).toEqual([]);
    expect(answers).toBeGreaterThan(ANSWERS_BEFORE_SIGNAL);
    // Each client left its last connection only because an answer told it to close.
    for (const tally of tallies) expect(tally.closeAnswers).toBeGreaterThan(0);
    expect(await exited).toBe(0);
  }

  it('one process: every request written gets a whole response, none is reset, exit 0', async () => {
    await loadThenSigterm([]);
  });

  it('--workers 2: every request written gets a whole response, none is reset, exit 0', async () => {
    await loadThenSigterm(['--workers', '2']);
  });
});
