import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Cluster } from 'ioredis';
import { CircuitOpenError } from '../../concurrency/circuit-breaker.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { RedisBreakers } from './breakers.js';
import type { RedisClient, RedisConnection } from './client.js';
import { MalformedReplyError } from './script-replies.js';

/**
 * The one way the Redis backend talks to Redis: every command, script or not, passes
 * through `guarded` below (the breaker of the master it goes to, breakers.ts, and a time
 * bound), and every script is a
 * `.lua` file under scripts/, defined once with the names of its KEYS and ARGV.
 *
 * A name ending in `[]` takes a list (of keys, or of arguments); the others one value each.
 * In the script, `KEY.<name>` and `ARG.<name>` hold them (a list as a Lua table): a short
 * prologue, generated from the names, binds them, so no script reads KEYS[n] or ARGV[n]
 * itself. Each list's length travels as a leading ARGV entry the prologue reads first.
 * Every key a script touches must come in through KEYS: Redis Cluster routes a script by
 * them and refuses a key the script forms itself in another slot; Dragonfly refuses any key
 * not declared. test/integration/script-keys.test.ts watches every script run for it.
 *
 * Each script also names the decoder of its reply (script-replies.ts): a run resolves with
 * the typed value it returns, and rejects with MalformedReplyError on a reply of another shape.
 */

/** What a script is given: strings, and numbers (sent as their decimal text). */
export type ScriptValue = string | number;
type Base<Name extends string> = Name extends `${infer List}[]` ? List : Name;

/** The values of `Names`, by name: a list for a `name[]`, one value for the others. */
export type Named<Names extends readonly string[], V> = {
  readonly [Name in Names[number] as Base<Name>]: Name extends `${string}[]` ? readonly V[] : V;
};

/** What one run sent, by name: what a decoder may need to read the reply. */
export interface Sent<Keys extends readonly string[], Args extends readonly string[]> {
  readonly keys: Named<Keys, string>;
  readonly args: Named<Args, ScriptValue>;
}

/**
 * The script's reply as a typed value: checks its shape, throws MalformedReplyError when it
 * is another (a bug, or a foreign server), never coerces it.
 */
export type ReplyDecoder<Keys extends readonly string[], Args extends readonly string[], Reply> = (
  reply: unknown,
  sent: Sent<Keys, Args>,
) => Reply;

export interface Script<
  Keys extends readonly string[] = readonly string[],
  Args extends readonly string[] = readonly string[],
  Reply = unknown,
> {
  /** The file it was read from (scripts/<name>), or the name a test gave it. */
  readonly name: string;
  readonly keys: Keys;
  readonly args: Args;
  /** What Redis runs: the prologue, then the libraries, then the script. */
  readonly source: string;
  /** SHA1 of `source`: what EVALSHA names, computed once. */
  readonly sha: string;
  /** Its reply, decoded (script-replies.ts). */
  readonly reply: ReplyDecoder<Keys, Args, Reply>;
}

export interface ScriptSpec<Keys extends readonly string[], Args extends readonly string[], Reply> {
  readonly keys: Keys;
  readonly args: Args;
  /** Files of scripts/ put before the script, each once (shared Lua functions). */
  readonly libraries?: readonly string[];
  readonly reply: ReplyDecoder<Keys, Args, Reply>;
}

const NAME = /^[A-Za-z][A-Za-z0-9]*(\[\])?$/;
const SCRIPTS = new URL('./scripts/', import.meta.url);

/** Defines the script of scripts/<file> (read now, once) with the names of its KEYS and ARGV. */
export function defineScript<
  const Keys extends readonly string[],
  const Args extends readonly string[],
  Reply,
>(file: string, spec: ScriptSpec<Keys, Args, Reply>): Script<Keys, Args, Reply> {
  const read = (name: string): string => readFileSync(new URL(name, SCRIPTS), 'utf8');
  const libraries = (spec.libraries ?? []).map(read);
  return compile(file, [...libraries, read(file)].join('\n'), spec);
}

/**
 * A script from its text: what defineScript makes of a file (and what tests define inline;
 * without a decoder, a run resolves with the reply as ioredis gives it).
 */
export function scriptFromSource<
  const Keys extends readonly string[],
  const Args extends readonly string[],
>(name: string, body: string, spec: { keys: Keys; args: Args }): Script<Keys, Args>;
export function scriptFromSource<
  const Keys extends readonly string[],
  const Args extends readonly string[],
  Reply,
>(
  name: string,
  body: string,
  spec: { keys: Keys; args: Args; reply: ReplyDecoder<Keys, Args, Reply> },
): Script<Keys, Args, Reply>;
export function scriptFromSource<
  const Keys extends readonly string[],
  const Args extends readonly string[],
