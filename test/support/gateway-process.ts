import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gatewayYaml } from './gateway-yaml.js';
import { gatewayPorts } from './openapi-validator.js';
import { removeTempDir, tempDir } from './temp-dirs.js';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface GatewayProcess {
  readonly url: string;
  readonly port: number;
  readonly adminUrl: string | undefined;
  readonly child: ChildProcess;
  /** The YAML file it was started with (rewrite it, then SIGHUP, to reload). */
  readonly configFile: string;
  /**
   * Resolves with the first log line (already seen or still to come) whose msg is `msg` and
   * whose fields hold every value of `fields`.
   */
  waitForLog(msg: string, fields?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Every JSON log line so far. */
  readonly logs: Record<string, unknown>[];
  /** Everything written to stdout and stderr so far, verbatim. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A config file in a folder of its own, removed after the test file (support/temp-dirs). */
export function writeConfig(yaml: string): string {
  const dir = tempDir('gateway-test-');
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** Spawns the built CLI (`serve`) and resolves once it logs that it listens. */
export function startGateway(
  yaml: string,
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<GatewayProcess> {
  const file = writeConfig(yaml);
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--config', file, '--listen', '127.0.0.1:0', ...extraArgs],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    },
  );
  // Read at start and on each SIGHUP: not needed once the gateway is gone.
  child.once('exit', () => removeTempDir(dirname(file)));
  const logs: Record<string, unknown>[] = [];
  type Entry = Record<string, unknown>;
  const waiters: { matches: (entry: Entry) => boolean; resolve: (entry: Entry) => void }[] = [];
  const waitForLog = (msg: string, fields: Entry = {}): Promise<Entry> => {
    const matches = (entry: Entry) =>
      entry.msg === msg && Object.entries(fields).every(([name, value]) => entry[name] === value);
    const seen = logs.find(matches);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => waiters.push({ matches, resolve }));
  };
  let output = '';
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void =>
      reject(new Error(`gateway exited (${String(code)}) before listening:\n${output}`));
    child.once('exit', onExit);
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    onJsonLines(child.stdout, (entry) => {
      logs.push(entry);
      for (const waiter of waiters.filter((w) => w.matches(entry))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(entry);
      }
      if (entry.msg === 'gateway listening') {
        child.off('exit', onExit);
        const port = entry.port as number;
        gatewayPorts.add(port);
        // Once it is gone, the port may be another server's (port 0 hands it out again).
        child.once('exit', () => gatewayPorts.delete(port));
        const adminPort = entry.admin_port as number | undefined;
        resolve({
          url: `http://127.0.0.1:${port}`,
          port,
          adminUrl: adminPort === undefined ? undefined : `http://127.0.0.1:${adminPort}`,
          child,
          configFile: file,
          waitForLog,
          logs,
          output: () => output,
          stop: (signal = 'SIGTERM') =>
            new Promise((done) => {
              if (child.exitCode !== null) return done(child.exitCode);
              child.once('exit', (code) => done(code));
              child.kill(signal);
            }),
        });
      }
    });
  });
}

/**
 * The Redis store under its own key prefix, one upstream, an admin port of its own: the
 * gatewayYaml (./gateway-yaml.ts) of those options, kept under this name for callers that
 * append further top-level sections as text.
 */
export function redisGatewayYaml(options: {
  redisUrl: string;
  keyPrefix: string;
  upstreamUrl: string;
}): string {
  return gatewayYaml({
    upstreamUrl: options.upstreamUrl,
    redis: { url: options.redisUrl, keyPrefix: options.keyPrefix },
  });
}

/** Calls `onEntry` with every line of `stream` that is a JSON object (the gateway's log lines). */
export function onJsonLines(
  stream: NodeJS.ReadableStream,
  onEntry: (entry: Record<string, unknown>) => void,
): void {
  let pending = '';
  stream.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    let newline = pending.indexOf('\n');
    while (newline !== -1) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      newline = pending.indexOf('\n');
      try {
        onEntry(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // Not a log line.
      }
    }
  });
}
