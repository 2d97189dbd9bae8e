// Every process the bench starts is tracked here and stopped by its PID (and its descendants,
// e.g. nginx's worker, by theirs): SIGTERM, a grace period, then SIGKILL. Nothing is ever
// stopped by name. The temp directory (configs, Lua scripts, logs) goes with them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export { findCommand } from '../support/find-command.js';

export interface Started {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Its stdout and stderr (for processes started with output 'file'). */
  readonly logFile: string;
  /** Resolves with its exit code (or signal name) once it has exited. */
  readonly exited: Promise<number | string | null>;
}

export interface StartOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** 'file': both streams to <dir>/<name>.log; 'pipe': the caller reads them. */
  readonly output?: 'file' | 'pipe';
  /** 'pipe' to write to its stdin (e.g. redis-cli --pipe). */
  readonly stdin?: 'ignore' | 'pipe';
}

export interface ProcessGroup {
  /** The bench's temp directory, removed by close(). */
  readonly dir: string;
  start(name: string, command: string, args: readonly string[], options?: StartOptions): Started;
  /** Tracks a process spawned elsewhere (the support helper's redis-server). */
  adopt(name: string, child: ChildProcess): Started;
  /** PIDs of every tracked process still running. */
  running(): number[];
  /** The last bytes of a process's log file, for error messages. */
  logTail(started: Started, bytes?: number): string;
  /**
   * Stops what a helper of test/support started and tracks itself (a Redis Cluster or
   * Sentinel set, each process by its PID), first thing in close(); on an unplanned exit the
   * helper's own exit hook kills them.
   */
  onClose(stop: () => Promise<void>): void;
  /** Stops everything (SIGTERM, then SIGKILL after a grace period) and removes the dir. */
  close(): Promise<void>;
  /** The same at once, synchronously (SIGKILL): the 'exit' safety net. */
  closeNow(): void;
  readonly closing: boolean;
}

export function createProcessGroup(): ProcessGroup {
  const dir = mkdtempSync(join(tmpdir(), 'accounts-gateway-bench-'));
  const tracked: Started[] = [];
  const stops: (() => Promise<void>)[] = [];
  let closing = false;
  let closed: Promise<void> | undefined;

  const track = (name: string, child: ChildProcess, logFile: string): Started => {
    // Listened to first: a spawn that fails (ENOENT) reports it as an 'error' event later.
    const exited = new Promise<number | string | null>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null)
        resolve(child.exitCode ?? child.signalCode);
      child.once('exit', (code, signal) => resolve(code ?? signal));
      child.once('error', () => resolve(null));
    });
    if (child.pid === undefined) throw new Error(`${name}: could not be started`);
    const started: Started = { name, pid: child.pid, child, logFile, exited };
    tracked.push(started);
    if (closing) kill(child.pid, 'SIGKILL');
    return started;
  };

  const isRunning = (s: Started): boolean =>
    s.child.exitCode === null && s.child.signalCode === null;

  return {
    dir,
    get closing() {
      return closing;
    },
    start(name, command, args, options = {}) {
      if (closing) throw new Error(`not starting ${name}: the bench is stopping`);
      const logFile = join(dir, `${name}.log`);
      let fd: number | undefined;
      if ((options.output ?? 'file') === 'file') fd = openSync(logFile, 'a');
      try {
        const child = spawn(command, [...args], {
          cwd: options.cwd ?? dir,
          env: options.env ?? process.env,
          stdio: [options.stdin ?? 'ignore', fd ?? 'pipe', fd ?? 'pipe'],
        });
        return track(name, child, logFile);
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
    },
    adopt(name, child) {
      return track(name, child, join(dir, `${name}.log`));
    },
    onClose(stop) {
      stops.push(stop);
    },
    running: () => tracked.filter(isRunning).map((s) => s.pid),
    logTail(started, bytes = 2000) {
      try {
        const text = readFileSync(started.logFile, 'utf8');
        return text.slice(-bytes);
      } catch {
        return '(no log)';
      }
    },
    close() {
      closing = true;
      closed ??= (async () => {
        await Promise.allSettled(stops.map((stop) => stop()));
        // Newest first: load generators, then proxies, then upstream and Redis.
        const alive = tracked.filter(isRunning).reverse();
        const trees = alive.map((s) => ({ s, descendants: processTree(s.pid).slice(1) }));
        for (const { s } of trees) kill(s.pid, 'SIGTERM');
        await Promise.race([Promise.all(alive.map((s) => s.exited)), sleep(5_000)]);
        for (const { s, descendants } of trees) {
          if (isRunning(s)) kill(s.pid, 'SIGKILL');
          for (const pid of descendants) if (pidAlive(pid)) kill(pid, 'SIGKILL');
        }
        await Promise.race([Promise.all(alive.map((s) => s.exited)), sleep(2_000)]);
        rmSync(dir, { recursive: true, force: true });
      })();
      return closed;
    },
    closeNow() {
      closing = true;
      for (const s of tracked) {
        if (!isRunning(s)) continue;
        for (const pid of processTree(s.pid).reverse()) kill(pid, 'SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Sends SIGTERM to one started process by its PID and awaits its exit, at most `maxMs`
 * (then `still running`: the group's close() kills it later). Its exit code or signal.
 */
export async function stopProcess(started: Started, maxMs = 15_000): Promise<string> {
  kill(started.pid, 'SIGTERM');
  const exit = await Promise.race([started.exited, sleep(maxMs).then(() => 'still running')]);
  return String(exit);
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** True while the PID exists and is not a zombie. */
export function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return statFields(stat)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parens). */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** `pid` and all its descendants (children, their children...), from /proc. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const ppid = Number(statFields(stat)[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(entry));
    children.set(ppid, list);
  }
  const tree: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift();
    if (next === undefined || tree.includes(next)) continue;
    if (next !== pid || existsSync(`/proc/${pid}`)) tree.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return tree;
}

/** The first line a command prints for its version (stdout or stderr). */
export function versionOf(command: string, args: readonly string[]): string {
  const result = spawnSync(command, [...args], { encoding: 'utf8', timeout: 10_000 });
  return `${result.stdout}${result.stderr}`.split('\n')[0]?.trim() ?? '';
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

/** One HTTP/1.1 request on its own connection (never kept alive). */
export function httpRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        agent: false,
        timeout: 5_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within 5 s`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Resolves once `url` answers anything; rejects when `started` exits first or after `timeoutMs`. */
export async function waitForHttp(
  group: ProcessGroup,
  started: Started,
  url: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (started.child.exitCode !== null || started.child.signalCode !== null) {
      throw new Error(`${started.name} exited before answering:\n${group.logTail(started)}`);
    }
    try {
      await httpRequest(url);
      return;
    } catch {
      if (Date.now() > deadline) {
        throw new Error(`${started.name}: no answer at ${url} within ${timeoutMs} ms`);
      }
      await sleep(100);
    }
  }
}