>(
  name: string,
  body: string,
  spec: { keys: Keys; args: Args; reply?: ReplyDecoder<Keys, Args, unknown> },
): Script<Keys, Args> {
  return compile(name, body, { ...spec, reply: spec.reply ?? ((reply) => reply) });
}

function compile<Keys extends readonly string[], Args extends readonly string[], Reply>(
  name: string,
  body: string,
  spec: { keys: Keys; args: Args; reply: ReplyDecoder<Keys, Args, Reply> },
): Script<Keys, Args, Reply> {
  for (const each of [...spec.keys, ...spec.args])
    if (!NAME.test(each)) throw new Error(`script ${name}: ${each} is not a name (${NAME.source})`);
  const source = `${prologue(spec.keys, spec.args)}\n${body}`;
  return {
    name,
    keys: spec.keys,
    args: spec.args,
    source,
    sha: createHash('sha1').update(source).digest('hex'),
    reply: spec.reply,
  };
}

const isList = (name: string): boolean => name.endsWith('[]');
const baseOf = (name: string): string => (isList(name) ? name.slice(0, -2) : name);

/**
 * One line of Lua that binds KEY.<name> and ARG.<name> from KEYS and ARGV in the declared
 * order (one line, so a script's own line numbers in Redis's errors move by one only).
 */
function prologue(keys: readonly string[], args: readonly string[]): string {
  const lists = [...keys, ...args].filter(isList).length;
  const parts = [`local KEY, ARG = {}, {} do local k, a = 1, ${lists + 1}`];
  if (lists > 0)
    parts.push(
      `local n = { ${Array.from({ length: lists }, (_, i) => `tonumber(ARGV[${i + 1}])`).join(', ')} }`,
    );
  let list = 0;
  const bind = (table: string, from: string, at: string, name: string): void => {
    const field = `${table}.${baseOf(name)}`;
    if (!isList(name)) {
      parts.push(`${field} = ${from}[${at}] ${at} = ${at} + 1`);
      return;
    }
    list += 1;
    parts.push(
      `${field} = {} for i = 1, n[${list}] do ${field}[i] = ${from}[${at}] ${at} = ${at} + 1 end`,
    );
  };
  for (const name of keys) bind('KEY', 'KEYS', 'k', name);
  for (const name of args) bind('ARG', 'ARGV', 'a', name);
  parts.push('end');
  return parts.join(' ');
}

/** KEYS and ARGV as sent: each list's length first in ARGV, then the values in declared order. */
function flatten(
  script: Pick<Script, 'name' | 'keys' | 'args'>,
  keys: Readonly<Record<string, ScriptValue | readonly ScriptValue[]>>,
  args: Readonly<Record<string, ScriptValue | readonly ScriptValue[]>>,
): { keys: string[]; args: ScriptValue[] } {
  const lengths: number[] = [];
  const spread = (names: readonly string[], values: typeof keys): ScriptValue[] =>
    names.flatMap((name) => {
      const value = values[baseOf(name)];
      if (value === undefined) throw new Error(`script ${script.name}: no value for ${name}`);
      if (!isList(name)) return [value as ScriptValue];
      const list = value as readonly ScriptValue[];
      lengths.push(list.length);
      return [...list];
    });
  const flatKeys = spread(script.keys, keys).map(String);
  const flatArgs = spread(script.args, args);
  return { keys: flatKeys, args: [...lengths, ...flatArgs] };
}

export interface ScriptRunner {
  /**
   * Runs `script` by its SHA1 (EVALSHA), sending its text (EVAL) only when Redis does not
   * hold it: once per Redis, and again after a restart, a failover or a SCRIPT FLUSH.
   * Rejects with GatewayError `credential_store_unavailable` when Redis does not answer in
   * time, the script fails, or the breaker of its first key's master is open.
   */
  run<Keys extends readonly string[], Args extends readonly string[], Reply>(
    script: Script<Keys, Args, Reply>,
    keys: Named<Keys, string>,
    args: Named<Args, ScriptValue>,
  ): Promise<Reply>;
  /** One plain command (or a few) on `key`, with the same bound, breaker and failure. */
  call<T>(key: string, operation: (client: RedisClient, key: string) => Promise<T>): Promise<T>;
  /**
   * A command that names no key (a node's SCAN, the list of masters), with the same bound and
   * failure and through no breaker: it stands for no one master.
   */
  unkeyed<T>(operation: (client: RedisClient) => Promise<T>): Promise<T>;
  /**
   * A PING with the same bound and failure, through no breaker: readiness asks Redis itself,
   * and on a Cluster it goes to any node, which says nothing of one master.
   */
  ping(): Promise<void>;
}

