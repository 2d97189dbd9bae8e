// The accuracy section's load, driven: servers/skew-load.ts started against two gateways,
// its start and swap times read from its stdout, its run bounded, its answers read back.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { stopProcess, type ProcessGroup, type Started } from './processes.js';
import { parseSkewAnswers, type SkewAnswer } from './rate-limit-figures.js';
import type { Target } from './targets.js';

const LOAD = fileURLToPath(new URL('./servers/skew-load.ts', import.meta.url));
const HOOK = new URL('./resolve-hook.ts', import.meta.url).href;
/** Beyond its run: the client's own stop (answers in flight, the file) before SIGTERM. */
const STOP_GRACE_MS = 20_000;

export interface SkewLoadSpec {
  /** Its process's name, and its answers file's. */
  readonly name: string;
  readonly gateways: readonly [Target, Target];
  /** The Authorization value every request carries. */
  readonly authorization: string;
  readonly connections: number;
  /** Of the clients, this share (0..1) starts on the first gateway. */
  readonly share: number;
  readonly switchAfterMs: number;
  readonly runMs: number;
}

export interface SkewLoad {
  /** When its first requests went (ms since the epoch, as it counts). */
  readonly startedMs: number;
  /** When the sides swapped. */
  readonly switched: Promise<number>;
  /** Once it has stopped (by itself after runMs, or told to): every answer. */
  readonly answers: Promise<SkewAnswer[]>;
}

/** The load's `<word> <ms>` line (started, switched) once written; rejects if it exits first. */
function lineOf(load: Started, word: 'started' | 'switched', out: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    const pattern = new RegExp(`${word} (\\d+(\\.\\d+)?)`);
    const check = (): boolean => {
      const match = pattern.exec(out());
      if (match !== null) resolve(Number(match[1]));
      return match !== null;
    };
    if (check()) return;
    const onData = (): void => {
      if (check()) load.child.stdout?.off('data', onData);
    };
    load.child.stdout?.on('data', onData);
    void load.exited.then(() => {
      if (!check()) reject(new Error(`skew load exited before "${word}": ${out()}`));
    });
  });
}

/** Starts the load; resolves once its first requests are on their way. */
export async function startSkewLoad(group: ProcessGroup, spec: SkewLoadSpec): Promise<SkewLoad> {
  const out = join(group.dir, `${spec.name}.answers`);
  const [a, b] = spec.gateways;
  const load = group.start(
    spec.name,
    process.execPath,
    [
      '--import',
      HOOK,
      LOAD,
      JSON.stringify({
        origins: [`http://127.0.0.1:${a.port}`, `http://127.0.0.1:${b.port}`],
        path: '/accounts',
        out,
        connections: spec.connections,
        share: spec.share,
        authorization: spec.authorization,
        switchAfterMs: spec.switchAfterMs,
        runMs: spec.runMs,
      }),
    ],
    { output: 'pipe' },
  );
  let stdout = '';
  load.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  load.child.stderr?.resume();
  const startedMs = await lineOf(load, 'started', () => stdout);
  const switched = lineOf(load, 'switched', () => stdout);
  // Awaited by the caller after the run; a client that died first is reported then.
  switched.catch(() => undefined);
  const answers = (async (): Promise<SkewAnswer[]> => {
    const exit = await Promise.race([
      load.exited,
      sleep(spec.runMs + STOP_GRACE_MS).then(() => undefined),
    ]);
    // Bounded: a client that has not stopped by itself is told to (SIGTERM, by its PID).
    if (exit === undefined) await stopProcess(load);
    return parseSkewAnswers(readFileSync(out, 'utf8'));
  })();
  answers.catch(() => undefined);
  return { startedMs, switched, answers };
}
