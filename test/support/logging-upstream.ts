import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { onJsonLines } from './gateway-process.js';
import { untilAccepting } from './port-accepts.js';
import { NGINX } from './proxy-process.js';
import { freePort } from './redis-server.js';
import { TEST_UPSTREAM_HEADER } from './openapi-validator.js';
import { within } from './within.js';

/**
 * A real HTTP server that is not Node's (Python's http.server, nginx) behind the gateway,
 * logging each request it serves as one JSON line.
 */
export interface LoggingUpstream {
  readonly name: string;
  readonly url: string;
  /** Every request served so far, in the order served. */
  readonly served: Record<string, unknown>[];
  /** Resolves once `count` requests in all have been served. */
  untilServed(count: number): Promise<Record<string, unknown>[]>;
  /** Stops the process by its PID, and removes what it wrote. */
  stop(): Promise<void>;
}

/**
 * test/support/python-upstream.py: http.server reading bodies by Content-Length only, as
 * most hand-written Python services do; on 127.0.0.1, port 0.
 */
export function startPythonUpstream(): Promise<LoggingUpstream> {
  const script = fileURLToPath(new URL('./python-upstream.py', import.meta.url));
  const child = spawn('python3', ['-u', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  return logging('python http.server', child, 'stdout', undefined, () => undefined);
}

/**
 * nginx (one process, in the foreground) from a config of its own in a temp directory:
 * `return 200` on every path, its access log as JSON lines.
 */
export async function startNginxUpstream(): Promise<LoggingUpstream> {
  const port = await freePort();
  // nginx writes its access log only to a file or to syslog; syslog over loopback UDP brings
  // each line here as it is written.
  const syslog = createSocket('udp4');
  await new Promise<void>((resolve) => syslog.bind(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(join(tmpdir(), 'framing-nginx-'));
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      `pid ${join(dir, 'nginx.pid')};`,
      // In its temp directory, removed when it stops.
      `error_log ${join(dir, 'error.log')} warn;`,
      'events { worker_connections 64; }',
      'http {',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (kind) => `  ${kind}_temp_path ${join(dir, kind)};`,
      ),
      '  log_format lines escape=json \'{"method":"$request_method","target":"$request_uri",' +
        '"subject":"$http_x_auth_subject","length":"$http_content_length",' +
        '"encoding":"$http_transfer_encoding"}\';',
      `  access_log syslog:server=127.0.0.1:${String(syslog.address().port)},nohostname lines;`,
      '  server {',
      `    listen 127.0.0.1:${port};`,
      `    add_header ${TEST_UPSTREAM_HEADER} nginx always;`,
      '    location / { return 200 "served\\n"; }',
      '  }',
      '}',
    ].join('\n'),
  );
  const child = spawn(
    NGINX,
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off; master_process off;'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Each datagram is one line: `<priority>date tag: {json}`.
  const lines = new PassThrough();
  syslog.on('message', (message) => {
    const text = message.toString();
    lines.write(`${text.slice(text.indexOf('{'))}\n`);
  });
  return logging('nginx', child, lines, port, () => {
    if (!lines.writableEnded) {
      lines.end();
      syslog.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });
}

async function logging(
  name: string,
  child: ChildProcess,
  /** Where its JSON lines come from. */
  from: 'stdout' | Readable,
  knownPort: number | undefined,
  cleanUp: () => void,
): Promise<LoggingUpstream> {
  const served: Record<string, unknown>[] = [];
  let output = '';
  let listeners: (() => void)[] = [];
  let port = knownPort;
  let portKnown: () => void = () => undefined;
  const portSeen = new Promise<void>((resolve) => (portKnown = resolve));
  const stream = from === 'stdout' ? child.stdout : from;
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  if (stream !== null)
    onJsonLines(stream, (entry) => {
      if (typeof entry.port === 'number') {
        port = entry.port;
        portKnown();
      } else served.push(entry);
      for (const listener of listeners) listener();
    });
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code) => {
      cleanUp();
      reject(new Error(`${name} exited (${String(code)}):\n${output}`));
    }),
  );
  exited.catch(() => undefined);
  const listening = knownPort === undefined ? portSeen : untilAccepting(knownPort);
  try {
    await within(10_000, `${name} listening`, Promise.race([listening, exited]));
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    name,
    url: `http://127.0.0.1:${String(port)}`,
    served,
    untilServed: (count) =>
      within(
        10_000,
        `${name} serving ${count} requests (served: ${JSON.stringify(served)})`,
        new Promise((resolve) => {
          const check = (): void => {
            if (served.length < count) return;
            listeners = listeners.filter((l) => l !== check);
            resolve(served.slice());
          };
          listeners.push(check);
          check();
        }),
      ),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          cleanUp();
          return resolve();
        }
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
