import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { Agent, request, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { basicHeader } from '../support/basic-header.js';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { untilLogs } from '../support/gateway-logs.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { sample } from '../support/scrape-metric.js';
import { seedKey, uniquePrefix } from '../support/seed-redis.js';
import { servedSerial } from '../support/tls-client.js';

// A certificate rotated under load fails no request (issue 15): connections that exist keep
// the context they were made with, new ones get the new certificate once it passed its checks,
// in every worker. Half the clients keep their connection alive across the rotation; the
// other half make a new connection (a new handshake) for every request.

const KEY = 'ak_tls_rotation';
const SECRET = 's3cret-tls-rotation';
const KEPT_ALIVE = 6;
const NEW_CONNECTIONS = 6;
/** Answers before the files change, and after the new certificate is served everywhere. */
const ANSWERS_PER_PHASE = 120;

type Phase = 'before' | 'rotating' | 'after';

interface Tally {
  answers: number;
  /** The serials new connections were served, by the phase their request started in. */
  serials: Record<Phase, Set<string>>;
  /** The connections its requests went on. */
  sockets: Set<TLSSocket>;
  lost: string[];
}

const newTally = (): Tally => ({
  answers: 0,
  serials: { before: new Set(), rotating: new Set(), after: new Set() },
  sockets: new Set(),
  lost: [],
});

/** Requests back to back while `phase()` names one; every failure is a lost request. */
async function runClient(
  options: RequestOptions,
  tally: Tally,
  phase: () => Phase | undefined,
  onAnswer: () => void,
): Promise<void> {
  for (let started = phase(); started !== undefined; started = phase()) {
    await new Promise<void>((resolve) => {
      const req = request(options, (res) => {
        const socket = res.socket as TLSSocket;
        tally.sockets.add(socket);
        if (options.agent === false)
          tally.serials[started].add(socket.getPeerCertificate().serialNumber);
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('error', (error) => {
          tally.lost.push(`body: ${error.message}`);
          resolve();
        });
        res.on('end', () => {
          if (res.statusCode !== 200) tally.lost.push(`answer ${String(res.statusCode)}: ${body}`);
          tally.answers += 1;
          onAnswer();
          resolve();
        });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        tally.lost.push(`request: ${error.code ?? error.message}`);
        resolve();
      });
      req.end();
    });
  }
}

describe('a certificate rotated under load', () => {
  const prefix = uniquePrefix('tls-rotation');
  const ca = createTestCa();
  const first = ca.issue('first', { commonName: 'localhost', ...LOOPBACK });
  const second = ca.issue('second', { commonName: 'localhost', ...LOOPBACK });
  let upstream: EchoUpstream;
  let gateway: GatewayProcess | undefined;
  let dir: string;

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    await seedKey(inject('redisUrl'), prefix, { key: KEY, secret: SECRET, subject: 'alice' });
  });
  afterEach(async () => {
    await gateway?.stop();
    gateway = undefined;
    rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await upstream?.close();
    ca.remove();
  });

  async function rotateUnderLoad(extraArgs: string[], workers: number): Promise<void> {
    dir = mkdtempSync(join(tmpdir(), 'gateway-rotation-'));
    const certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    copyFileSync(first.certFile, certFile);
    copyFileSync(first.keyFile, keyFile);
    const started = await startGateway(
      gatewayYaml({
        upstreamUrl: upstream.url,
        redis: { url: inject('redisUrl'), keyPrefix: prefix },
        config: { server: { tls: { certFile, keyFile } } },
      }),
      extraArgs,
    );
    gateway = started;
    expect(await servedSerial(started.port, ca.cert)).toBe(first.serial);

    let phase: Phase = 'before';
    let answers = 0;
    let afterRotation = 0;
    let running = true;
    const current = (): Phase | undefined => (running ? phase : undefined);
    let rotated: Promise<void> = Promise.resolve();
    const onAnswer = (): void => {
      answers += 1;
      if (phase === 'after') {
        afterRotation += 1;
        if (afterRotation >= ANSWERS_PER_PHASE) running = false;
      }
      if (phase !== 'before' || answers < ANSWERS_PER_PHASE) return;
      phase = 'rotating';
      // Each file renamed over the old one, as a careful deploy does.
      copyFileSync(second.certFile, join(dir, 'cert.tmp'));
      copyFileSync(second.keyFile, join(dir, 'key.tmp'));
      renameSync(join(dir, 'cert.tmp'), certFile);
      renameSync(join(dir, 'key.tmp'), keyFile);
      rotated = untilLogs(
        started,
        `every process serving serial ${second.serial}`,
        (line) => line.msg === 'TLS certificate loaded' && line.serial === second.serial,
        workers,
      ).then(() => {
        phase = 'after';
      });
    };
    const base: RequestOptions = {
      host: '127.0.0.1',
      port: started.port,
      path: '/accounts',
      servername: 'localhost',
      ca: ca.cert,
      headers: { authorization: basicHeader(KEY, SECRET) },
    };
    const keptAlive = Array.from({ length: KEPT_ALIVE }, newTally);
    const fresh = Array.from({ length: NEW_CONNECTIONS }, newTally);
    const agents = keptAlive.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    try {
      await Promise.all([
        ...keptAlive.map((tally, i) =>
          runClient({ ...base, agent: agents[i] }, tally, current, onAnswer),
        ),
        ...fresh.map((tally) => runClient({ ...base, agent: false }, tally, current, onAnswer)),
      ]);
      await rotated;
    } finally {
      for (const agent of agents) agent.destroy();
    }

    expect([...keptAlive, ...fresh].flatMap((tally) => tally.lost)).toEqual([]);
    // New connections got the old certificate until the files changed, and only the new one
    // once every process had logged it (in between, a worker may still serve the old one).
    for (const tally of fresh) {
      expect(tally.serials.before).toEqual(new Set([first.serial]));
      expect(tally.serials.after).toEqual(new Set([second.serial]));
    }
    // Each kept-alive client used one connection from before the rotation to the end.
    for (const tally of keptAlive) expect(tally.sockets.size).toBe(1);
    for (let i = 0; i < 4; i += 1)
      expect(await servedSerial(started.port, ca.cert)).toBe(second.serial);
    const metrics = await (await fetch(`${started.adminUrl ?? ''}/metrics`)).text();
    expect(sample(metrics, 'gateway_tls_certificate_not_after_seconds')).toBe(
      Date.parse(new X509Certificate(second.cert).validTo) / 1000,
    );
  }

  it('one process: no request fails, and new connections get the new certificate', async () => {
    await rotateUnderLoad([], 1);
  });

  it('--workers 2: no request fails, and every worker serves the new certificate', async () => {
    await rotateUnderLoad(['--workers', '2'], 2);
  });
});
