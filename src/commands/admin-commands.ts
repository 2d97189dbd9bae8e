import { createBackend } from '../gateway/build-backend.js';
import type { GatewayConfig } from '../config/config-schema.js';
import {
  FIRST_PAGE,
  type CredentialStore,
  type KeyRecord,
  type KeySummary,
} from '../credentials/credential-store.js';
import { generateKeyPair } from '../credentials/generate-key-pair.js';
import { createSecretHasher } from '../credentials/secret-hasher.js';
import { parseExpiresOption } from '../credentials/key-expiry.js';
import { keyView, LABEL, viewStatus } from '../credentials/key-view.js';
import { RedisUnavailableError } from '../backends/redis/client.js';
import { listUsernames } from '../backends/redis/usernames.js';
import { GatewayError } from '../errors/gateway-error.js';
import { SCOPE, SUBJECT, USERNAME } from '../identity/identity-formats.js';
import { MAX_SCOPES } from '../identity/scopes.js';
import {
  createdChange,
  revokedChange,
  scopesField,
  type AuditLog,
} from '../credentials/audit-log.js';
import { cliRecorder, type RecordChange } from './cli-audit.js';
import { CliError, EXIT } from './cli-error.js';

/** Where a command writes what it has to say: a human line, or the JSON form with --json. */
export interface Output {
  json: boolean;
  write(text: string): void;
}

/** Opens the store the gateway uses; the admin commands only make sense against Redis. */
export function openStore(config: GatewayConfig): CredentialStore {
  return openBackend(config).credentials;
}

/** The Redis backend of the configuration, with the one-off commands' command timeout. */
function openBackend(config: GatewayConfig): ReturnType<typeof createBackend> {
  const redis = adminRedisConfig(config);
  return createBackend({ ...config, credentials: { ...config.credentials, redis } });
}

/** The Redis configuration of a one-off command: the store's, with more time per command. */
export function adminRedisConfig(config: GatewayConfig): GatewayConfig['credentials']['redis'] {
  if (config.credentials.store !== 'redis') {
    throw new CliError(
      'these commands manage the Redis store: set credentials.store: redis or pass --redis-url',
      EXIT.usage,
    );
  }
  // A one-off command pays for connecting within its first command's timeout: allow more
  // than the gateway's per-request budget.
  const { redis } = config.credentials;
  return { ...redis, commandTimeoutMs: Math.max(redis.commandTimeoutMs, 5_000) };
}

/** Runs `action`, an unavailable store turned into the CLI's failure (exit 1) with its reason. */
export async function asCliFailure<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'credential_store_unavailable') {
      // The store's own words: which Redis, and why (refused, timeout, auth, TLS).
      const why = error.cause instanceof RedisUnavailableError ? `: ${error.cause.message}` : '';
      throw new CliError(`the credential store is unavailable${why}`, EXIT.failure);
    }
    throw error;
  }
}

/** What a store command works with: the store, and how it records the changes it makes. */
export interface AdminStore {
  readonly store: CredentialStore;
  readonly record: RecordChange;
  /** The audit trail's log, to read (`keys audit`). */
  readonly audit: AuditLog;
}

export async function withStore(
  config: GatewayConfig,
  action: (admin: AdminStore) => Promise<void>,
): Promise<void> {
  const backend = openBackend(config);
  const store = backend.credentials;
  const admin = { store, record: cliRecorder(backend.audit), audit: backend.audit };
  try {
    await asCliFailure(() => action(admin));
  } finally {
    await store.close();
  }
}

export function print(output: Output, json: unknown, human: string): void {
  output.write(output.json ? `${JSON.stringify(json)}\n` : `${human}\n`);
}

export function checkSubject(subject: string): void {
  if (!SUBJECT.pattern.test(subject))
    throw new CliError(`--subject must be ${SUBJECT.rule}`, EXIT.usage);
}

