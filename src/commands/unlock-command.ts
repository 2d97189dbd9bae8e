import type { GatewayConfig } from '../config/config-schema.js';
import { unlockLockouts, type UnlockResult } from '../backends/redis/unlock-lockouts.js';
import { networkOf, parseIp } from '../http/ip-network.js';
import { KEY_ID, USERNAME } from '../identity/identity-formats.js';
import { MAX_KEY_CHARS } from '../identity/key-id.js';
import type { Unlock } from '../protection/lockout.js';
import type { AuditChange } from '../credentials/audit-log.js';
import type { CredentialStore } from '../credentials/credential-store.js';
import { adminRedisConfig, asCliFailure, print, withStore, type Output } from './admin-commands.js';
import { CliError, EXIT } from './cli-error.js';

/** What `keys unlock` was asked to lift: each flag once at most (yargs gives an array for more). */
export interface UnlockOptions {
  readonly key?: string | string[] | undefined;
  readonly username?: string | string[] | undefined;
  readonly address?: string | string[] | undefined;
}

/**
 * A key id as a client sends it: what the lockout counts, known or not. Pairs refused before any
 * compare (a key over MAX_KEY_CHARS, counted as the authenticator counts) are never counted; a
 * colon ends a Basic key (RFC 7617), and the revocation channel's message ends at the first space.
 */
const COUNTED_KEY_CHARACTERS = /^[^\s:\p{Cc}]+$/u;

/** The options read: the unlocks they name, in the order key, username, address. */
function parseUnlockOptions(
  options: UnlockOptions,
  clientNetworks: GatewayConfig['server']['clientNetworks'],
): { readonly unlocks: readonly Unlock[]; readonly address?: string } {
  const once = (name: string, value: string | string[] | undefined): string | undefined => {
    if (Array.isArray(value))
      throw new CliError(
        `--${name} may be given once; run the command again for another`,
        EXIT.usage,
      );
    return value;
  };
  const key = once('key', options.key);
  const username = once('username', options.username);
  const address = once('address', options.address);
  if (key === undefined && username === undefined && address === undefined)
    throw new CliError('name what to unlock: --key, --username or --address', EXIT.usage);
  const unlocks: Unlock[] = [];
  if (key !== undefined) {
    if (key.length > MAX_KEY_CHARS || !COUNTED_KEY_CHARACTERS.test(key))
      throw new CliError(
        `--key must be a key id as clients send it: 1-${MAX_KEY_CHARS} characters, without a colon, a space or a control character`,
        EXIT.usage,
      );
    unlocks.push({ kind: 'key', key });
  }
  if (username !== undefined) {
    if (!USERNAME.pattern.test(username))
      throw new CliError(`--username must be ${USERNAME.rule}`, EXIT.usage);
    unlocks.push({ kind: 'username', username });
  }
  if (address === undefined) return { unlocks };
  const ip = parseIp(address);
  if (ip === undefined)
    throw new CliError('--address must be one IPv4 or IPv6 address, without a port', EXIT.usage);
  // Counted as the gateway counts it: the network of the address (an IPv6 /64 by default).
  const prefix = ip.family === 'ipv4' ? clientNetworks.ipv4Prefix : clientNetworks.ipv6Prefix;
  unlocks.push({ kind: 'address', network: networkOf(ip, prefix) });
  return { unlocks, address };
}

/**
 * `keys unlock`: lifts the lockout of a key, a username or a client network on Redis and on
 * every running gateway (unlock-lockouts.ts). The memory store's lockout lives in the gateway
 * process that counted it, which no other process reaches.
 */
export async function unlockCommand(
  config: GatewayConfig,
  output: Output,
  options: UnlockOptions,
): Promise<void> {
  const { unlocks, address } = parseUnlockOptions(options, config.server.clientNetworks);
  if (config.credentials.store === 'memory')
    throw new CliError(
      'credentials.store is memory: its lockouts live in the gateway process that counted them, which this command cannot reach; reload that gateway (SIGHUP) or restart it to lift them all, or pass --redis-url',
      EXIT.usage,
    );
  const results = await asCliFailure(() => unlockLockouts(adminRedisConfig(config), unlocks));
  // Each unlock asked is an event, whether or not it found a lock: an operator acted.
  await withStore(config, async ({ store, record }) => {
    for (const { unlock } of results) await record(await unlockChange(store, unlock));
  });
  print(
    output,
    results.map((result) => unlockView(result, address)),
    results.map((result) => unlockLine(result, address)).join('\n'),
  );
}

/**
 * An unlock as the audit trail records it, with the subject of the key or username when the
 * store knows one (the holder then sees it in GET /keys/events); a lookup that fails leaves
 * the subject out rather than the event.
 */
async function unlockChange(store: CredentialStore, unlock: Unlock): Promise<AuditChange> {
  const subjectOf = async (find: () => Promise<{ subject: string } | undefined>) => {
    try {
      return (await find())?.subject;
    } catch {
      return undefined;
    }
  };
  switch (unlock.kind) {
    case 'key': {
      const { key } = unlock;
      // Any id a client sent may be locked; only a key id can name a pair.
      const subject = KEY_ID.pattern.test(key)
        ? await subjectOf(() => store.getKey(key))
        : undefined;
      return { action: 'unlock', subject, key };
    }
    case 'username': {
      const { username } = unlock;
      return {
        action: 'unlock',
        subject: await subjectOf(() => store.getUser(username)),
        username,
      };
    }
    case 'address':
      return { action: 'unlock', network: unlock.network };
  }
}

/**
 * What a result names, for both outputs: its field(s) for --json, its words for the text (an
 * address as asked, beside the network it counts in when they differ).
 */
function named(unlock: Unlock, address: string | undefined) {
  switch (unlock.kind) {
    case 'key':
      return { fields: { key: unlock.key }, text: `key ${unlock.key}` };
    case 'username':
      return { fields: { username: unlock.username }, text: `username ${unlock.username}` };
    case 'address': {
      const asked = address ?? unlock.network;
      const text =
        asked === unlock.network
          ? `address ${asked}`
          : `address ${asked} (network ${unlock.network})`;
      return { fields: { address: asked, network: unlock.network }, text };
    }
  }
}

function unlockLine(
  { unlock, cleared, locked }: UnlockResult,
  address: string | undefined,
): string {
  const counters = `${cleared} counter${cleared === 1 ? '' : 's'}`;
  const { text } = named(unlock, address);
  if (locked > 0) return `${text}: lock lifted (${counters} cleared)`;
  return cleared === 0
    ? `${text}: nothing was locked`
    : `${text}: nothing was locked (failures cleared from ${counters})`;
}

function unlockView({ unlock, cleared, locked }: UnlockResult, address: string | undefined) {
  const { fields } = named(unlock, address);
  return { kind: unlock.kind, ...fields, was_locked: locked > 0, counters_cleared: cleared };
}
