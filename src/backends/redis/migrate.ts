import type { RedisConfig } from '../../config/config-schema.js';
import {
  DEFAULT_RETAIN_ENDED_SEC,
  type RetentionOptions,
} from '../../credentials/credential-store.js';
import { scanNames, withAdminRunner } from './admin-runner.js';
import { redisLayout } from './layout.js';
import { openSingleSlot } from './redis-backend.js';
import type { ScriptRunner } from './run-script.js';
import { MOVED_AWAY, type HashMove, type PairMove, type SingleSlot } from './single-slot.js';

/** What is left in the single slot after a migration, or would be after one, and why. */
export interface LeftBehind {
  /** A pair's key id, or `user:<username>`, `subject:<subject>`. */
  readonly name: string;
  readonly reason: Exclude<PairMove | HashMove, 'moved' | 'merged' | 'same' | 'gone' | 'kept'>;
}

export interface MigrationReport {
  readonly applied: boolean;
  readonly from: string;
  readonly to: string;
  /** Pairs moved (or to move), users, subjects' settings hashes. */
  readonly pairs: number;
  readonly users: number;
  readonly settings: number;
  readonly left: readonly LeftBehind[];
  /** Lockout counters and rate buckets of the single slot: not moved, each expires by itself. */
  readonly expiring: number;
}

/** Subjects moved at once: each is a few round trips per pair, in its own slot. */
const SUBJECTS_AT_ONCE = 16;

/** The single slot's key names, sorted by what they hold. */
interface Found {
  readonly pairs: Set<string>;
  readonly users: Set<string>;
  /** Subjects with an index or settings there. */
  readonly subjects: Set<string>;
  readonly settings: Set<string>;
  expiring: number;
}

const INDEX_SUFFIXES = [':pairs', ':ends', ':active', ':keys'];

async function sortNames(
  runner: ScriptRunner,
  prefix: string,
  names: readonly string[],
): Promise<Found> {
  const found: Found = {
    pairs: new Set(),
    users: new Set(),
    subjects: new Set(),
    settings: new Set(),
    expiring: 0,
  };
  for (const name of names) {
    const rest = name.slice(prefix.length);
    if (rest.startsWith('key:')) found.pairs.add(rest.slice(4));
    else if (rest.startsWith('user:')) found.users.add(rest.slice(5));
    else if (rest.startsWith('lockout:') || rest.startsWith('rl:')) found.expiring += 1;
    else if (rest.startsWith('subject:')) {
      const subject = rest.slice(8);
      const suffix = INDEX_SUFFIXES.find((s) => subject.endsWith(s));
      // A subject's settings are a hash; `subject:<s>:pairs` may also be the settings of a
      // subject named `<s>:pairs` (a subject may hold `:`): the type tells.
      const isIndex =
        suffix !== undefined && (await runner.call(name, (c, k) => c.type(k))) !== 'hash';
      if (isIndex) found.subjects.add(subject.slice(0, -(suffix?.length ?? 0)));
      else {
        found.settings.add(subject);
        found.subjects.add(subject);
      }
    }
    // Anything else is not the single-slot layout's (the layout of layout.ts, when both
    // prefixes begin alike: its names go on with `{` or `key-tag:`).
  }
  return found;
}

/** Runs `each` over `items`, `atOnce` at a time. */
async function inTurn<T>(items: readonly T[], atOnce: number, each: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += atOnce)
    await Promise.all(items.slice(i, i + atOnce).map(each));
}

/** The counts of a report: what moved (or would), what is left. */
type Counts = Omit<MigrationReport, 'applied' | 'from' | 'to'>;

async function moveAll(single: SingleSlot, found: Found): Promise<Counts> {
  let pairs = 0;
  let users = 0;
  let settings = 0;
  const left: LeftBehind[] = [];
  const seen = new Set<string>();
  const countPair = (id: string, outcome: PairMove): void => {
    if (seen.has(id)) return;
    seen.add(id);
    if (outcome === 'moved' || outcome === 'merged' || outcome === 'same') pairs += 1;
    else if (!MOVED_AWAY.has(outcome))
      left.push({ name: id, reason: outcome as LeftBehind['reason'] });
  };
  await inTurn([...found.users], SUBJECTS_AT_ONCE, async (username) => {
    const outcome = await single.moveUser(username);
    if (outcome === 'moved' || outcome === 'kept') users += 1;
    else if (outcome === 'busy') left.push({ name: `user:${username}`, reason: outcome });
  });
  await inTurn([...found.subjects], SUBJECTS_AT_ONCE, async (subject) => {
    const moved = await single.moveSubject(subject);
    moved.pairs.forEach(({ id, outcome }) => countPair(id, outcome));
    if (moved.settings === 'moved' || moved.settings === 'kept') settings += 1;
    else if (moved.settings === 'busy') left.push({ name: `subject:${subject}`, reason: 'busy' });
  });
  // Pairs no index named (a writer's pair without its ZADD).
  await inTurn(
    [...found.pairs].filter((id) => !seen.has(id)),
    SUBJECTS_AT_ONCE,
    async (id) => countPair(id, await single.movePair(id)),
  );
  return { pairs, users, settings, left, expiring: found.expiring };
}

async function inspectAll(single: SingleSlot, found: Found): Promise<Counts> {
  let pairs = 0;
  const left: LeftBehind[] = [];
  await inTurn([...found.pairs], SUBJECTS_AT_ONCE, async (id) => {
    const outcome = await single.inspectPair(id);
    if (outcome === 'moved') pairs += 1;
    else if (!MOVED_AWAY.has(outcome))
      left.push({ name: id, reason: outcome as LeftBehind['reason'] });
  });
  return {
    pairs,
    users: found.users.size,
    settings: found.settings.size,
    left,
    expiring: found.expiring,
  };
}

/**
 * `migrate`: moves every pair, user and subject's settings of the single-slot layout
 * (`singleSlotPrefix`) into the layout of layout.ts, or with `apply` false only says what it
 * would move. Safe while gateways serve (single-slot.ts), and again after it: what has moved
 * is not found there any more.
 */
export async function migrateSingleSlot(
  config: RedisConfig,
  options: { readonly apply: boolean; readonly retention?: RetentionOptions },
): Promise<MigrationReport> {
  return withAdminRunner(config, async (runner) => {
    const layout = redisLayout(config.keyPrefix);
    const single = openSingleSlot(config, {
      runner,
      layout,
      now: Date.now,
      retention: options.retention ?? { retainEndedSec: DEFAULT_RETAIN_ENDED_SEC },
    });
    if (single === undefined) throw new TypeError('no single-slot layout is configured');
    const found = await sortNames(
      runner,
      single.layout.prefix,
      await scanNames(runner, single.layout.prefix),
    );
    const counts = options.apply ? await moveAll(single, found) : await inspectAll(single, found);
    return { applied: options.apply, from: single.layout.prefix, to: config.keyPrefix, ...counts };
  });
}