/** `--scopes a,b`: comma-separated scope tokens (RFC 6749 §3.3), each once. */
export function parseScopesOption(text: string | undefined): readonly string[] {
  if (text === undefined || text === '') return [];
  const scopes = text.split(',');
  if (
    scopes.length > MAX_SCOPES ||
    new Set(scopes).size !== scopes.length ||
    !scopes.every((scope) => SCOPE.pattern.test(scope))
  ) {
    throw new CliError(
      `--scopes must be at most ${MAX_SCOPES} different comma-separated scopes, each ${SCOPE.rule}`,
      EXIT.usage,
    );
  }
  return scopes;
}

function checkUsername(username: string): void {
  if (!USERNAME.pattern.test(username))
    throw new CliError(`USERNAME must be ${USERNAME.rule}`, EXIT.usage);
}

/** What every pair of one `keys create` shares. */
export interface NewPairs {
  readonly subject: string;
  readonly label: string;
  readonly expires?: string | undefined;
  readonly scopes: readonly string[];
}

/**
 * Pairs made at once by `keys create --count`: at most the cap a subject may reach
 * (keys.maxActivePerSubject allows 1,000).
 */
export const MAX_COUNT = 1000;

/** `--count N`: decimal digits, 1 to MAX_COUNT; undefined without the flag. */
export function parseCountOption(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const count = /^\d{1,4}$/.test(text) ? Number(text) : 0;
  if (count < 1 || count > MAX_COUNT)
    throw new CliError(`--count must be a whole number from 1 to ${MAX_COUNT}`, EXIT.usage);
  return count;
}

export async function createKeyCommand(
  config: GatewayConfig,
  { store, record: recordChange }: AdminStore,
  output: Output,
  pairs: NewPairs,
  /** `--count`: this many pairs, each printed on a line; without it, one pair as a block. */
  countOption?: number,
): Promise<void> {
  const bulk = countOption !== undefined;
  const count = countOption ?? 1;
  const { subject, label, scopes } = pairs;
  checkSubject(subject);
  if (!LABEL.pattern.test(label)) throw new CliError(`--label must be ${LABEL.rule}`, EXIT.usage);
  const nowMs = Date.now();
  const expiry = pairs.expires === undefined ? undefined : parseExpiresOption(pairs.expires, nowMs);
  if (expiry?.ok === false) throw new CliError(expiry.message, EXIT.usage);
  const expiresAt = expiry?.expiresAt;
  const cap = config.keys.maxActivePerSubject;
  const capped = (made: number) =>
    new CliError(
      `subject ${subject} already has ${cap} active pairs (keys.maxActivePerSubject)${bulk ? `; made ${made} of ${count}` : ''}`,
      EXIT.conflict,
    );
  // Refused before any bcrypt runs when the pairs cannot all fit; createKey still enforces
  // the cap atomically, against pairs made meanwhile.
  if (bulk) {
    const active = await store.countActiveKeys(subject);
    if (active + count > cap)
      throw new CliError(
        `subject ${subject} has ${active} active pairs: ${count} more would pass keys.maxActivePerSubject (${cap}); none made`,
        EXIT.conflict,
      );
  }
  const hasher = createSecretHasher(config.credentials.bcryptCost);
  const createdAt = new Date(nowMs).toISOString();
  let made = 0;
  let full = false;
  const makeOne = async (): Promise<void> => {
    const { key, secret } = generateKeyPair(subject);
    const record: KeyRecord = {
      key,
      subject,
      secretHash: await hasher.hash(secret),
      label,
      status: 'active',
      createdAt,
      ...(expiresAt === undefined ? {} : { expiresAt }),
      scopes,
    };
    if (full || !(await store.createKey(record, cap))) {
      full = true;
      return;
    }
    made += 1;
    await recordChange(createdChange(record));
    // Each pair is printed as soon as it is stored: its secret exists nowhere else.
    const view = { ...keyView(record, nowMs), subject, secret };
    if (bulk) print(output, view, `${key} ${secret}`);
    else
      print(
        output,
        view,
        `key:    ${key}\nsecret: ${secret}\n${expiresAt === undefined ? '' : `expires: ${expiresAt}\n`}(the secret is shown this once)`,
      );
  };
  // bcrypt runs on libuv's thread pool: as many hashes at once as it has threads, so that one
  // process makes the pairs in about count / threads hash times.
  let started = 0;
  const worker = async (): Promise<void> => {
    while (started < count && !full) {
      started += 1;
      await makeOne();
    }
  };
  await Promise.all(Array.from({ length: Math.min(count, threadPoolSize()) }, worker));
  if (full) throw capped(made);
}

