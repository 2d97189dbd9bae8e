import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

/** A command a script ran on a key it was not given in KEYS. */
export interface UndeclaredAccess {
  /** The SHA1 of the script (what EVALSHA names). */
  readonly sha: string;
  /** The command, as MONITOR showed it. */
  readonly command: readonly string[];
  /** Its keys (COMMAND GETKEYS) that were not among the script's KEYS. */
  readonly undeclared: readonly string[];
}

export interface ScriptKeyAudit {
  /** The SHA1 of every script run so far (by EVALSHA or EVAL). */
  ran(): Promise<ReadonlySet<string>>;
  /** Every command a script ran so far on a key outside its KEYS. */
  undeclared(): Promise<readonly UndeclaredAccess[]>;
  stop(): void;
}

interface ScriptRun {
  readonly sha: string;
  readonly declared: ReadonlySet<string>;
  readonly commands: string[][];
}

/**
 * Watches every script run on the Redis at `url` and tells which commands it ran on keys it
 * was not given in KEYS. Redis itself does not refuse them: it runs a script's commands on
 * any key of its own (Redis 7.0's scriptVerifyClusterState, src/script.c, refuses only a key
 * of another node, or of another slot for a script with a `#!lua` shebang, on a Cluster;
 * never one that shares the declared keys' slot, as every `{ag}:` key does). So this
 * watches instead: MONITOR shows each EVAL/EVALSHA with its KEYS, followed at once (a script
 * runs atomically) by the commands the script ran, from the client `lua`; COMMAND GETKEYS,
 * asked of the same server, names each one's keys.
 *
 * MONITOR slows Redis down: give it a Redis of its own. ioredis parses MONITOR's lines by
 * splitting on `" "`, which an argument holding `" "` would confuse; tests send none.
 */
export async function auditScriptKeys(url: string): Promise<ScriptKeyAudit> {
  const client = new Redis(url);
  const asker = new Redis(url);
  const monitor = await client.monitor();
  const runs: ScriptRun[] = [];
  let current: ScriptRun | undefined;
  const markers = new Map<string, () => void>();

  monitor.on('monitor', (_time: string, shown: string[], source: string) => {
    const args = shown.map(unescape);
    const [name = '', body = '', count = '0'] = args;
    if (source === 'lua') {
      current?.commands.push(args);
      return;
    }
    current = undefined;
    const lower = name.toLowerCase();
    if (lower === 'echo') markers.get(body)?.();
    if (lower !== 'eval' && lower !== 'evalsha') return;
    const sha = lower === 'evalsha' ? body : createHash('sha1').update(body).digest('hex');
    current = { sha, declared: new Set(args.slice(3, 3 + Number(count))), commands: [] };
    runs.push(current);
  });

  /** Resolves once MONITOR has shown everything sent before this call. */
  const caughtUp = async (): Promise<void> => {
    const marker = `audit-${randomUUID()}`;
    const seen = new Promise<void>((resolve) => markers.set(marker, resolve));
    await asker.echo(marker);
    await seen;
    markers.delete(marker);
  };

  const known = new Map<string, Promise<string[]>>();
  const keysOf = (command: readonly string[]): Promise<string[]> => {
    const id = JSON.stringify(command);
    let keys = known.get(id);
    if (keys === undefined) {
      keys = (asker.call('COMMAND', 'GETKEYS', ...command) as Promise<string[]>).catch(
        // No key arguments (TIME, PUBLISH: a channel is no key), as Redis itself says.
        () => [],
      );
      known.set(id, keys);
    }
    return keys;
  };

  return {
    async ran() {
      await caughtUp();
      return new Set(runs.map((run) => run.sha));
    },
    async undeclared() {
      await caughtUp();
      const found: UndeclaredAccess[] = [];
      for (const run of runs) {
        for (const command of run.commands) {
          const undeclared = (await keysOf(command)).filter((key) => !run.declared.has(key));
          if (undeclared.length > 0) found.push({ sha: run.sha, command, undeclared });
        }
      }
      return found;
    },
    stop() {
      monitor.disconnect();
      client.disconnect();
      asker.disconnect();
    },
  };
}

const ESCAPES: Readonly<Record<string, number>> = { n: 10, r: 13, t: 9, a: 7, b: 8 };

/**
 * An argument as it was sent: MONITOR shows it in ASCII, escaped (sdscatrepr: `\\`, `\n`,
 * `\xHH` for each byte of a UTF-8 character...), and ioredis has undone only `\"`.
 */
function unescape(shown: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < shown.length; i += 1) {
    const char = shown.charCodeAt(i);
    const next = shown[i + 1];
    if (char !== 92 || next === undefined) {
      bytes.push(char);
    } else if (next === 'x') {
      bytes.push(parseInt(shown.slice(i + 2, i + 4), 16));
      i += 3;
    } else {
      bytes.push(ESCAPES[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}