export interface ScriptRunnerOptions {
  readonly timeoutMs: number;
  readonly connection: RedisConnection;
  /** The breakers every call but ping() passes through; none: every call goes to Redis. */
  readonly breakers?: RedisBreakers;
  /**
   * Told how long each call sent to Redis took to settle, answered or failed (seconds; a
   * call a breaker refused was not sent, and is not told).
   */
  readonly onCallTime?: (seconds: number) => void;
}

export function createScriptRunner(
  client: RedisClient,
  options: ScriptRunnerOptions,
): ScriptRunner {
  const bounded = createBound(client, options.timeoutMs, options.onCallTime);
  const { connection } = options;
  const breakers: RedisBreakers = options.breakers ?? { run: (_key, call) => call() };
  // A call without a key (a ping, a script given no key) goes to any node: no breaker.
  const guarded = async <T>(key: string | undefined, operation: () => Promise<T>): Promise<T> => {
    try {
      return key === undefined
        ? await bounded(operation)
        : await breakers.run(key, () => bounded(operation));
    } catch (error) {
      throw unavailable(connection, error);
    }
  };
  return {
    // A script given a wrong name fails as it is, outside the bound: a bug, not an outage;
    // so does a malformed reply, decoded once Redis has answered.
    run: async (script, keys, args) => {
      const flat = flatten(script, keys, args);
      const count = flat.keys.length;
      const reply = await guarded(flat.keys[0], async () => {
        try {
          return await client.evalsha(script.sha, count, ...flat.keys, ...flat.args);
        } catch (error) {
          // A Redis restarted (or failed over, or flushed) since: its script cache is empty.
          if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
          return await client.eval(script.source, count, ...flat.keys, ...flat.args);
        }
      });
      return decoded(script, reply, { keys, args });
    },
    call: (key, operation) => guarded(key, () => operation(client, key)),
    unkeyed: (operation) => guarded(undefined, () => operation(client)),
    ping: async () => {
      await guarded(undefined, () => client.ping());
    },
  };
}

/** The script's reply decoded; a malformed one names the script. */
function decoded<Keys extends readonly string[], Args extends readonly string[], Reply>(
  script: Script<Keys, Args, Reply>,
  reply: unknown,
  sent: Sent<Keys, Args>,
): Reply {
  try {
    return script.reply(reply, sent);
  } catch (error) {
    if (!(error instanceof MalformedReplyError)) throw error;
    throw new MalformedReplyError(`script ${script.name}: ${error.message}`);
  }
}

/**
 * The client-facing error stays the catalogue's; its cause names Redis, its address and why.
 * A breaker's refusal asks the client to come back when a probe may go (whole seconds, at
 * least 1: RFC 9110 §10.2.3).
 */
function unavailable(connection: RedisConnection, error: unknown): GatewayError {
  if (error instanceof CircuitOpenError)
    return new GatewayError('credential_store_unavailable', {
      cause: error,
      retryAfterSec: Math.max(1, Math.ceil(error.retryAfterMs / 1000)),
    });
  return new GatewayError('credential_store_unavailable', {
    cause: connection.describe(error),
    retryAfterSec: 1,
  });
}

/**
 * Runs one operation within `timeoutMs`, whatever the client mode. ioredis's own
 * commandTimeout covers commands on a connection; this bound also covers what it leaves
 * open: a Cluster that is not ready yet (or any more) holds commands in its offline queue
 * with no timer, and its redirection and CLUSTERDOWN retries add up beyond one command's
 * timeout. A Cluster command is only issued once the client is ready, so an outage does not
 * pile commands into that queue.
 */
function createBound(
  client: RedisClient,
  timeoutMs: number,
  onCallTime: ((seconds: number) => void) | undefined,
) {
  let ready: Promise<void> | undefined;
  // One 'ready' listener per not-ready period, shared by every waiting call: a burst of
  // requests during an outage must not add a listener each.
  const whenReady = (): Promise<void> | undefined => {
    if (!(client instanceof Cluster) || client.status === 'ready' || client.status === 'end')
      return undefined;
    // A lazyConnect client connects on its first command, which is not sent before ready.
    if (client.status === 'wait') client.connect().catch(() => undefined);
    ready ??= new Promise<void>((resolve) => {
      client.once('ready', () => {
        ready = undefined;
        resolve();
      });
    });
    return ready;
  };
  return async function bounded<T>(operation: () => Promise<T>): Promise<T> {
    // Timed in the bound's own finally: no further async layer on every call to Redis.
    const startedMs = onCallTime === undefined ? 0 : performance.now();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const waiting = whenReady();
      if (waiting !== undefined) await Promise.race([waiting, deadline]);
      return await Promise.race([operation(), deadline]);
    } finally {
      clearTimeout(timer);
      onCallTime?.((performance.now() - startedMs) / 1000);
    }
  };
}