/** libuv's thread pool: UV_THREADPOOL_SIZE threads (1 to 1024), 4 unless set. */
function threadPoolSize(): number {
  const size = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(size) && size >= 1 ? Math.min(size, 1024) : 4;
}

export async function listKeysCommand(
  store: CredentialStore,
  output: Output,
  subject: string,
): Promise<void> {
  checkSubject(subject);
  const records = await allPairs(store, subject);
  const nowMs = Date.now();
  // The label last: it is the one field that may hold spaces.
  const lines = records.map(
    (r) =>
      `${r.key}  ${viewStatus(r, nowMs).padEnd(7)}  ${r.createdAt}  expires ${r.expiresAt ?? 'never'}  scopes ${scopesText(r.scopes)}  ${r.label}`,
  );
  print(
    output,
    records.map((r) => keyView(r, nowMs)),
    lines.length === 0 ? `no pairs for ${subject}` : lines.join('\n'),
  );
}

export function scopesText(scopes: readonly string[]): string {
  return scopes.length === 0 ? '-' : scopes.join(',');
}

/** One pair, as `GET /keys` shows it plus its subject: never the secret, never its hash. */
export async function showKeyCommand(
  store: CredentialStore,
  output: Output,
  key: string,
): Promise<void> {
  const record = await store.getKey(key);
  if (record === undefined) throw new CliError(`no pair ${key}`, EXIT.notFound);
  const nowMs = Date.now();
  const view = { ...keyView(record, nowMs), subject: record.subject };
  const fields: [string, string][] = [
    ['key', record.key],
    ['subject', record.subject],
    ['status', viewStatus(record, nowMs)],
    ['created', record.createdAt],
    ...(record.revokedAt === undefined ? [] : [['revoked', record.revokedAt] as [string, string]]),
    ['expires', record.expiresAt ?? 'never'],
    ['scopes', scopesText(record.scopes)],
    ['last used', record.lastUsedAt ?? 'never'],
    ['label', record.label],
  ];
  print(
    output,
    view,
    fields.map(([name, value]) => `${`${name}:`.padEnd(11)}${value}`.trimEnd()).join('\n'),
  );
}

/** Every pair of the subject, newest first: page after page, each one round trip. */
export async function allPairs(store: CredentialStore, subject: string): Promise<KeySummary[]> {
  const records: KeySummary[] = [];
  for (;;) {
    const page = await store.listKeys(subject, { ...FIRST_PAGE, after: records.at(-1)?.key });
    // The last pair read has just left (ended past the retention): read again from the start.
    if (page === undefined) records.splice(0);
    else records.push(...page);
    if (page !== undefined && page.length < FIRST_PAGE.limit) return records;
  }
}

export async function revokeKeyCommand(
  { store, record }: AdminStore,
  output: Output,
  key: string,
): Promise<void> {
  const revoked = await store.revokeKey(key, new Date().toISOString());
  if (revoked === undefined) throw new CliError(`no pair ${key}`, EXIT.notFound);
  await record(revokedChange(revoked));
  print(output, keyView(revoked, Date.now()), `revoked ${key}`);
}

export async function addUserCommand(
  config: GatewayConfig,
  { store, record: recordChange }: AdminStore,
  output: Output,
  username: string,
  subject: string,
  password: string,
  scopes: readonly string[] = [],
): Promise<void> {
  checkUsername(username);
  checkSubject(subject);
  const passwordHash = await createSecretHasher(config.credentials.bcryptCost).hash(password);
  const record = {
    username,
    subject,
    passwordHash,
    createdAt: new Date().toISOString(),
    scopes,
  };
  if (!(await store.addUser(record)))
    throw new CliError(`user ${username} exists; use users passwd`, EXIT.conflict);
  await recordChange({ action: 'user_add', subject, username, scopes: scopesField(scopes) });
  print(
    output,
    { username, subject, scopes },
    `added ${username} (subject ${subject}${scopes.length === 0 ? '' : `, scopes ${scopes.join(' ')}`})`,
  );
}

