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
// Each client is one keep-alive connection at a time, requests back to back, and opens a new
// connection when an answer tells it to close, as a balancer's or a client's pool does.
// Closing the port resets whatever connection is still queued on it, or was accepted with
// its request on the way: the port stays open while clients still come. Two shapes:
// - behind a balancer that reads /readyz: once /readyz answers 503 it sends no new
//   connection here, and the gateway accepts them for `server.shutdownDelayMs` until then;
// - with the default settings and clients that never read /readyz: the load goes on after
//   the signal, then ends; the port closes only once no client is connected, nor connects.
// Any error on a request written, and any refused connection, is a failure.
// DRAIN_CHECK_RUNS=20 runs the second shape that many times in a row (by hand; 2 by default).

const KEY = 'ak_drain_keep_alive';
const SECRET = 's3cret-drain-keep-alive';
const CLIENTS = 16;
/** Answers seen before the signal: the load is running on every connection by then. */
const ANSWERS_BEFORE_SIGNAL = 160;
/** Answers after the signal before the clients stop, with the default settings. */
const ANSWERS_AFTER_SIGNAL = 240;
const DEFAULT_SETTINGS_RUNS = Number(process.env.DRAIN_CHECK_RUNS ?? 2);

interface ClientTally {
  answers: number;
  closeAnswers: number;
  /** Requests written that got no whole response: a reset, a hang-up, a cut body. */
  lost: string[];
}

/**
 * One keep-alive connection at a time, requests back to back, while `goOn` says so (told
 * whether the last answer closed the connection).
 */
async function runClient(
  url: string,
  authorization: string,
  tally: ClientTally,
  hooks: { onAnswer: () => void; goOn: (connectionClosed: boolean) => boolean },
): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let connectionClosed = false;
  try {
    while (hooks.goOn(connectionClosed)) {
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

describe('SIGTERM under keep-alive load, behind a balancer that reads /readyz', () => {
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
          // Until its connection closes after the balancer stopped routing here.
          goOn: (connectionClosed) => !connectionClosed || routed,
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

describe('SIGTERM under keep-alive load with the default settings, clients that never read /readyz', () => {
  /** One run: the load, SIGTERM in its midst, the load on after it for a while, then its end. */
  async function loadThroughSigterm(extraArgs: string[]): Promise<{ lost: string[] }> {
    const started = await startGateway(
      gatewayYaml({
        upstreamUrl: upstream.url,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
      }),
      extraArgs,
    );
    gateway = started;
    const exited = new Promise<number | null>((resolve) =>
      started.child.once('exit', (code) => resolve(code)),
    );
    let answers = 0;
    const onAnswer = (): void => {
      answers += 1;
      if (answers === ANSWERS_BEFORE_SIGNAL) started.child.kill('SIGTERM');
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
          // A refused connection: the port has closed, there is nothing more to ask.
          goOn: () =>
            answers < ANSWERS_BEFORE_SIGNAL + ANSWERS_AFTER_SIGNAL &&
            !tally.lost.some((loss) => loss.endsWith('ECONNREFUSED')),
        }),
      ),
    );
    const lost = tallies.flatMap((tally) => tally.lost);
    if (process.env.DRAIN_CHECK_RUNS !== undefined)
      console.info(JSON.stringify({ args: extraArgs, answers, lost }));
    // Each client was told to close, and came back for more, after the signal.
    if (lost.length === 0)
      for (const tally of tallies) expect(tally.closeAnswers).toBeGreaterThan(0);
    expect(await exited).toBe(0);
    return { lost };
  }

  for (const [mode, args] of [
    ['one process', []],
    ['--workers 2', ['--workers', '2']],
  ] as const)
    it(
      `${mode}: every request written gets a whole response in ${DEFAULT_SETTINGS_RUNS} runs, none is reset or refused, exit 0`,
      { timeout: 30_000 * DEFAULT_SETTINGS_RUNS },
      async () => {
        const lost: string[][] = [];
        for (let run = 0; run < DEFAULT_SETTINGS_RUNS; run += 1)
          lost.push((await loadThroughSigterm([...args])).lost);
        expect(lost).toEqual(lost.map(() => []));
      },
    );
});