export async function changePasswordCommand(
  config: GatewayConfig,
  { store, record }: AdminStore,
  output: Output,
  username: string,
  password: string,
): Promise<void> {
  const user = await store.getUser(username);
  if (user === undefined) throw new CliError(`no user ${username}`, EXIT.notFound);
  const passwordHash = await createSecretHasher(config.credentials.bcryptCost).hash(password);
  // Removed meanwhile: the user stays removed.
  if (!(await store.setUserPassword(username, passwordHash)))
    throw new CliError(`no user ${username}`, EXIT.notFound);
  await record({ action: 'user_passwd', subject: user.subject, username });
  print(output, { username, subject: user.subject }, `changed the password of ${username}`);
}

/** Passes of revokeSubjectKeys at most: each one catches pairs made during the last. */
const REVOKE_PASSES = 5;

/**
 * Removes a user; with `revokeKeys`, also revokes every usable pair of the user's subject
 * (announced one by one, so every gateway evicts each at once). Pairs belong to the subject,
 * not to the user who made them: other users of the same subject lose theirs too, and
 * without the flag the answer says how many active pairs the subject keeps.
 */
export async function removeUserCommand(
  { store, record }: AdminStore,
  output: Output,
  username: string,
  revokeKeys = false,
): Promise<void> {
  const user = await store.getUser(username);
  // Removed first: from here its tokens can no longer make pairs at /keys.
  if (user === undefined || !(await store.removeUser(username)))
    throw new CliError(`no user ${username}`, EXIT.notFound);
  const { subject } = user;
  await record({ action: 'user_remove', subject, username });
  const revoked: string[] = [];
  if (revokeKeys) {
    const at = new Date().toISOString();
    for (let pass = 0; pass < REVOKE_PASSES; pass += 1) {
      const ids = await store.revokeSubjectKeys(subject, at);
      revoked.push(...ids);
      // Each pair's revocation is its own event, as if revoked one by one.
      for (const key of ids) await record(revokedChange({ subject, key }));
      if (ids.length === 0) break;
    }
  }
  const left = await store.countActiveKeys(subject);
  const pairs = (n: number): string => `${n} active pair${n === 1 ? '' : 's'}`;
  const human = revokeKeys
    ? `removed ${username}; revoked ${revoked.length} pair${revoked.length === 1 ? '' : 's'} of subject ${subject} (every active pair of the subject, whichever user made it); ${pairs(left)} left`
    : `removed ${username}; subject ${subject} keeps ${pairs(left)}${left === 0 ? '' : ' (pairs belong to the subject; users remove --revoke-keys revokes them)'}`;
  print(
    output,
    { username, removed: true, subject, revoked_keys: revoked, active_keys: left },
    human,
  );
}

/** Every user: name, subject, creation and scopes (never the password hash), by name. */
export async function listUsersCommand(
  config: GatewayConfig,
  store: CredentialStore,
  output: Output,
): Promise<void> {
  const usernames = await asCliFailure(() => listUsernames(adminRedisConfig(config)));
  const users = [];
  for (const username of usernames) {
    // Removed since the scan: not listed.
    const user = await store.getUser(username);
    if (user !== undefined) users.push(user);
  }
  print(
    output,
    users.map((u) => ({
      username: u.username,
      subject: u.subject,
      created_at: u.createdAt,
      scopes: u.scopes,
    })),
    users.length === 0
      ? 'no users'
      : users
          .map((u) => `${u.username}  ${u.subject}  ${u.createdAt}  scopes ${scopesText(u.scopes)}`)
          .join('\n'),
  );
}
